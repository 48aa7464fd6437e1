package reports

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/job"
	tallysql "github.com/tally-dev/tally/sql"
)

// MonthlyGranularities are the granularities whose buckets never cross a
// month boundary, the only ones a month's workbook, close or export reads:
// a week or year bucket would land whole in the month of its start date.
var MonthlyGranularities = []tally.Granularity{tally.Hour, tally.Day, tally.Month}

// ServesMonths reports whether rows of granularity g can be summed into
// calendar months: hour, day and month can; week and year cannot.
func ServesMonths(g tally.Granularity) bool { return slices.Contains(MonthlyGranularities, g) }

// GranularityError is a month asked for at a granularity that cannot serve
// it (week or year) when no hour, day or month data covering the month is
// loaded, or a monthly output (Month zero: the FOCUS export, whose billing
// periods are months) configured at week or year. It is a usage error: the
// user should fetch a granularity that serves months.
type GranularityError struct {
	Field       string            // the setting that chose the granularity, e.g. usage.granularity
	Granularity tally.Granularity // the value asked for
	Month       time.Time         // zero: not one month (Output says what)
	Basis       tally.Basis
	Output      string // what was refused when Month is zero, e.g. "the FOCUS export"
}

func (e *GranularityError) Error() string {
	if e.Month.IsZero() {
		return fmt.Sprintf("%s %q cannot serve %s: %s buckets cross month boundaries; allowed: hour, day, month. Set %s to one of them and fetch it (tally fetch --granularity day)",
			e.Field, e.Granularity, e.Output, e.Granularity, e.Field)
	}
	return fmt.Sprintf("%s %q cannot serve the monthly report for %s: %s buckets cross month boundaries, so a month needs hour, day or month rows, "+
		"and no loaded hour, day or month windows of basis %s cover the month; fetch one (tally fetch --granularity day --from %s --to %s) or set %s to hour, day or month",
		e.Field, e.Granularity, e.Month.Format(monthLayout), e.Granularity, e.Basis,
		e.Month.Format("2006-01-02"), e.Month.AddDate(0, 1, 0).Format("2006-01-02"), e.Field)
}

// Is makes it a refusal: nothing was written (exit 2).
func (e *GranularityError) Is(target error) bool { return target == job.ErrRefused }

// MonthGranularity returns the granularity a month's workbook reads for p.
// Hour, day and month serve months and are returned as they are. For week
// or year it returns the finest of hour, day and month whose loaded windows
// of p's basis cover the whole month (up to today for the month to date),
// with a note saying so; with none, a *GranularityError naming field.
func MonthGranularity(ctx context.Context, db Source, p Period, field string, now time.Time) (tally.Granularity, string, error) {
	if ServesMonths(p.Granularity) {
		return p.Granularity, "", nil
	}
	if !p.Granularity.Valid() {
		return "", "", fmt.Errorf("%s %q is not one of hour, day, week, month, year", field, p.Granularity)
	}
	text, err := fs.ReadFile(tallysql.Reports, "reports/month_coverage.sql")
	if err != nil {
		return "", "", err
	}
	coverEnd := p.end()
	if tomorrow := tally.Day.Truncate(now).AddDate(0, 0, 1); tomorrow.Before(coverEnd) {
		coverEnd = tomorrow
	}
	rows, err := db.QueryContext(ctx, string(text),
		sql.Named("basis", string(p.Basis)),
		sql.Named("month_start", p.Month),
		sql.Named("cover_end", coverEnd),
		sql.Named("org", orgArg(p.Organization)))
	if err != nil {
		return "", "", fmt.Errorf("month coverage: %w", err)
	}
	defer rows.Close()
	covered := map[tally.Granularity]bool{}
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return "", "", fmt.Errorf("month coverage: %w", err)
		}
		covered[tally.Granularity(g)] = true
	}
	if err := rows.Err(); err != nil {
		return "", "", fmt.Errorf("month coverage: %w", err)
	}
	for _, g := range MonthlyGranularities {
		if covered[g] {
			note := fmt.Sprintf("%s %q cannot serve a monthly report (%s buckets cross month boundaries); %s is reported from %s rows, the finest loaded granularity covering the month",
				field, p.Granularity, p.Granularity, p.Month.Format(monthLayout), g)
			return g, note, nil
		}
	}
	return "", "", &GranularityError{Field: field, Granularity: p.Granularity, Month: p.Month, Basis: p.Basis}
}

// orgArg is $org: the organization, NULL for every one.
func orgArg(org string) any {
	if org == "" {
		return nil
	}
	return org
}
