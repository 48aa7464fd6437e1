package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/alerts"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// FetchOptions narrow one fetch. Zero values mean: from usage.start, to
// tomorrow (so today's partial data is fetched, and fetched again later), the
// config's granularity.
type FetchOptions struct {
	From, To    time.Time
	Granularity tally.Granularity
	// Refetch fetches every window of [From, To) again, loaded or not
	// (tally fetch --refetch); the run is recorded as command refetch.
	Refetch bool
}

// WindowFailure is one window that failed after every retry.
type WindowFailure struct {
	Window       tally.Window
	Err          error
	Organization string // "" for the api: form
}

// FetchSummary is what one fetch did.
type FetchSummary struct {
	Planned  int
	Loaded   int
	Rows     int64
	Requests int64
	Retries  int64
	Bytes    int64
	Duration time.Duration
	Failed   []WindowFailure
	RefErr   error // reference data that could not be refreshed
	// Warnings are optional reference resources the interface or the token
	// does not offer (403, 404): the run is ok, and records them.
	Warnings  []string
	Published string // the analysts' copy, once the run is recorded
	// Alerts is what the budget and anomaly check after the fetch found.
	Alerts alerts.Check
	// Orgs are the organizations of an organizations: config that could
	// not be fetched at all; the others were.
	Orgs []OrgFailure
	// Projects is set for usage.source projects: Planned and Loaded then
	// count project reports, not windows, and Rows the estimated rows
	// rebuilt.
	Projects bool
	// Lake is set for usage.source lake: Planned and Loaded then count
	// the lake's (organization, month) partitions whose files changed.
	Lake bool
}

// partial is the fetch's failures as a run lists them.
func (sum FetchSummary) partial(other []error) *job.Partial {
	p := &job.Partial{}
	for _, f := range sum.Failed {
		p.Failures = append(p.Failures, job.Failure{Kind: job.KindWindow, Organization: f.Organization, Window: f.Window, Err: f.Err})
	}
	for _, o := range sum.Orgs {
		p.Failures = append(p.Failures, job.Failure{Kind: job.KindOrganization, Organization: o.Name, Err: o.Err})
	}
	if sum.RefErr != nil {
		p.Failures = append(p.Failures, job.Failure{Kind: job.KindReference, Err: sum.RefErr})
	}
	for _, err := range other {
		p.Failures = append(p.Failures, job.Failure{Kind: job.KindStep, Err: err})
	}
	return p
}

// PlanWindows returns the windows a fetch with these options would request
// for the api: form's organization (or the first listed), from the ledger
// in the store (or an empty ledger when st is nil).
func PlanWindows(ctx context.Context, cfg *configs.Config, st *store.Store, opts FetchOptions, now time.Time) ([]tally.PlannedWindow, tally.UsageQuery, error) {
	org := cfg.Orgs()[0]
	if !cfg.Grouped() && st != nil {
		name, err := st.SingleOrganization(ctx)
		if err != nil {
			return nil, tally.UsageQuery{}, err
		}
		org.Name = name
	}
	return planOrgWindows(ctx, cfg, org, st, opts, now)
}

// planOrgWindows is PlanWindows for one organization, org.Name resolved.
func planOrgWindows(ctx context.Context, cfg *configs.Config, org configs.Organization, st *store.Store, opts FetchOptions, now time.Time) ([]tally.PlannedWindow, tally.UsageQuery, error) {
	q := cfg.QueryBase(org)
	opts, err := opts.Resolve(cfg, now)
	if err != nil {
		return nil, q, err
	}
	g, from, to := opts.Granularity, opts.From, opts.To
	var loaded []tally.LoadedWindow
	if st != nil {
		loaded, err = st.Ledger(ctx, q.Organization, g, q.Basis(), q.Scope())
		if err != nil {
			return nil, q, fmt.Errorf("read ledger: %w", err)
		}
	}
	// usage.window is sized for usage.granularity: a fetch at another
	// granularity (--granularity) whose buckets it cannot hold (7d for
	// months) takes the largest windows allowed instead of failing.
	size := cfg.Usage.Window
	if g != cfg.Usage.Granularity && tally.CheckWindowSize(g, size) != nil {
		size = tally.WindowSize{}
	}
	plan, err := tally.Plan(tally.PlanInput{
		From: from, To: to, Granularity: g, Size: size,
		Loaded: loaded, Lookback: cfg.Usage.Lookback, Now: now, Refetch: opts.Refetch,
	})
	if err != nil {
		return nil, q, err
	}
	return plan, q, nil
}

// Fetch plans the due windows, fetches them concurrently (api.concurrency),
// loads each in its own transaction as it completes and refreshes the
// reference snapshots. Windows that fail after all
// retries are listed in a *job.Partial; the rest stay loaded.
func Fetch(ctx context.Context, env *job.Env, runID uuid.UUID, opts FetchOptions) (FetchSummary, error) {
	var sent, retried int64
	if env.Client != nil {
		sent, retried = env.Client.Requests(), env.Client.Retries()
	}
	if env.Config.Usage.Source == tally.SourceLake {
		return fetchLake(ctx, env, runID, opts)
	}
	orgs, err := organizations(ctx, env)
	if err != nil {
		var sum FetchSummary
		if env.Client != nil {
			sum.Requests, sum.Retries = env.Client.Requests()-sent, env.Client.Retries()-retried
		}
		return sum, err
	}
	if env.Config.Usage.Source == tally.SourceProjects {
		return fetchProjects(ctx, env, runID, opts, orgs)
	}
	if env.Config.Grouped() {
		return fetchGroup(ctx, env, runID, opts, orgs)
	}
	sum, err := fetchOrg(ctx, env, runID, opts, orgs[0])
	if err != nil {
		return sum, err
	}
	return finishFetch(ctx, env, sum, nil)
}

// fetchOrg is one organization's fetch: its due windows, loaded as they
// complete (o's client, api.concurrency at once), then its reference
// snapshots. The error is what stopped it as a whole (cancelled, the
// interface unreachable, every window failed); windows that failed after
// their retries are in the summary.
func fetchOrg(ctx context.Context, env *job.Env, runID uuid.UUID, opts FetchOptions, o *orgRun) (FetchSummary, error) {
	start := time.Now()
	var sum FetchSummary
	client := o.Client
	sentBefore, retriedBefore := o.sent, o.retried
	log := o.log(env.Log)
	log.Info().Msg("planning fetch")
	plan, base, err := planOrgWindows(ctx, env.Config, o.Org, env.Store, opts, env.Today())
	if err != nil {
		return sum, err
	}
	if o.ID == "" {
		// The id goes on every row loaded: read the organization first
		// when the store does not know it yet (the reference refresh
		// after the windows reuses what is read here).
		if org, err := o.organization(ctx); err == nil {
			o.ID = org.ID
		}
	}
	base.OrganizationID = o.ID
	sum.Planned = len(plan)
	log.Info().Int("windows", len(plan)).Str("granularity", string(firstGranularity(plan, env.Config))).
		Str("basis", string(base.Basis())).Str("scope", base.Scope()).Msg("fetch planned")

	var (
		mu    sync.Mutex
		done  int
		stats tally.Stats
	)
	jobs := make(chan tally.PlannedWindow)
	var wg sync.WaitGroup
	workers := max(1, min(env.Config.API.Concurrency, len(plan)))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pw := range jobs {
				q := base
				q.Window = pw.Window
				ws := &tally.Stats{}
				q.Stats = ws
				log.Info().Str("window", pw.Window.String()).Str("reason", pw.Reason).Msg("window started")
				res, err := loadWindow(ctx, env, client, log, runID, q)
				stats.Bytes.Add(ws.Bytes.Load())
				mu.Lock()
				done++
				ev := log.Info()
				if err != nil {
					sum.Failed = append(sum.Failed, WindowFailure{Window: pw.Window, Err: err, Organization: o.grouped()})
					ev = log.Error().Err(err)
				} else {
					sum.Loaded++
					sum.Rows += res.Rows
				}
				ev.Str("window", pw.Window.String()).Str("reason", pw.Reason).Int64("rows", res.Rows).
					Int64("requests", ws.Requests.Load()).Int64("retries", ws.Retries.Load()).
					Str("progress", fmt.Sprintf("%d/%d", done, len(plan))).Msg("window")
				mu.Unlock()
			}
		}()
	}
	stopped := false // a stop cut the fetch short
feed:
	for _, pw := range plan {
		if env.Stopping() {
			stopped = true
			break
		}
		select {
		case jobs <- pw:
		case <-ctx.Done():
			break feed
		case <-env.Stop:
			stopped = true
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	sort.Slice(sum.Failed, func(i, j int) bool { return sum.Failed[i].Window.Start.Before(sum.Failed[j].Window.Start) })

	unreachable := unreachableOnly(sum)
	switch {
	case env.Stopping():
		stopped = true
	case unreachable != nil:
		// The interface never answered: reading the references would
		// only retry the same wrong address four more times.
		log.Error().Err(unreachable).Msg("reference data not read: the interface could not be reached")
	case ctx.Err() == nil:
		refStart, refSent := time.Now(), client.Requests()
		if err := readReference(ctx, env, runID, o, log, &sum); err != nil {
			sum.RefErr = err
			log.Error().Err(err).Msg("reference data not refreshed")
		}
		log.Info().Dur("took", time.Since(refStart).Round(time.Millisecond)).Int64("requests", client.Requests()-refSent).
			Msg("reference data read")
	}
	// Every request this fetch sent, references included.
	sum.Requests, sum.Retries, sum.Bytes = client.Requests()-sentBefore, client.Retries()-retriedBefore, stats.Bytes.Load()
	sum.Duration = time.Since(start)
	if err := ctx.Err(); err != nil || stopped {
		if err == nil {
			err = context.Canceled
		}
		return sum, fmt.Errorf("fetch cancelled after %d of %d windows (each window is fully old or fully new; the next run fetches the rest): %w", sum.Loaded, sum.Planned, err)
	}
	if unreachable != nil {
		return sum, unreachable
	}
	if len(sum.Failed) > 0 && sum.Loaded == 0 && sum.Planned > 0 {
		return sum, everyWindowFailed(sum.Failed)
	}
	return sum, nil
}

// everyWindowFailed is a fetch none of whose windows loaded: it failed
// (exit 1), nothing of its usage half-written, and it lists every window
// with its failure, as a partial fetch does. It wraps the first failure.
func everyWindowFailed(failed []WindowFailure) error {
	var rest strings.Builder
	for _, f := range failed[1:] {
		fmt.Fprintf(&rest, "\n  %s (%s): %v", f.Window, f.Window.Granularity, f.Err)
	}
	first := failed[0]
	return fmt.Errorf("every window of the fetch (%d) failed after all retries, so no usage was loaded; each window keeps what it held, and the next run fetches them again:\n  %s (%s): %w%s",
		len(failed), first.Window, first.Window.Granularity, first.Err, rest.String())
}

// finishFetch ends a fetch that loaded what it could: how recent its
// usage now is, and whatever failed after its retries makes it partial.
// The alerts step follows it (fetchThenAlerts).
func finishFetch(ctx context.Context, env *job.Env, sum FetchSummary, other []error) (FetchSummary, error) {
	fresh, err := alerts.Staleness(ctx, env.Store, env.Config, env.Today())
	if err != nil {
		return sum, err
	}
	// Stale data loads without error and the run is ok: the warning is
	// what tells, in runs.warnings, tally status and the log.
	for _, f := range fresh {
		if f.Stale {
			w := "STALE: " + f.Reason(env.Config.Usage.StaleAfter)
			env.Log.Warn().Str("organization", f.Organization).Str("newest_usage_day", f.NewestDay.Format(tally.DateLayout)).Int("age_days", f.AgeDays).Msg(w)
			sum.Warnings = append(sum.Warnings, w)
		}
	}
	env.Emit(fresh)
	if len(sum.Failed) > 0 || sum.RefErr != nil || len(other) > 0 || len(sum.Orgs) > 0 {
		return sum, sum.partial(other)
	}
	return sum, nil
}

// fetchProjects is a fetch of usage.source projects: each organization's
// (fetchOrgProjects), a group's side by side as fetchGroup.
func fetchProjects(ctx context.Context, env *job.Env, runID uuid.UUID, opts FetchOptions, orgs []*orgRun) (FetchSummary, error) {
	if env.Config.Grouped() {
		return fetchGroupWith(ctx, env, runID, opts, orgs, fetchOrgProjects)
	}
	sum, failed, err := fetchOrgProjects(ctx, env, runID, opts, orgs[0])
	if err != nil {
		return sum, err
	}
	return finishFetch(ctx, env, sum, failed)
}

// fetchOrgProjects is one organization's fetch of usage.source projects:
// the reference data first (the estimate is priced from the rate cards and
// payment methods just read), then each of its projects' usage report,
// kept as a snapshot and turned into estimated usage rows. A project whose
// report fails after its retries is in failed, making the run partial; the
// others are kept, and the next run reads it again (its next snapshot
// covers the days in between). Every project failing is the error.
func fetchOrgProjects(ctx context.Context, env *job.Env, runID uuid.UUID, _ FetchOptions, o *orgRun) (FetchSummary, []error, error) {
	start := time.Now()
	sum := FetchSummary{Projects: true}
	log := o.log(env.Log)
	sentBefore, retriedBefore := o.Client.Requests(), o.Client.Retries()
	if err := readReference(ctx, env, runID, o, log, &sum); err != nil {
		var ue *fetch.UnreachableError
		if errors.As(err, &ue) || ctx.Err() != nil {
			return sum, nil, err
		}
		sum.RefErr = err
		log.Error().Err(err).Msg("reference data not refreshed; the estimate uses the rate cards read before")
	}
	var reads []tally.ProjectUsage
	var failed []error
	at := env.Now()
	names := o.Org.ProjectNames
	for i, p := range names {
		if env.Stopping() || ctx.Err() != nil {
			return sum, nil, fmt.Errorf("fetch stopped after %d of %d projects: %w", i, len(names), context.Canceled)
		}
		pu, err := o.Client.ProjectUsage(ctx, p)
		if err != nil {
			if o.group {
				err = fmt.Errorf("organization %s: %w", o.Org.Name, err)
			}
			failed = append(failed, err)
			log.Error().Err(err).Str("project", p).Msg("project usage not read")
			continue
		}
		log.Info().Str("project", p).Int("meters", len(pu.Meters)).Str("period", pu.Start.Format(tally.DateLayout)+".."+pu.End.Format(tally.DateLayout)).
			Str("progress", fmt.Sprintf("%d/%d", i+1, len(names))).Msg("project usage read")
		reads = append(reads, pu)
	}
	sum.Planned = len(names)
	if len(reads) > 0 {
		rows, err := env.Store.SaveProjectUsage(ctx, o.Org.Name, runID, at, reads)
		if err != nil {
			return sum, nil, err
		}
		sum.Loaded, sum.Rows = len(reads), rows
		log.Info().Int("projects", len(reads)).Int64("estimated_rows", rows).Msg("estimated usage rebuilt from the project reports")
	}
	sum.Requests, sum.Retries = o.Client.Requests()-sentBefore, o.Client.Retries()-retriedBefore
	sum.Duration = time.Since(start)
	if len(reads) == 0 && len(failed) > 0 {
		return sum, nil, fmt.Errorf("every project's usage report failed; first: %w", failed[0])
	}
	return sum, failed, nil
}

// unreachableOnly is the error of a fetch that never reached the
// interface (every planned window failed to connect), or nil.
func unreachableOnly(sum FetchSummary) error {
	if sum.Loaded > 0 || len(sum.Failed) == 0 {
		return nil
	}
	var first *fetch.UnreachableError
	for _, f := range sum.Failed {
		var ue *fetch.UnreachableError
		if !errors.As(f.Err, &ue) {
			return nil
		}
		if first == nil {
			first = ue
		}
	}
	return first
}

func firstGranularity(plan []tally.PlannedWindow, cfg *configs.Config) tally.Granularity {
	if len(plan) > 0 {
		return plan[0].Granularity
	}
	return cfg.Usage.Granularity
}

// windowAttempts is how often a window is started before a failure after
// rows (a page that kept failing past its retries, or changed) splits it.
// The client already resumes a cut page on its own; a window fails this way
// only when one page failed every retry, so two such failures out of two is
// "more than half its attempts".
const windowAttempts = 2

// loadWindow streams one window from the interface into the store, in one
// transaction. The client retries each request and resumes a page cut part
// way; a failure after rows were handed on (fetch.StreamError) rolls the
// transaction back and the window starts over, and a window that fails so
// on every attempt is split into two bucket-aligned halves, loaded (and
// recorded in the ledger) each on its own, recursively down to one bucket,
// as a refused range is.
func loadWindow(ctx context.Context, env *job.Env, client *fetch.Client, log zerolog.Logger, runID uuid.UUID, q tally.UsageQuery) (store.LoadResult, error) {
	var last error
	for attempt := 1; attempt <= windowAttempts; attempt++ {
		res, err := env.Store.LoadWindow(ctx, q, runID, client.Usage(ctx, q))
		var se *fetch.StreamError
		if err == nil || ctx.Err() != nil || !errors.As(err, &se) {
			// Not wrapped again: the store's errors already say "load
			// window …" with the window, basis and scope.
			return res, err
		}
		last = err
		log.Warn().Str("window", q.Window.String()).Int("attempt", attempt).Int("max_attempts", windowAttempts).
			Int("rows_rolled_back", se.Rows).Err(err).Msg("window failed after rows were taken: starting it over")
	}
	a, b, ok := q.Window.Split()
	if !ok {
		return store.LoadResult{}, last
	}
	log.Info().Str("window", q.Window.String()).Str("halves", a.String()+" "+b.String()).
		Msg("window failed after rows on every attempt: splitting it in two")
	qa, qb := q, q
	qa.Window, qb.Window = a, b
	ra, errA := loadWindow(ctx, env, client, log, runID, qa)
	if ctx.Err() != nil {
		return ra, errA
	}
	rb, errB := loadWindow(ctx, env, client, log, runID, qb)
	return store.LoadResult{Rows: ra.Rows + rb.Rows, Replaced: ra.Replaced + rb.Replaced, Duration: ra.Duration + rb.Duration}, errors.Join(errA, errB)
}

// readReference reads and snapshots o's reference data (refreshReference)
// for a fetch, logging and keeping in sum the optional resources it went
// without; the error is what could not be refreshed.
func readReference(ctx context.Context, env *job.Env, runID uuid.UUID, o *orgRun, log zerolog.Logger, sum *FetchSummary) error {
	log.Info().Msg("reading reference data")
	warnings, err := refreshReference(ctx, env, runID, o)
	for _, w := range warnings {
		log.Warn().Msg(w)
	}
	sum.Warnings = warnings
	return err
}

// refreshReference snapshots payment methods, their rate cards, projects,
// locations and the organization, reading them concurrently (the rate
// cards up to api.concurrency at once): against a slow interface they are
// a dozen requests that need not wait for one another. A rate card that
// cannot be read does not stop the others; the snapshot keeps what was read
// and the error says what was not, in a fixed order.
//
// The numbers need payment methods, rate cards and projects: one that
// cannot be read makes the run partial. The organization and locations
// only describe: an interface without them (404), or a token not allowed
// to read them (403), is a warning, and the run is ok; any other failure
// of theirs (5xx after every retry) is still partial.
func refreshReference(ctx context.Context, env *job.Env, runID uuid.UUID, o *orgRun) ([]string, error) {
	c := o.Client
	var (
		ref                            = store.Reference{OrgName: o.Org.Name}
		orgErr, pmErr, projErr, locErr error
		wg                             sync.WaitGroup
	)
	wg.Go(func() {
		org, err := o.organization(ctx)
		if err != nil {
			orgErr = fmt.Errorf("organization: %w", err)
			return
		}
		ref.Organization = &org
	})
	wg.Go(func() {
		var err error
		if ref.Projects, err = c.Projects(ctx); err != nil {
			projErr = fmt.Errorf("projects: %w", err)
		}
	})
	wg.Go(func() {
		var err error
		if ref.Locations, err = c.Locations(ctx); err != nil {
			locErr = fmt.Errorf("locations: %w", err)
		}
	})
	pms, err := c.PaymentMethods(ctx)
	if err != nil {
		pmErr = fmt.Errorf("payment methods: %w", err)
	}
	ref.PaymentMethods = pms
	cards := make([]*tally.RateCard, len(pms))
	cardErrs := make([]error, len(pms))
	slots := make(chan struct{}, max(1, env.Config.API.Concurrency))
	var cwg sync.WaitGroup
	for i, pm := range pms {
		cwg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			rc, err := c.RateCard(ctx, pm.ID)
			if err != nil {
				var ae *fetch.APIError
				if errors.As(err, &ae) && ae.Status == 404 {
					return // a method without a rate card is not an error
				}
				cardErrs[i] = fmt.Errorf("rate card of payment method %s: %w", pm.ID, err)
				return
			}
			if rc.PaymentMethodID == "" {
				rc.PaymentMethodID = pm.ID
			}
			cards[i] = &rc
		})
	}
	cwg.Wait()
	wg.Wait()
	for _, rc := range cards {
		if rc != nil {
			ref.RateCards = append(ref.RateCards, *rc)
		}
	}
	var warnings []string
	optional := func(err error) error {
		var ae *fetch.APIError
		if errors.As(err, &ae) && (ae.Status == http.StatusForbidden || ae.Status == http.StatusNotFound) {
			warnings = append(warnings, fmt.Sprintf("%v: optional, so the run goes on without it (the previous snapshot, if any, stays)", err))
			return nil
		}
		return err
	}
	orgErr, locErr = optional(orgErr), optional(locErr)
	errs := append([]error{orgErr, pmErr}, cardErrs...)
	errs = append(errs, projErr, locErr)
	if err := env.Store.SaveSnapshot(ctx, runID, env.Now(), ref); err != nil {
		errs = append(errs, fmt.Errorf("save snapshot: %w", err))
	}
	if ref.Organization != nil && ref.Organization.ID != "" {
		if err := env.Store.NoteOrganization(ctx, o.Org.Name, ref.Organization.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return warnings, errors.Join(errs...)
}
