package reports

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/job"
)

func init() { job.Register("report", Step(nil, nil)) }

// Step is the report step: it writes the workbooks of months (nil: the
// config's reports.months), as `tally run` does, lists them as the run's
// outputs and, with written, hands them to the caller (`tally run` prints
// them).
func Step(months []string, written *[]Written) job.Step {
	return func(ctx context.Context, env *job.Env, _ uuid.UUID) (job.Result, error) {
		w, err := WriteMonths(ctx, env, months)
		if written != nil {
			*written = w
		}
		var res job.Result
		for _, x := range w {
			res.Outputs = append(res.Outputs, x.Path)
		}
		return res, err
	}
}

// ResolveMonths resolves reports.months ("previous", "current" or YYYY-MM)
// against today: the previous month is final, the current one month to date.
func ResolveMonths(names []string, now time.Time) ([]time.Time, error) {
	this := tally.Month.Truncate(now)
	var out []time.Time
	for _, n := range names {
		switch n {
		case "previous":
			out = append(out, this.AddDate(0, -1, 0))
		case "current":
			out = append(out, this)
		default:
			m, err := ParseMonth(n)
			if err != nil {
				return nil, fmt.Errorf("reports.months: %w", err)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// Written is one workbook a run wrote.
type Written struct {
	Month time.Time
	Path  string
	// Organization is whose workbook it is, "" for the store's (with
	// organizations:, the group's).
	Organization string
}

// WriteMonths writes one workbook per month of months (nil: the config's
// reports.months) from the store the run holds.
func WriteMonths(ctx context.Context, env *job.Env, months []string) ([]Written, error) {
	cfg := env.Config
	if months == nil {
		months = cfg.Reports.Months
	}
	ms, err := ResolveMonths(months, env.Today())
	if err != nil {
		return nil, err
	}
	// A replay's Budgets sheets are as of the replay's morning.
	src, release, err := env.Store.AsOfSource(ctx, env.AsOf)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []Written
	for _, m := range ms {
		path := DefaultPath(cfg.Reports.Dir, m)
		_, err := Report(ctx, cfg, src, m, "", path, env.Today, env.Log)
		var empty *EmptyMonthError
		if errors.As(err, &empty) {
			// A new deployment's first days, the 1st before any usage:
			// said, not a failure.
			env.Log.Warn().Str("month", m.Format("2006-01")).Str("basis", string(empty.Period.Basis)).
				Str("granularity", string(empty.Period.Granularity)).Msg("no usage rows for this month: no workbook written")
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, Written{Month: m, Path: path})
		if !cfg.Grouped() {
			continue
		}
		// And each organization's own workbook, beside the group's.
		for _, org := range cfg.Organizations {
			path := OrgPath(cfg.Reports.Dir, m, org.Name)
			_, err := ReportOrg(ctx, cfg, src, m, "", org.Name, path, env.Today, env.Log)
			if errors.As(err, &empty) {
				continue
			}
			if err != nil {
				return out, err
			}
			out = append(out, Written{Month: m, Path: path, Organization: org.Name})
		}
	}
	return out, nil
}
