package closes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	// A close with a chargeback freezes it through the writer package
	// allocation sets (store.FreezeAllocation); every build that closes a
	// month has it.
	_ "github.com/tally-dev/tally/allocation"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/atomicfile"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
	"github.com/tally-dev/tally/store"
)

// This file is long (about 700 lines) because it holds the whole close
// (its checks, records and finals) in the order a close takes them.

// CloseOptions say which month to close or reopen, by whom and why.
type CloseOptions struct {
	Month time.Time // 1st of the month, UTC
	// Org is the organization to close or reopen alone; "" for every
	// organization of the store at once.
	Org    string
	Reason string
	Who    string // the user ($USER) or the job
	Reopen bool
}

// CloseSummary is what a close or reopen did.
type CloseSummary struct {
	Close store.MonthClose
	// Organizations are, for a group's close, each organization's own
	// close recorded with it.
	Organizations []store.MonthClose
	Published     string
	// Republished: the month was closed already, by a run whose analysts'
	// copy was not published; this run published the copy, changing
	// nothing else, and Close is that earlier close.
	Republished bool
}

// RefusedError is a close or reopen that was refused because of what the
// user asked (a month not over, not fully loaded, already closed, a reopen
// without a reason): nothing was changed.
type RefusedError struct {
	Reason string
	// closed is the close found, when the refusal is of a month already
	// closed.
	closed *store.MonthClose
}

func (e *RefusedError) Error() string { return e.Reason }

// Is makes it a refusal: nothing was changed (exit 2).
func (e *RefusedError) Is(target error) bool { return target == job.ErrRefused }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// alreadyClosed refuses a close of a month that c closed.
func alreadyClosed(c *store.MonthClose, format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...), closed: c}
}

// CheckClose refuses, before any lock is taken, what can be refused from
// the request and the clock alone: a reopen with no reason, a month that is
// not over.
func CheckClose(o CloseOptions, now time.Time) error {
	m := o.Month.Format("2006-01")
	if o.Reopen {
		if strings.TrimSpace(o.Reason) == "" {
			return refused("--reason is required with --reopen: say why %s is reopened (it is recorded in month_closes), e.g. --reason \"late credit note from the provider\"", m)
		}
		return nil
	}
	end := o.Month.AddDate(0, 1, 0)
	if now.Before(end) {
		return refused("--month %s is not over: it ends %s UTC and it is %s UTC; a month can be closed from the day after its last day", m, end.Format(time.DateOnly), now.Format("2006-01-02 15:04"))
	}
	return nil
}

// Runner is what a close needs of the runner (schedules.Runner), which a
// capability does not import: "today" (its as-of, else its clock) and one
// recorded run of a step under the writer lock.
type Runner interface {
	Today() time.Time
	RecordStep(ctx context.Context, command string, fn job.Step) (published string, err error)
}

// Close is `tally close`: one recorded run on r that closes (or reopens) a
// month of cfg's store. The run holds the writer lock like a fetch, and
// publishes the analysts' copy after, so closed_month_adjustments there
// shows the close.
func Close(ctx context.Context, r Runner, cfg *configs.Config, o CloseOptions) (CloseSummary, error) {
	var sum CloseSummary
	if err := CheckClose(o, r.Today()); err != nil {
		return sum, err
	}
	// Refused from the analysts' copy when it already says so, so a
	// refusal neither waits for the lock nor leaves a run behind. The
	// copy may lag the store; the same checks run again under the lock.
	if pub, err := store.Open(ctx, store.PublishedPath(cfg.Store.Path), store.ReadOnly(), store.Shared()); err == nil {
		err := checkStore(ctx, pub, cfg, o)
		pub.Close()
		var re *RefusedError
		// A close whose final workbook is still staged is not refused:
		// the run puts it in place (FinishCloses).
		if errors.As(err, &re) && !(re.closed != nil && staged(re.closed)) {
			return sum, err
		}
	}
	published, err := r.RecordStep(ctx, "close", func(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
		var err error
		sum.Close, sum.Organizations, err = closeMonth(ctx, env, runID, o)
		// Closed in the store while the copy says open: a close whose
		// publish failed. Closing it again is what the person sees to
		// do; publishing the copy, which this run does at its end, is
		// what was left undone.
		var re *RefusedError
		if !o.Reopen && errors.As(err, &re) && re.closed != nil {
			env.Log.Warn().Str("month", o.Month.Format("2006-01")).Time("closed_at", re.closed.At).Str("who", re.closed.Who).
				Msg("the month was closed already, but the analysts' copy did not show it (its publish had failed): publishing the copy")
			sum.Close, sum.Republished = *re.closed, true
			return job.Result{}, nil
		}
		return job.Result{}, err
	})
	sum.Published = published
	return sum, err
}

// closeOrgs are the organizations a close of the store covers, as the
// config names them: a group's, or the api: form's one under the name the
// store keeps for it.
func closeOrgs(ctx context.Context, st *store.Store, cfg *configs.Config) ([]configs.Organization, error) {
	orgs := cfg.Orgs()
	if cfg.Grouped() {
		return orgs, nil
	}
	name, err := st.SingleOrganization(ctx)
	if err != nil {
		return nil, err
	}
	one := orgs[0]
	one.Name = name
	return []configs.Organization{one}, nil
}

// checkStore refuses what the store says cannot be done: reopening a month
// that is not closed, closing one already closed (for the organization
// asked, or for any when the whole group is asked), one with a day no
// loaded window covers, or an organization the config does not have. It
// reads only, so it can run on the analysts' copy before the lock is
// taken, and again on the store under the lock.
func checkStore(ctx context.Context, st *store.Store, cfg *configs.Config, o CloseOptions) error {
	orgs, err := checkedOrgs(ctx, st, cfg, o)
	if err != nil {
		return err
	}
	if o.Reopen {
		return checkReopen(ctx, st, cfg, orgs, o)
	}
	if err := checkNotClosed(ctx, st, cfg, orgs, o); err != nil {
		return err
	}
	return checkLoaded(ctx, st, cfg, orgs, o)
}

// checkedOrgs are the organizations a close or reopen covers: the one
// --org names, else every one of the store; --org naming none of the
// config's, or given without organizations:, is refused.
func checkedOrgs(ctx context.Context, st *store.Store, cfg *configs.Config, o CloseOptions) ([]configs.Organization, error) {
	orgs, err := closeOrgs(ctx, st, cfg)
	if err != nil {
		return nil, err
	}
	if o.Org == "" {
		return orgs, nil
	}
	if !cfg.Grouped() {
		return nil, refused("--org %q: this config has no organizations: list (the api: form is one organization, closed without --org); leave --org out", o.Org)
	}
	var names []string
	for _, org := range orgs {
		names = append(names, org.Name)
		if org.Name == o.Org {
			return []configs.Organization{org}, nil
		}
	}
	return nil, refused("--org %q is not an organization of this config: one of %s", o.Org, strings.Join(names, ", "))
}

// forOrg is how a refusal names organization name: not at all when the
// store is closed as one (the api: form without --org).
func forOrg(cfg *configs.Config, o CloseOptions, name string) string {
	if o.Org == "" && !cfg.Grouped() {
		return ""
	}
	return " for organization " + name
}

// checkReopen refuses a reopen of a month no organization of orgs has
// closed.
func checkReopen(ctx context.Context, st *store.Store, cfg *configs.Config, orgs []configs.Organization, o CloseOptions) error {
	basis, g := cfg.UsageQueryBase().Basis(), cfg.Usage.Granularity
	for _, org := range orgs {
		last, err := st.LatestClose(ctx, org.Name, o.Month, basis, g)
		if err != nil {
			return err
		}
		if last != nil && last.Action == store.ActionClose {
			return nil
		}
	}
	what := ""
	if o.Org != "" {
		what = " for organization " + o.Org
	}
	return refused("--month %s is not closed%s (basis %s, granularity %s): there is nothing to reopen", o.Month.Format("2006-01"), what, basis, g)
}

// checkNotClosed refuses a close of a month an organization of orgs has
// closed already (on its own, or with the group).
func checkNotClosed(ctx context.Context, st *store.Store, cfg *configs.Config, orgs []configs.Organization, o CloseOptions) error {
	basis, g := cfg.UsageQueryBase().Basis(), cfg.Usage.Granularity
	group, err := st.LatestClose(ctx, "", o.Month, basis, g)
	if err != nil {
		return err
	}
	for _, org := range orgs {
		last, err := st.LatestClose(ctx, org.Name, o.Month, basis, g)
		if err != nil {
			return err
		}
		if last != nil && last.Action == store.ActionClose {
			return closedAlready(cfg, o, org.Name, last, group)
		}
	}
	return nil
}

// closedAlready is the refusal of a close of a month that last closed for
// organization org (group: the latest close or reopen of every
// organization at once), in the words that say how to close it again.
func closedAlready(cfg *configs.Config, o CloseOptions, org string, last, group *store.MonthClose) error {
	basis, g := cfg.UsageQueryBase().Basis(), cfg.Usage.Granularity
	m := o.Month.Format("2006-01")
	if o.Org == "" && cfg.Grouped() && group != nil && group.Action == store.ActionClose && last.At.Equal(group.At) {
		return alreadyClosed(group, "--month %s is already closed for every organization: closed %s UTC by %s (basis %s, granularity %s); to close it again, reopen it first with tally close --reopen --month %s --reason TEXT",
			m, group.At.Format("2006-01-02 15:04"), group.Who, basis, g, m)
	}
	orgFlag := ""
	if o.Org != "" {
		orgFlag = " --org " + o.Org
	}
	if o.Org == "" && cfg.Grouped() && last.Organization != "" {
		return refused("--month %s is already closed for organization %s: closed %s UTC by %s (basis %s, granularity %s); a group close closes every organization at once: reopen it first with tally close --reopen --month %s --org %s --reason TEXT, or close the others one by one with --org",
			m, last.Organization, last.At.Format("2006-01-02 15:04"), last.Who, basis, g, m, last.Organization)
	}
	return alreadyClosed(last, "--month %s is already closed%s: closed %s UTC by %s (basis %s, granularity %s); to close it again, reopen it first with tally close --reopen --month %s%s --reason TEXT",
		m, forOrg(cfg, o, org), last.At.Format("2006-01-02 15:04"), last.Who, basis, g, m, orgFlag)
}

// checkLoaded refuses a close of a month with a day no loaded window
// covers. A group closes every organization at once, or not at all,
// naming the organization not ready.
func checkLoaded(ctx context.Context, st *store.Store, cfg *configs.Config, orgs []configs.Organization, o CloseOptions) error {
	basis, g := cfg.UsageQueryBase().Basis(), cfg.Usage.Granularity
	m := o.Month.Format("2006-01")
	end := o.Month.AddDate(0, 1, 0)
	for _, org := range orgs {
		q := cfg.QueryBase(org)
		missing, err := st.UncoveredDays(ctx, org.Name, o.Month, end, g, basis, q.Scope())
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return refused("--month %s is not fully loaded%s: %d day(s) have no loaded window at granularity %s, basis %s (first %s, last %s); run tally fetch --from %s --to %s, then close",
				m, forOrg(cfg, o, org.Name), len(missing), g, basis, missing[0].Format(time.DateOnly), missing[len(missing)-1].Format(time.DateOnly),
				missing[0].Format(time.DateOnly), missing[len(missing)-1].AddDate(0, 0, 1).Format(time.DateOnly))
		}
	}
	return nil
}

// closeMonth closes or reopens o.Month for the config's basis and
// granularity, in the store the run holds.
//
// A close must survive a kill at any moment, and the record in
// month_closes is its truth: each final workbook is written to a staged
// file beside its name, the close is recorded with the staged file's
// sha256, and only then is the file renamed into place. A kill before the
// record leaves an unrecorded staged file, which the next close removes;
// a kill after it leaves a recorded close whose file the next close,
// deliver or close step puts in place (FinishCloses). So the month is
// either untouched or closed, and never refused for a file nobody signed.
//
// What is closed: with o.Org, that organization alone (its own final
// workbook, beside its workbook); else every organization of the store at
// once. For a group (organizations:), that is one record per organization,
// each with its figures and its own final workbook, and the group's, with
// the group's final workbook, all in one transaction.
func closeMonth(ctx context.Context, env *job.Env, runID uuid.UUID, o CloseOptions) (store.MonthClose, []store.MonthClose, error) {
	cfg := env.Config
	c := store.MonthClose{ID: runID, Organization: o.Org, Month: o.Month, Basis: cfg.DefaultBasis(), Granularity: cfg.Usage.Granularity, At: env.Now(), Who: o.Who, Reason: o.Reason, Allocation: cfg.Allocation}
	if err := CheckClose(o, c.At); err != nil {
		return c, nil, err
	}
	finished, err := FinishCloses(ctx, env)
	if err != nil {
		return c, nil, err
	}
	if f := finishedClose(finished, c, o); f != nil {
		return *f, nil, nil
	}
	if err := checkStore(ctx, env.Store, cfg, o); err != nil {
		return c, nil, err
	}
	if o.Reopen {
		return reopenMonth(ctx, env, c)
	}
	records, err := closeRecords(ctx, env, c, o)
	if err != nil {
		return c, nil, err
	}
	staged, undo, err := writeFinals(ctx, env, records, o)
	if err != nil {
		return c, nil, err
	}
	if err := env.Store.RecordCloses(ctx, records); err != nil {
		undo()
		return c, nil, err
	}
	notPlaced := placeFinals(env, records, staged)
	var orgs []store.MonthClose
	for _, r := range records[:len(records)-1] {
		orgs = append(orgs, r.Close)
	}
	if len(notPlaced) > 0 {
		return records[len(records)-1].Close, orgs, job.StepErrors(notPlaced...)
	}
	return records[len(records)-1].Close, orgs, nil
}

// finishedClose is, of the closes FinishCloses just finished, the one c
// asks for again: a close a kill cut short after its record, which
// finishing is what the rerun was for; nil for a reopen or none.
func finishedClose(finished []store.MonthClose, c store.MonthClose, o CloseOptions) *store.MonthClose {
	if o.Reopen {
		return nil
	}
	for _, f := range finished {
		if f.Month.Equal(c.Month) && f.Basis == c.Basis && f.Granularity == c.Granularity && f.Organization == c.Organization {
			return &f
		}
	}
	return nil
}

// reopenMonth records the reopen c.
func reopenMonth(ctx context.Context, env *job.Env, c store.MonthClose) (store.MonthClose, []store.MonthClose, error) {
	c.Action = store.ActionReopen
	if err := env.Store.RecordReopen(ctx, c); err != nil {
		return c, nil, err
	}
	l := env.Log.Warn().Str("month", c.Month.Format("2006-01")).Str("who", c.Who).Str("reason", c.Reason)
	if c.Organization != "" {
		l = l.Str("organization", c.Organization)
	}
	l.Msg("month reopened")
	return c, nil, nil
}

// closeRecords are the records of the close c: the organizations' own
// first (a group's close of every organization), the group's (or the one
// asked) last, which is what the run returns.
func closeRecords(ctx context.Context, env *job.Env, c store.MonthClose, o CloseOptions) ([]store.CloseRecord, error) {
	var records []store.CloseRecord
	if o.Org == "" && env.Config.Grouped() {
		orgs, err := closeOrgs(ctx, env.Store, env.Config)
		if err != nil {
			return nil, err
		}
		for _, org := range orgs {
			oc := c
			oc.ID, oc.Organization = store.NewRunID(), org.Name
			records = append(records, store.CloseRecord{Close: oc})
		}
	}
	return append(records, store.CloseRecord{Close: c}), nil
}

// writeFinals writes each record's final workbook to its staged file (and
// its statements), returning the staged files in the records' order and
// undo, which removes every file written; on an error it has undone them.
func writeFinals(ctx context.Context, env *job.Env, records []store.CloseRecord, o CloseOptions) ([]string, func(), error) {
	var staged, written []string
	undo := func() {
		for _, p := range append(staged, written...) {
			os.Remove(p)
		}
	}
	for i := range records {
		r := &records[i]
		st, err := writeFinal(ctx, env, r, o.Org != "" || !env.Config.Grouped() || r.Close.Organization == "")
		if st != "" {
			staged = append(staged, st)
		}
		for _, s := range r.Close.Statements {
			written = append(written, s.Path)
		}
		if err != nil {
			undo()
			return nil, nil, fmt.Errorf("close %s: %w", o.Month.Format("2006-01"), err)
		}
	}
	return staged, undo, nil
}

// placeFinals puts the recorded closes' final workbooks in place and logs
// each close. The close is recorded: a final workbook that cannot be put
// in place leaves it partial (exit 3), not failed, since the month is
// closed whatever the file system says; those are the errors returned.
func placeFinals(env *job.Env, records []store.CloseRecord, staged []string) []error {
	var notPlaced []error
	for i, r := range records {
		if err := placeFinal(env, r.Close, staged[i]); err != nil {
			notPlaced = append(notPlaced, fmt.Errorf("close %s: recorded, but the final workbook %s is not in place yet (the next close, deliver or close step puts it there): %w", r.Close.Month.Format("2006-01"), r.Close.FinalWorkbook, err))
		}
	}
	for _, r := range records {
		l := env.Log.Info().Str("month", r.Close.Month.Format("2006-01")).Str("who", r.Close.Who).Str("content_hash", r.Close.ContentHash).Str("final_workbook", r.Close.FinalWorkbook)
		if r.Close.Organization != "" {
			l = l.Str("organization", r.Close.Organization)
		}
		l.Msg("month closed")
	}
	return notPlaced
}

// writeFinal writes one record's final workbook to its staged file (and,
// with statements, its cost centres' final statements under their final
// names), and fills in the record: its figures, fingerprint, final
// workbook and sha256. It returns the staged file, "" when none was
// written.
func writeFinal(ctx context.Context, env *job.Env, r *store.CloseRecord, statements bool) (string, error) {
	cfg, c := env.Config, &r.Close
	n, err := env.Store.CloseCount(ctx, c.Organization, c.Month, c.Basis, c.Granularity)
	if err != nil {
		return "", err
	}
	final := reports.FinalPath(cfg.Reports.Dir, c.Month, c.Organization, n+1)
	staged := stagedFinal(final, c.ID)
	p := reports.Period{Month: c.Month, Basis: c.Basis, Granularity: c.Granularity, Organization: c.Organization}
	fp, err := reports.MonthFingerprint(ctx, env.Store.DB(), p)
	if err != nil {
		return "", err
	}
	stamp := &reports.CloseStamp{At: c.At, Who: c.Who, Reason: c.Reason, Rows: fp.Rows, ContentHash: fp.ContentHash, Seq: n + 1, FinalWorkbook: final}
	opts := reports.OptionsOf(cfg, env.Today)
	opts.Close = stamp
	// A replay's Budgets sheet is as of the replay's morning.
	src, release, err := env.Store.AsOfSource(ctx, env.AsOf)
	if err != nil {
		return "", err
	}
	err = reports.WriteFile(ctx, src, p, staged, opts)
	release()
	if err != nil {
		return "", err
	}
	sum, err := atomicfile.SHA256(staged)
	if err != nil {
		return staged, err
	}
	c.Action, c.ContentHash, c.FinalWorkbook, c.FinalSHA256 = store.ActionClose, fp.ContentHash, final, sum
	r.Figures = fp.Figures
	// The cost centres' statements are final with the workbook: written
	// under their final names before the close is recorded, with their
	// sha256 in the record. A kill before the record leaves files no
	// close recorded, which the next close rewrites or removes
	// (FinishCloses); after it, they are in place. A group's close writes
	// the group's statements only: the cost centres span organizations.
	if statements {
		if c.Statements, err = finalStatements(ctx, env, p, opts); err != nil {
			return staged, err
		}
	}
	return staged, nil
}

// finalStatements writes the close's statements (none without cost
// centres) and returns them with their sha256.
func finalStatements(ctx context.Context, env *job.Env, p reports.Period, opts reports.Options) ([]store.CloseStatement, error) {
	if env.Config.Allocation.Empty() {
		return nil, nil
	}
	sts, err := reports.WriteStatements(ctx, env.Store.DB(), p, env.Config.Reports.Dir, opts)
	var out []store.CloseStatement
	for _, st := range sts {
		sum, serr := atomicfile.SHA256(st.Path)
		if serr != nil && err == nil {
			err = serr
		}
		out = append(out, store.CloseStatement{CostCentre: st.CostCentre, Owner: st.Owner, Path: st.Path, SHA256: sum})
	}
	if err != nil {
		for _, st := range sts {
			os.Remove(st.Path)
		}
		return nil, err
	}
	return out, nil
}

// stagedFinal is where the close with id writes final before recording
// itself: hidden, beside it, named by the close so a later run knows
// whose it is.
func stagedFinal(final string, id uuid.UUID) string {
	return filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+"."+id.String()+".staged")
}

// staged reports whether c's final workbook is still at its staged name,
// not in place.
func staged(c *store.MonthClose) bool {
	if c.FinalWorkbook == "" {
		return false
	}
	_, err := os.Lstat(stagedFinal(c.FinalWorkbook, c.ID))
	return err == nil
}

// stagedRE matches the staged files of stagedFinal; stagedTempRE the
// temporary file a staged file is written through (atomicfile), which a
// kill during the write leaves.
var (
	stagedRE     = regexp.MustCompile(`^\.tally-cost-\d{4}-\d{2}-final(?:-\d+)?\.xlsx\.[0-9a-f-]{36}\.staged$`)
	stagedTempRE = regexp.MustCompile(`^\.\.tally-cost-\d{4}-\d{2}-final(?:-\d+)?\.xlsx\.[0-9a-f-]{36}\.staged\.[^/]*\.tmp$`)
)

// placeFinal renames a recorded close's staged file onto its final name. A
// file already there has no close of its own (the sequence is new), so it
// is the leftover of a close an older Tally had killed, or someone's copy: it is
// replaced, with a warning, rather than block the close.
func placeFinal(env *job.Env, c store.MonthClose, staged string) error {
	if _, err := os.Lstat(c.FinalWorkbook); err == nil {
		env.Log.Warn().Str("final_workbook", c.FinalWorkbook).Msg("a file no close recorded stood where the final workbook goes; replaced by the recorded final")
	}
	if err := os.Rename(staged, c.FinalWorkbook); err != nil {
		return err
	}
	atomicfile.SyncDir(filepath.Dir(c.FinalWorkbook))
	return nil
}

// FinishCloses makes the files agree with month_closes after a kill: a
// recorded close whose final workbook is not in place gets it from its
// staged file (whose sha256 the record holds), and a staged file no close
// recorded is removed (it holds cost data nobody signed). Every close runs
// it first, and the deliver step before it sends anything. It returns the
// closes it finished. A recorded final that is gone with no staged file is
// logged, not fatal: someone removed a signed-off file, and tally status
// says so.
func FinishCloses(ctx context.Context, env *job.Env) ([]store.MonthClose, error) {
	closes, err := env.Store.Closes(ctx)
	if err != nil {
		return nil, err
	}
	var finished []store.MonthClose
	recorded := map[string]bool{}
	for _, c := range closes {
		if c.FinalWorkbook == "" {
			continue
		}
		staged := stagedFinal(c.FinalWorkbook, c.ID)
		recorded[staged] = true
		done, err := finishClose(env, c, staged)
		if err != nil {
			return finished, err
		}
		if done {
			finished = append(finished, c)
		}
	}
	statements, err := env.Store.CloseStatements(ctx, uuid.Nil)
	if err != nil {
		return finished, err
	}
	for _, st := range statements {
		recorded[st.Path] = true
	}
	removeUnrecorded(env, recorded)
	return finished, nil
}

// finishClose puts the recorded close c's final workbook in place from its
// staged file, when there is one, and reports whether it did.
func finishClose(env *job.Env, c store.MonthClose, staged string) (bool, error) {
	if _, err := os.Lstat(staged); err != nil {
		if _, err := os.Lstat(c.FinalWorkbook); errors.Is(err, os.ErrNotExist) {
			env.Log.Error().Str("month", c.Month.Format("2006-01")).Str("final_workbook", c.FinalWorkbook).Msg("the final workbook of a recorded close is missing; restore it from a delivered copy (its sha256 is in month_closes.final_sha256)")
		}
		return false, nil
	}
	sum, err := atomicfile.SHA256(staged)
	if err != nil {
		return false, err
	}
	if c.FinalSHA256 != "" && sum != c.FinalSHA256 {
		return false, fmt.Errorf("the staged final workbook %s does not match its close (sha256 %s, recorded %s); move it aside and rerun", staged, sum, c.FinalSHA256)
	}
	if err := placeFinal(env, c, staged); err != nil {
		return false, fmt.Errorf("put the final workbook of %s in place: %w", c.Month.Format("2006-01"), err)
	}
	env.Log.Warn().Str("month", c.Month.Format("2006-01")).Str("who", c.Who).Str("final_workbook", c.FinalWorkbook).Msg("finished a close a kill had cut short: the final workbook is now in place")
	return true, nil
}

// removeUnrecorded removes, from each month's folder and its
// organizations' folders in it, the staged final workbooks and final
// statements no close recorded (recorded: the paths closes name), and
// the temporary files a staged file is written through. The writer lock is
// held: no other close is writing these.
func removeUnrecorded(env *job.Env, recorded map[string]bool) {
	dirs, _ := filepath.Glob(filepath.Join(env.Config.Reports.Dir, "*"))
	orgDirs, _ := filepath.Glob(filepath.Join(env.Config.Reports.Dir, "*", "*"))
	for _, d := range append(dirs, orgDirs...) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			if (stagedRE.MatchString(e.Name()) && !recorded[p]) || stagedTempRE.MatchString(e.Name()) {
				if err := os.Remove(p); err == nil {
					env.Log.Warn().Str("file", p).Msg("removed the staged final workbook of a close a kill cut short before it was recorded")
				}
			}
			if reports.FinalStatementRE.MatchString(e.Name()) && !recorded[p] {
				if err := os.Remove(p); err == nil {
					env.Log.Warn().Str("file", p).Msg("removed a final statement no close recorded (a close a kill cut short wrote it)")
				}
			}
		}
	}
}

// closeStep closes the previous month once reports.close_after has passed
// since its end. A month already closed, or closed and reopened since (a
// reopen is a person's decision), is left alone; one that is not fully
// loaded fails the step, saying why.
func closeStep(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
	cfg := env.Config
	if cfg.Reports.CloseAfter <= 0 {
		env.Log.Info().Msg("close step: reports.close_after is not set; no month is closed")
		return job.Result{}, nil
	}
	now := env.Today()
	month := tally.Month.Truncate(now).AddDate(0, -1, 0)
	m := month.Format("2006-01")
	if due := month.AddDate(0, 1, 0).Add(cfg.Reports.CloseAfter); now.Before(due) {
		env.Log.Info().Str("month", m).Time("due", due).Msg("close step: not due yet")
		return job.Result{}, nil
	}
	last, err := env.Store.LatestClose(ctx, "", month, cfg.DefaultBasis(), cfg.Usage.Granularity)
	if err != nil {
		return job.Result{}, err
	}
	if last == nil && cfg.Grouped() {
		// An organization closed or reopened on its own is a person's
		// decision too: the group's month is then theirs to close.
		orgs, err := closeOrgs(ctx, env.Store, cfg)
		if err != nil {
			return job.Result{}, err
		}
		for _, org := range orgs {
			if last, err = env.Store.LatestClose(ctx, org.Name, month, cfg.DefaultBasis(), cfg.Usage.Granularity); err != nil {
				return job.Result{}, err
			}
			if last != nil {
				break
			}
		}
	}
	if last != nil {
		what := "closed"
		if last.Action == store.ActionReopen {
			what = "reopened (a person's decision: it stays open until they close it)"
		}
		if last.Organization != "" {
			what += " for organization " + last.Organization
		}
		env.Log.Info().Str("month", m).Str("action", last.Action).Str("who", last.Who).Time("at", last.At).
			Msgf("close step: %s already %s by %s at %s UTC; left as it is", m, what, last.Who, last.At.Format("2006-01-02 15:04"))
		if _, err := FinishCloses(ctx, env); err != nil {
			return job.Result{}, err
		}
		return job.Result{}, nil
	}
	c, orgs, err := closeMonth(ctx, env, runID, CloseOptions{Month: month, Who: job.Name(ctx), Reason: fmt.Sprintf("reports.close_after %s passed", cfg.Reports.CloseAfter)})
	if err != nil && !errors.As(err, new(*job.Partial)) {
		return job.Result{}, fmt.Errorf("close %s: %w", m, err)
	}
	out := []string{c.FinalWorkbook}
	for _, oc := range orgs {
		out = append(out, oc.FinalWorkbook)
	}
	return job.Result{Outputs: out}, err
}

func init() { job.Register("close", closeStep) }
