package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
)

// SetAllocation replaces, in one transaction, the allocation open months
// are charged back by (the rows of allocation_cost_centres and
// allocation_rules whose close_id is NULL) with a: every run that writes
// calls it with its config's, so the analysts' views follow the config.
// The rows closes froze are left as they are.
func (s *Store) SetAllocation(ctx context.Context, a tally.Allocation) error {
	return s.inTx(ctx, func(conn *sql.Conn) error {
		for _, t := range []string{"allocation_cost_centres", "allocation_rules"} {
			if _, err := conn.ExecContext(ctx, `DELETE FROM `+t+` WHERE close_id IS NULL`); err != nil {
				return fmt.Errorf("replace %s: %w", t, err)
			}
		}
		return insertAllocation(ctx, conn, nil, a)
	})
}

// insertAllocation writes a's cost centres and rules under closeID (nil:
// the open months' allocation).
func insertAllocation(ctx context.Context, conn *sql.Conn, closeID *uuid.UUID, a tally.Allocation) error {
	var id any
	if closeID != nil {
		id = *closeID
	}
	for i, c := range a.CostCentres {
		projects := []any{nil}
		for _, p := range c.Projects {
			if projects[0] == nil {
				projects = projects[:0]
			}
			projects = append(projects, p)
		}
		for _, p := range projects {
			if _, err := conn.ExecContext(ctx, `INSERT INTO allocation_cost_centres (close_id, position, cost_centre, owner, project) VALUES (?, ?, ?, ?, ?)`,
				id, i, c.Name, textOrNull(c.Owner), p); err != nil {
				return fmt.Errorf("record cost centre %s: %w", c.Name, err)
			}
		}
	}
	for i, r := range a.Rules {
		for j, to := range r.Receivers {
			var percent any
			if j < len(r.Percent) {
				percent = r.Percent[j].String()
			}
			if _, err := conn.ExecContext(ctx, `INSERT INTO allocation_rules
(close_id, rule, version, priority, from_month, projects, meters, families, payment_method, method, driver_meter, receiver, percent)
VALUES (?, ?, ?, ?, ?, from_json(?, '["VARCHAR"]'), from_json(?, '["VARCHAR"]'), from_json(?, '["VARCHAR"]'), ?, ?, ?, ?, CAST(? AS DECIMAL(9, 6)))`,
				id, r.Name, r.Version(), i, r.From, jsonList(r.Projects), jsonList(r.Meters), jsonList(r.Families),
				textOrNull(r.PaymentMethod), r.Method, textOrNull(r.Driver), to, percent); err != nil {
				return fmt.Errorf("record allocation rule %s: %w", r.Version(), err)
			}
		}
	}
	return nil
}

// jsonList is a selector list as JSON for from_json, or NULL (any) when
// empty.
func jsonList(v []string) any {
	if len(v) == 0 {
		return nil
	}
	b, _ := json.Marshal(v)
	return string(b)
}
