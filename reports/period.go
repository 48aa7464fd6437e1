package reports

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/tally-dev/tally"
)

// monthLayout is the form of a report month on the command line and in file
// names.
const monthLayout = "2006-01"

// Period says which usage rows a workbook covers.
type Period struct {
	Month       time.Time         // 1st of the month, 00:00 UTC
	Basis       tally.Basis       // usage: filter on date; reported: on date_processed
	Granularity tally.Granularity // which usage rows: hour, day or month (see MonthGranularity)
	// Organization narrows the workbook to one organization
	// (organizations.name, tally report --org); "" is every organization
	// the store holds.
	Organization string
}

// ParseMonth parses a YYYY-MM month as the 1st of that month, UTC.
func ParseMonth(s string) (time.Time, error) {
	t, err := time.Parse(monthLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("month %q is not a YYYY-MM calendar month", s)
	}
	return t, nil
}

// DefaultPath is where a month's workbook goes under a reports folder:
// dir/YYYY-MM/tally-cost-YYYY-MM.xlsx.
func DefaultPath(dir string, month time.Time) string {
	m := month.UTC().Format(monthLayout)
	return filepath.Join(dir, m, "tally-cost-"+m+".xlsx")
}

// OrgPath is where organization org's own workbook of month goes under a
// reports folder: a folder of its own beside the group's workbook, so no
// organization's name can pass for another file's.
func OrgPath(dir string, month time.Time, org string) string {
	m := month.UTC().Format(monthLayout)
	return filepath.Join(dir, m, org, "tally-cost-"+m+".xlsx")
}

func (p Period) validate() error {
	m := p.Month
	if m.IsZero() || !m.Equal(tally.Month.Truncate(m)) {
		return fmt.Errorf("period month %s is not the 1st of a month at 00:00 UTC", m.Format(time.RFC3339))
	}
	if p.Basis != tally.BasisUsage && p.Basis != tally.BasisReported && p.Basis != tally.BasisEstimated {
		return fmt.Errorf("period basis %q is not one of usage, reported, estimated", p.Basis)
	}
	if !p.Granularity.Valid() {
		return fmt.Errorf("period granularity %q is not one of hour, day, week, month, year", p.Granularity)
	}
	if !ServesMonths(p.Granularity) {
		return fmt.Errorf("period granularity %q cannot serve a month: its buckets cross month boundaries; allowed: hour, day, month (MonthGranularity picks one)", p.Granularity)
	}
	return nil
}

// end is the first instant after the month.
func (p Period) end() time.Time { return p.Month.AddDate(0, 1, 0) }

// closed reports whether the month is over on now's (UTC) date: its last day
// is before today. A month that is not closed is month to date.
func (p Period) closed(now time.Time) bool {
	today := tally.Day.Truncate(now)
	return !today.Before(p.end())
}
