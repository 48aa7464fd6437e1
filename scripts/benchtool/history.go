package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tally-dev/tally/store"
)

// runHistory turns a store holding one month loaded by tally fetch into
// one holding -months of history ending with the current month: every
// usage row and ledger window of the loaded month is copied to each of
// those months, dates and charge dates shifted by whole calendar months
// (days a shorter month lacks are left out, so no day holds two days'
// rows), and the latest reference snapshot is copied to the first of each
// month. Rows after the current hour and ledger days after today are cut,
// as a store fetched today holds them; the loaded month itself is removed
// when it is not one of those months. The database is then published, as
// a run leaves it.
//
// It is the scale fixture of scripts/bench.sh --only scale: finance keeps
// years, every load path before it (fetch, ledger, snapshots, publish)
// is Tally's own, and copying one loaded month keeps the fixture's build
// time to minutes.
func runHistory(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("history", flag.ExitOnError)
	db := flags.String("db", "", "the store holding one loaded month")
	month := flags.String("month", "", "that month, YYYY-MM")
	months := flags.Int("months", 24, "months of history the store should hold, the current one included")
	flags.Parse(args)
	if *db == "" || *month == "" || *months < 1 {
		return errors.New("history: -db and -month are required, -months at least 1")
	}
	src, err := time.Parse("2006-01", *month)
	if err != nil {
		return fmt.Errorf("history: -month %q: %w", *month, err)
	}
	now := time.Now().UTC()
	cur := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	st, err := store.Open(ctx, *db, store.Notify(func(p store.FillProgress) {
		fmt.Fprintf(os.Stderr, "history: filled %s for %s (%d of %d months) in %s\n", p.Table, p.Month.Format("2006-01"), p.Done, p.Months, p.Took.Round(time.Millisecond))
	}))
	if err != nil {
		return err
	}
	defer st.Close()
	conn := st.DB()
	began := time.Now()
	var snap time.Time
	if err := conn.QueryRowContext(ctx, "SELECT max(snapshot_at) FROM payment_method_snapshots").Scan(&snap); err != nil {
		return fmt.Errorf("history: no reference snapshot (was the month loaded with tally fetch?): %w", err)
	}
	keepSource := false
	for i := 0; i < *months; i++ {
		t := cur.AddDate(0, -i, 0)
		if t.Equal(src) {
			keepSource = true
			continue
		}
		// k months back from the source (negative: forward).
		k := (src.Year()-t.Year())*12 + int(src.Month()) - int(t.Month())
		days := t.AddDate(0, 1, -1).Day()
		stmts := []string{
			`INSERT INTO usage SELECT * REPLACE (
                date - to_months($1) AS date,
                date_processed - to_months($1) AS date_processed,
                CAST(NULL AS INTEGER) AS key_id)
             FROM usage WHERE date >= $2 AND date < $2 + INTERVAL 1 MONTH AND day(date) <= $3`,
			`INSERT INTO fetch_windows SELECT * REPLACE (
                CAST(start - to_months($1) AS DATE) AS start,
                CAST(least("end", CAST($2 + INTERVAL 1 MONTH AS DATE)) - to_months($1) AS DATE) AS "end",
                fetched_at - to_months($1) AS fetched_at)
             FROM fetch_windows WHERE start >= CAST($2 AS DATE) AND start < CAST($2 + INTERVAL 1 MONTH AS DATE) AND day(start) <= $3`,
		}
		for _, tbl := range []string{"payment_method_snapshots", "rate_card_price_snapshots", "project_snapshots", "location_snapshots", "organization_snapshots"} {
			stmts = append(stmts, `INSERT INTO `+tbl+` SELECT * REPLACE (CAST($2 AS TIMESTAMP) + INTERVAL 1 HOUR AS snapshot_at)
             FROM `+tbl+` WHERE snapshot_at = $1`)
		}
		for j, q := range stmts {
			args := []any{k, src, days}
			if j >= 2 {
				args = []any{snap, t}
			}
			if _, err := conn.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("history: month %s: %w", t.Format("2006-01"), err)
			}
		}
		fmt.Fprintf(os.Stderr, "history: %s copied to %s (%s)\n", *month, t.Format("2006-01"), time.Since(began).Round(time.Second))
	}
	hour := now.Truncate(time.Hour)
	today := now.Truncate(24 * time.Hour)
	type stmt struct {
		q    string
		args []any
	}
	cleanup := []stmt{
		{`DELETE FROM usage WHERE date >= $1`, []any{hour}},
		{`DELETE FROM fetch_windows WHERE start >= CAST($1 AS DATE)`, []any{today}},
		{`UPDATE fetch_windows SET "end" = CAST($1 AS DATE) + 1 WHERE "end" > CAST($1 AS DATE) + 1`, []any{today}},
	}
	if !keepSource {
		cleanup = append(cleanup,
			stmt{`DELETE FROM usage WHERE date >= $1 AND date < $1 + INTERVAL 1 MONTH`, []any{src}},
			stmt{`DELETE FROM fetch_windows WHERE start >= CAST($1 AS DATE) AND start < CAST($1 + INTERVAL 1 MONTH AS DATE)`, []any{src}})
	}
	for _, c := range cleanup {
		if _, err := conn.ExecContext(ctx, c.q, c.args...); err != nil {
			return fmt.Errorf("history: cut the future: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, `UPDATE fetch_windows w SET rows = (SELECT count(*) FROM usage u
        WHERE u.granularity = w.granularity AND u.basis = w.basis AND u.date >= w.start AND u.date < w."end")
        WHERE w.basis = 'usage' AND w.scope = 'all'`); err != nil {
		return fmt.Errorf("history: ledger row counts: %w", err)
	}
	// The rows were copied by hand, not loaded: the daily costs, totals
	// and baselines the load keeps are filled again for them, a month at a
	// time, as a migration fills them, under the writer's memory limit.
	if err := st.RefillKept(ctx); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	// And their usage keys, which the focus view joins them by.
	if err := st.KeyUsage(ctx); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "CHECKPOINT"); err != nil {
		return err
	}
	if _, err := st.Publish(ctx); err != nil {
		return err
	}
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM usage").Scan(&n); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "history: %d usage rows over %d months in %s\n", n, *months, time.Since(began).Round(time.Second))
	return nil
}
