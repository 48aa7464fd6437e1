package reports

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/job"
)

// EmptyMonthError is a month with no usage rows for the basis and
// granularity: no workbook is written (an empty one would look like a
// month that cost nothing). tally report refuses it (exit 2: nothing was
// written), saying what to run; the nightly job says so and goes on.
type EmptyMonthError struct {
	Period Period
	// Loaded: a loaded window covers part of the month at its basis, so
	// the month was fetched and held nothing; else it was never loaded.
	Loaded bool
	// Config is the config's path, for the command to run.
	Config string
	// Needs is the setting that loads Period's basis, when the config
	// does not load it ("usage.reported_date: true").
	Needs string
}

func (e *EmptyMonthError) Error() string {
	m := e.Period.Month.Format("2006-01")
	fetch := fmt.Sprintf("tally fetch --config %s --from %s --to %s", e.Config,
		e.Period.Month.Format(time.DateOnly), e.Period.Month.AddDate(0, 1, 0).Format(time.DateOnly))
	switch {
	case e.Needs != "":
		return fmt.Sprintf("report %s: no usage rows at basis %s, so no workbook was written: this config does not load basis %s, which needs %s; set it, then %s",
			m, e.Period.Basis, e.Period.Basis, e.Needs, fetch)
	case !e.Loaded:
		return fmt.Sprintf("report %s: %s was never loaded (no window of it at basis %s is in the ledger), so no workbook was written; run %s, then report",
			m, m, e.Period.Basis, fetch)
	}
	return fmt.Sprintf("report %s: %s was loaded but holds no usage rows at basis %s and granularity %s (the interface had none), so no workbook was written; check usage.granularity and --basis against tally status",
		m, m, e.Period.Basis, e.Period.Granularity)
}

// Is makes it a refusal: no workbook was written (exit 2).
func (e *EmptyMonthError) Is(target error) bool { return target == job.ErrRefused }

// emptyMonth says why p's month has no rows: never loaded, loaded at
// another basis than the config loads, or loaded and empty.
func emptyMonth(ctx context.Context, cfg *configs.Config, src Source, p Period) error {
	e := &EmptyMonthError{Period: p, Config: cfg.Path}
	if p.Basis != cfg.DefaultBasis() {
		switch p.Basis {
		case tally.BasisReported:
			e.Needs = "usage.reported_date: true"
		case tally.BasisUsage:
			e.Needs = "usage.reported_date: false"
		case tally.BasisEstimated:
			e.Needs = "usage.source: projects"
		}
	}
	q := `SELECT count(*) FROM fetch_windows WHERE basis = ? AND start < ? AND "end" > ?`
	args := []any{string(p.Basis), p.Month.AddDate(0, 1, 0), p.Month}
	if p.Organization != "" {
		q += ` AND organization = ?`
		args = append(args, p.Organization)
	}
	rows, err := src.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read fetch_windows: %w", err)
	}
	defer rows.Close()
	var n int
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return fmt.Errorf("read fetch_windows: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read fetch_windows: %w", err)
	}
	e.Loaded = n > 0
	return e
}

// Report is the one way a month's workbook is written, by tally report and
// by the jobs' report step: from src (the analysts' copy, or the store a
// run holds) to path, at basis ("" is the config's: reported when
// usage.reported_date, else usage), at the finest granularity that serves
// the month (MonthGranularity, warning when it is not the
// config's). A month without rows is an *EmptyMonthError, nothing written.
func Report(ctx context.Context, cfg *configs.Config, src Source, month time.Time, basis tally.Basis, path string, now func() time.Time, log zerolog.Logger) (Period, error) {
	return ReportOrg(ctx, cfg, src, month, basis, "", path, now, log)
}

// ReportOrg is Report narrowed to organization org ("" for every one):
// its rows only, and the budgets of scope organization:org.
func ReportOrg(ctx context.Context, cfg *configs.Config, src Source, month time.Time, basis tally.Basis, org, path string, now func() time.Time, log zerolog.Logger) (Period, error) {
	if now == nil {
		now = time.Now
	}
	if basis == "" {
		basis = cfg.DefaultBasis()
	}
	p := Period{Month: month, Basis: basis, Granularity: cfg.Usage.Granularity, Organization: org}
	label := month.Format("2006-01")
	if org != "" {
		label += " of organization " + org
	}
	g, note, err := MonthGranularity(ctx, src, p, "usage.granularity", now())
	if err != nil {
		return p, fmt.Errorf("report %s: %w", label, err)
	}
	if note != "" {
		log.Warn().Str("month", label).Msg(note)
	}
	p.Granularity = g
	n, err := MonthRows(ctx, src, p)
	if err != nil {
		return p, fmt.Errorf("report %s: %w", label, err)
	}
	if n == 0 {
		return p, emptyMonth(ctx, cfg, src, p)
	}
	if err := refuseFinal(ctx, src, path); err != nil {
		return p, err
	}
	log.Info().Str("month", label).Str("path", path).Msg("writing report")
	opts := OptionsOf(cfg, now)
	if org != "" {
		var own []Budget
		for _, b := range opts.Budgets {
			if b.ScopeKind == "organization" && b.Scope == org {
				own = append(own, b)
			}
		}
		opts.Budgets = own
	}
	if err := WriteFile(ctx, src, p, path, opts); err != nil {
		return p, fmt.Errorf("report %s: %w", label, err)
	}
	log.Info().Str("month", label).Str("path", path).Msg("report written")
	return p, nil
}

// OptionsOf are the workbook options of cfg: tolerance, budgets,
// commitments, the reporting currency and chargeback.
func OptionsOf(cfg *configs.Config, now func() time.Time) Options {
	return Options{Tolerance: cfg.Reports.Tolerance, Now: now, Budgets: BudgetsOf(cfg), Commitments: cfg.CommitmentTerms(),
		ReportingCurrency: cfg.Reports.ReportingCurrency, FXRates: cfg.Reports.FXRates, Allocation: &cfg.Allocation}
}

// Statements writes the chargeback statement of every cost centre of p's
// month (tally report --chargeback) beside the month's workbook, from src
// as Report does. No cost centre configured is a usage error: there is
// nothing to state.
func Statements(ctx context.Context, cfg *configs.Config, src Source, p Period, now func() time.Time, log zerolog.Logger) ([]Statement, error) {
	if cfg.Allocation.Empty() {
		return nil, job.Refuse(errors.New("--chargeback: the config has no allocation.cost_centres, so there is no cost centre to write a statement for; add them (see configs/tally.example.yaml, allocation)"))
	}
	if now == nil {
		now = time.Now
	}
	sts, err := WriteStatements(ctx, src, p, cfg.Reports.Dir, OptionsOf(cfg, now))
	if err != nil {
		return sts, fmt.Errorf("report %s: %w", p.Month.Format("2006-01"), err)
	}
	for _, st := range sts {
		log.Info().Str("month", p.Month.Format("2006-01")).Str("cost_centre", st.CostCentre).Str("path", st.Path).Msg("statement written")
	}
	return sts, nil
}

// BudgetsOf are the config's budgets as the workbook shows them.
func BudgetsOf(cfg *configs.Config) []Budget {
	var out []Budget
	for _, b := range cfg.Budgets {
		out = append(out, Budget{Name: b.Name, ScopeKind: b.ScopeKind, Scope: b.Scope, ScopeText: b.ScopeText(), Currency: b.Currency, Amount: b.Amount})
	}
	return out
}

// refuseFinal refuses to write a workbook over a file only a close may
// write: a name of the final form (tally-cost-YYYY-MM-final….xlsx), or any
// file a close recorded, by path or as the same file. What finance signed
// off is never replaced by a report.
func refuseFinal(ctx context.Context, src Source, path string) error {
	if IsFinalName(filepath.Base(path)) {
		return job.Refuse(fmt.Errorf("--out %s: %s is the name of a closed month's final workbook, which only tally close writes and nothing ever rewrites; write the report under another name", path, filepath.Base(path)))
	}
	rows, err := src.QueryContext(ctx, `SELECT DISTINCT final_workbook FROM month_closes WHERE final_workbook IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("read month_closes: %w", err)
	}
	defer rows.Close()
	abs, _ := filepath.Abs(path)
	fi, statErr := os.Stat(path)
	for rows.Next() {
		var final string
		if err := rows.Scan(&final); err != nil {
			return err
		}
		fabs, _ := filepath.Abs(final)
		same := fabs == abs
		if !same && statErr == nil {
			if ffi, err := os.Stat(final); err == nil {
				same = os.SameFile(fi, ffi)
			}
		}
		if same {
			return job.Refuse(fmt.Errorf("--out %s is the final workbook of a close (%s), which nothing rewrites; write the report under another name", path, final))
		}
	}
	return rows.Err()
}
