package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Organization is one organization the store holds (the organizations
// table): Tally's name for it and its id in the interface, "" until read.
type Organization struct {
	Name, ID string
}

// Organizations lists the organizations the store holds, by name.
func (s *Store) Organizations(ctx context.Context) ([]Organization, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, coalesce(id, '') FROM organizations ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("read organizations: %w", err)
	}
	defer rows.Close()
	var out []Organization
	for rows.Next() {
		var o Organization
		if err := rows.Scan(&o.Name, &o.ID); err != nil {
			return nil, fmt.Errorf("read organizations: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// SingleOrganization is the name of the api: form's organization in s: the
// one organization it holds, "" when it holds none yet. A fetch, a plan
// and a close of the api: form all name it so.
func (s *Store) SingleOrganization(ctx context.Context) (string, error) {
	orgs, err := s.Organizations(ctx)
	if err != nil {
		return "", err
	}
	return SingleOrgName(orgs)
}

// SingleOrgName is the api: form's organization among those a store
// holds: the one, "" when none yet.
func SingleOrgName(orgs []Organization) (string, error) {
	switch len(orgs) {
	case 0:
		return "", nil
	case 1:
		return orgs[0].Name, nil
	}
	names := make([]string, len(orgs))
	for i, o := range orgs {
		names[i] = o.Name
	}
	return "", fmt.Errorf("this store holds several organizations (%s), but the config has the api: form, one organization: list them under organizations:, each with its token", strings.Join(names, ", "))
}

// NoteOrganization records that the store holds organization name, with
// its id when known ("" keeps the id recorded before).
func (s *Store) NoteOrganization(ctx context.Context, name, id string) error {
	if err := s.writable("record organization " + name); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO organizations (name, id, first_seen) VALUES (?, nullif(?, ''), ?)
ON CONFLICT (name) DO UPDATE SET id = coalesce(excluded.id, organizations.id)`, name, id, time.Now().UTC())
	if err != nil {
		return fmt.Errorf("record organization %s: %w", name, err)
	}
	return nil
}
