package schedules

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// OrgFailure is an organization that could not be fetched at all in a run.
type OrgFailure struct {
	Name string
	Err  error
}

// orgRun is one organization during a fetch: its name resolved, its id as
// far as known, and the organization resource once read, so the run reads
// it once.
type orgRun struct {
	Org    configs.Organization // Name resolved, also for the api: form
	ID     string               // the interface's organizationId; "" until read
	Client *fetch.Client
	Err    error // not fetched this run (see OrgEnv.Err)
	group  bool  // of an organizations: config

	read    *tally.Organization // the organization resource, once read
	readErr error
	// sent and retried are the client's counts when the fetch began, so
	// its summary counts every request, the organization's first read
	// included.
	sent, retried int64
}

func (o *orgRun) grouped() string {
	if o.group {
		return o.Org.Name
	}
	return ""
}

func (o *orgRun) log(l zerolog.Logger) zerolog.Logger {
	if o.group {
		return l.With().Str("organization", o.Org.Name).Logger()
	}
	return l
}

// organization reads the organization resource, once per run.
func (o *orgRun) organization(ctx context.Context) (tally.Organization, error) {
	if o.read == nil && o.readErr == nil {
		org, err := o.Client.Organization(ctx)
		if err != nil {
			o.readErr = err
		} else {
			o.read = &org
		}
	}
	if o.readErr != nil {
		return tally.Organization{}, o.readErr
	}
	return *o.read, nil
}

// storedOrgName is the name of the api: form's organization in st: the one
// organization it holds, "" when it holds none yet.
func storedOrgName(ctx context.Context, st *store.Store) (string, error) {
	orgs, err := st.Organizations(ctx)
	if err != nil {
		return "", err
	}
	return singleOrgName(orgs)
}

// singleOrgName is the api: form's organization among those a store
// holds: the one, "" when none yet.
func singleOrgName(orgs []store.Organization) (string, error) {
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

// organizations resolves the organizations a fetch reads. The api: form's
// is named by the store, or, the first time, by the organization resource
// (read then, and kept for the snapshot); an organization the interface
// does not describe (403, 404) is store.DefaultOrganization. Each is
// recorded in the store's organizations with its id when known.
func organizations(ctx context.Context, e *job.Env) ([]*orgRun, error) {
	known, err := e.Store.Organizations(ctx)
	if err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, k := range known {
		ids[k.Name] = k.ID
	}
	if !e.Config.Grouped() {
		if e.Client == nil {
			return nil, errors.New("no API token was read for this run, which fetches: set the variable api.token_env names, or api.token_file")
		}
		o := &orgRun{Org: e.Config.Orgs()[0], Client: e.Client, sent: e.Client.Requests(), retried: e.Client.Retries()}
		name, err := singleOrgName(known)
		if err != nil {
			return nil, err
		}
		if name == "" {
			org, err := o.organization(ctx)
			var ae *fetch.APIError
			switch {
			case err == nil && strings.TrimSpace(org.Name) != "":
				name, o.ID = strings.TrimSpace(org.Name), org.ID
			case err == nil || (errors.As(err, &ae) && (ae.Status == http.StatusForbidden || ae.Status == http.StatusNotFound)):
				// The interface does not name it to this token, and
				// never will: the store names it default, for good.
				name, o.ID = store.DefaultOrganization, org.ID
			case errors.As(err, new(*fetch.UnreachableError)):
				return nil, err // as a window would fail: naming the address
			default:
				// An outage is no reason to name it for good: the
				// first fetch waits for the name, like the rest.
				return nil, fmt.Errorf("the first fetch names the store's organization from the interface, which did not answer: read the organization: %w", err)
			}
			if err := e.Store.NoteOrganization(ctx, name, o.ID); err != nil {
				return nil, err
			}
		}
		o.Org.Name = name
		if o.ID == "" {
			o.ID = ids[name]
		}
		return []*orgRun{o}, nil
	}
	out := make([]*orgRun, len(e.Orgs))
	for i, oe := range e.Orgs {
		out[i] = &orgRun{Org: oe.Org, Client: oe.Client, Err: oe.Err, group: true, ID: ids[oe.Org.Name]}
		if oe.Client != nil {
			out[i].sent, out[i].retried = oe.Client.Requests(), oe.Client.Retries()
		}
		if oe.Err == nil {
			if err := e.Store.NoteOrganization(ctx, oe.Org.Name, ""); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// fetchGroup fetches every organization of an organizations: config,
// api.total_concurrency / api.concurrency organizations at once, each with
// up to api.concurrency windows in flight (the interface's rate limits are
// per organization). One organization's failure (its token, a refusal, an
// outage) is recorded and the others go on: the run is partial, naming it;
// every organization failing fails the run.
func fetchGroup(ctx context.Context, env *job.Env, runID uuid.UUID, opts FetchOptions, orgs []*orgRun) (FetchSummary, error) {
	return fetchGroupWith(ctx, env, runID, opts, orgs, func(ctx context.Context, env *job.Env, runID uuid.UUID, opts FetchOptions, o *orgRun) (FetchSummary, []error, error) {
		sum, err := fetchOrg(ctx, env, runID, opts, o)
		return sum, nil, err
	})
}

// fetchGroupWith fetches each organization with fetchOne, as fetchGroup
// says; what fetchOne reports beside the summary (a project not read)
// makes the run partial.
func fetchGroupWith(ctx context.Context, env *job.Env, runID uuid.UUID, opts FetchOptions, orgs []*orgRun,
	fetchOne func(context.Context, *job.Env, uuid.UUID, FetchOptions, *orgRun) (FetchSummary, []error, error)) (FetchSummary, error) {
	start := time.Now()
	var other []error
	var (
		mu    sync.Mutex
		total = FetchSummary{Projects: env.Config.Usage.Source == tally.SourceProjects}
		fails = make([]error, len(orgs))
		done  int
		wg    sync.WaitGroup
	)
	parallel := max(1, env.Config.API.TotalConcurrency/max(1, env.Config.API.Concurrency))
	slots := make(chan struct{}, parallel)
	env.Log.Info().Int("organizations", len(orgs)).Int("at_once", parallel).Msg("fetching organizations")
	for i, o := range orgs {
		if o.Err != nil {
			fails[i] = o.Err
			env.Log.Error().Str("organization", o.Org.Name).Err(o.Err).Msg("organization not fetched")
			continue
		}
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				fails[i] = ctx.Err()
				return
			}
			defer func() { <-slots }()
			if env.Stopping() || ctx.Err() != nil {
				fails[i] = context.Canceled
				return
			}
			sum, failed, err := fetchOne(ctx, env, runID, opts, o)
			mu.Lock()
			defer mu.Unlock()
			done++
			other = append(other, failed...)
			total.Planned += sum.Planned
			total.Loaded += sum.Loaded
			total.Rows += sum.Rows
			total.Requests += sum.Requests
			total.Retries += sum.Retries
			total.Bytes += sum.Bytes
			total.Failed = append(total.Failed, sum.Failed...)
			for _, w := range sum.Warnings {
				total.Warnings = append(total.Warnings, "organization "+o.Org.Name+": "+w)
			}
			if sum.RefErr != nil {
				total.RefErr = errors.Join(total.RefErr, fmt.Errorf("organization %s: %w", o.Org.Name, sum.RefErr))
			}
			fails[i] = err
			ev := env.Log.Info()
			if err != nil {
				ev = env.Log.Error().Err(err)
			}
			ev.Str("organization", o.Org.Name).Int("windows", sum.Loaded).Int64("rows", sum.Rows).
				Str("progress", fmt.Sprintf("%d/%d", done, len(orgs))).Msg("organization fetched")
		})
	}
	wg.Wait()
	total.Duration = time.Since(start)
	if err := ctx.Err(); err != nil || env.Stopping() {
		if err == nil {
			err = context.Canceled
		}
		return total, fmt.Errorf("fetch cancelled after %d of %d windows (each window is fully old or fully new; the next run fetches the rest): %w", total.Loaded, total.Planned, err)
	}
	var failed []string
	for i, err := range fails {
		if err != nil {
			total.Orgs = append(total.Orgs, OrgFailure{Name: orgs[i].Org.Name, Err: err})
			failed = append(failed, fmt.Sprintf("%s: %v", orgs[i].Org.Name, err))
		}
	}
	if len(total.Orgs) == len(orgs) {
		return total, fmt.Errorf("every organization failed:\n  %s", strings.Join(failed, "\n  "))
	}
	return finishFetch(ctx, env, total, other)
}
