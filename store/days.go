package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	tallysql "github.com/tally-dev/tally/sql"
)

// Querier runs read queries: *sql.DB, *sql.Conn and *sql.Tx satisfy it,
// as does the workbook's reports.Source.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// ScanOne runs query for its one row and scans it into dest: the query
// helper store and the capabilities share for a single value.
func ScanOne(ctx context.Context, q Querier, query string, args []any, dest ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}

// Baseline is how many days before a day its forecast and anomaly
// baselines read (forecast_days, anomalies).
const Baseline = 28

// DaysWhere is the condition, for tallysql.InlineWhere, that keeps the
// usage rows of the days DayRange returns ($days_from, $days_to): on the
// usage table's own date, which DuckDB takes to the table's scan (its
// zone maps skip the other days), so usage_day_cost and the views on it
// read those days only. Every view the budget, forecast and anomaly
// figures read reaches usage through usage_day_cost, on basis usage,
// whose day is date's.
var DaysWhere = map[string]string{"usage": "date >= CAST($days_from AS TIMESTAMP) AND date < CAST($days_to AS TIMESTAMP)"}

// DayRange returns the days [lo, hi) that figures about the days [from,
// to) need from usage_day_cost: those days, the Baseline days before them,
// and the data's latest days, whose last complete day (as_of) decides
// which days are actual and which forecast, and whose 28 days the forecast
// learns from. Read under DaysWhere with these bounds, forecast_days,
// forecasts and anomalies give for [from, to) exactly what they give when
// every day is read, and read about the days asked for rather than the
// history kept.
//
// On a replay's connection (AsOfConn) the latest day is at most the day
// before the replay's: the forecasts learn from the 28 days before it.
//
// It reads this Tally's coverage rule (the macro usage_coverage_of, which
// every connection defines) and usage_day_cost inlined (DaysRead), so it
// works on an analysts' copy an older Tally published. Finding the latest day reads the last
// weeks the ledger covers, not the history.
func DayRange(ctx context.Context, q Querier, from, to time.Time) (lo, hi time.Time, err error) {
	r, err := ReadDays(ctx, q, false)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("find the latest day of usage: %w", err)
	}
	return dayRange(ctx, q, r, from, to)
}

// dayRange is DayRange with usage_day_cost read as r says.
func dayRange(ctx context.Context, q Querier, r DaysRead, from, to time.Time) (lo, hi time.Time, err error) {
	from, to = from.UTC(), to.UTC()
	latest, err := latestUsageDay(ctx, q, r)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("find the latest day of usage: %w", err)
	}
	replay, err := asOfCap(ctx, q)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("read the replay day: %w", err)
	}
	if !replay.IsZero() && !latest.Before(replay) {
		latest = replay.AddDate(0, 0, -1)
	}
	lo, hi = from, to
	if !latest.IsZero() {
		lo = minTime(lo, time.Date(latest.Year(), latest.Month(), 1, 0, 0, 0, 0, time.UTC))
		hi = maxTime(hi, latest.AddDate(0, 0, 1))
	}
	return lo.AddDate(0, 0, -Baseline), hi, nil
}

// latestUsageDay is max(day) of usage_day_cost, the zero time when it has
// no rows. The ledger's last covered day bounds it from above, so the
// days before that one are read first; only when they hold no usage is
// the whole table read.
func latestUsageDay(ctx context.Context, q Querier, r DaysRead) (time.Time, error) {
	var last sql.NullTime
	if err := ScanOne(ctx, q, `SELECT max(day) FROM usage_coverage_of(NULL, NULL, NULL) WHERE basis = 'usage' AND granularity IN ('hour', 'day')`, nil, &last); err != nil || !last.Valid {
		return time.Time{}, err
	}
	latest, err := r.Inline(`SELECT max(day) FROM usage_day_cost`)
	if err != nil {
		return time.Time{}, err
	}
	var day sql.NullTime
	for _, from := range []time.Time{last.Time.UTC().AddDate(0, 0, -62), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if err := ScanOne(ctx, q, latest, []any{sql.Named("days_from", from), sql.Named("days_to", farFuture)}, &day); err != nil {
			return time.Time{}, err
		}
		if day.Valid {
			return day.Time.UTC(), nil
		}
	}
	return time.Time{}, nil
}

// DayCostDays is usage_day_cost for tallysql.InlineDefined where the
// store keeps it (DayCostKept): daily_usage_cost's rows of the days
// [$days_from, $days_to). They are the rows the view's file definition
// gives for those days from usage under DaysWhere (the load replaces a
// window's days in its own transaction), read from a table of one row a
// day and meter rather than from every usage row: a month's budget and
// anomaly figures then read tens of thousands of rows, not millions.
const DayCostDays = `SELECT organization, day, project, payment_method, family, meter_name, currency, cost
FROM daily_usage_cost
WHERE day >= CAST($days_from AS DATE) AND day < CAST($days_to AS DATE)`

// DayCostDefs is DayCostDays, with org of one organization's ($org).
func DayCostDefs(org bool) string {
	if org {
		return DayCostDays + " AND organization = $org"
	}
	return DayCostDays
}

// DayCostKept reports whether q's database keeps daily_usage_cost whole:
// its table has the organization (migration 0010 on), and a Tally that
// lists the tables it fills (kept_refills) opened it last and left none
// to fill. On an analysts' copy an older Tally published, or a database
// whose usage was written by other means, usage_day_cost is read from
// usage, as before.
func DayCostKept(ctx context.Context, q Querier) (bool, error) {
	var n int
	if err := ScanOne(ctx, q, `SELECT count(*) FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name = 'daily_usage_cost' AND column_name = 'organization'`, nil, &n); err != nil || n == 0 {
		return false, err
	}
	var listed int
	if err := ScanOne(ctx, q, `SELECT count(*) FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name = 'kept_refills'`, nil, &listed); err != nil || listed == 0 {
		return false, err
	}
	if err := ScanOne(ctx, q, `SELECT count(*) FROM kept_refills WHERE kept = 'daily_usage_cost'`, nil, &listed); err != nil {
		return false, err
	}
	return listed == 0, nil
}

// DaysRead is how the figures about some days ([$days_from, $days_to))
// read what they read: usage_day_cost, and through it the anomalies'
// days, under Where (tallysql.InlineWhere) and with Defs standing in for
// views (tallysql.InlineDefined). The inliner, because which definition
// counts depends on the database (ReadDays), known only once it is open.
type DaysRead struct {
	Where, Defs map[string]string
}

// Inline inlines the views query reads, read as r says.
func (r DaysRead) Inline(query string) (string, error) {
	return tallysql.InlineDefined(query, r.Where, r.Defs)
}

// ReadDays says how the figures about some days read them on q's
// database: the kept days' cost and baselines where the store keeps them
// (BaselinesKept; AnomaliesDefs), the kept days' cost alone where it
// keeps only that whole (DayCostKept; DayCostDefs), else the usage rows
// of those days (DaysWhere). With org, one organization's ($org) where
// the store's tables are read.
func ReadDays(ctx context.Context, q Querier, org bool) (DaysRead, error) {
	baselines, err := BaselinesKept(ctx, q)
	if err != nil {
		return DaysRead{}, err
	}
	if baselines {
		return DaysRead{Defs: AnomaliesDefs(org)}, nil
	}
	kept, err := DayCostKept(ctx, q)
	if err != nil {
		return DaysRead{}, err
	}
	if kept {
		return DaysRead{Defs: map[string]string{"usage_day_cost": DayCostDefs(org)}}, nil
	}
	return DaysRead{Where: DaysWhere}, nil
}

// farFuture stands for "no end" in DayRange.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// queryDays runs query with the views it reads inlined, usage_day_cost
// read for the days [from, to) need (DayRange), and args.
func queryDays(ctx context.Context, db Querier, query string, from, to time.Time, args ...any) (*sql.Rows, error) {
	r, err := ReadDays(ctx, db, false)
	if err != nil {
		return nil, err
	}
	lo, hi, err := dayRange(ctx, db, r, from, to)
	if err != nil {
		return nil, err
	}
	q, err := r.Inline(query)
	if err != nil {
		return nil, err
	}
	return db.QueryContext(ctx, q, append(args, sql.Named("days_from", lo), sql.Named("days_to", hi))...)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
