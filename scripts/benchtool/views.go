package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"time"

	"github.com/tally-dev/tally/store"
)

// runViews times analyst queries on a store: each -q (or, without one,
// a count(*) of every view) -runs times, and prints the median seconds.
// Opening the store recreates its views from this binary's sql/views when
// they differ from those it holds, so a changed view is measured on the scale fixture without rebuilding it
// (scripts/bench.sh --only scale builds bench-out/scale/m24; the views'
// work is the part of that bench an analyst waits for).
func runViews(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("views", flag.ExitOnError)
	db := flags.String("db", "", "the store to query (it is opened for writing: its views are recreated when this binary's differ)")
	runs := flags.Int("runs", 3, "runs of each query; the median is printed")
	// The last column of the first row is printed: a count, or EXPLAIN's plan.
	var queries multi
	flags.Var(&queries, "q", "a query to time (repeatable); default: SELECT count(*) FROM each view")
	flags.Parse(args)
	if *db == "" || *runs < 1 {
		return errors.New("views: -db is required, -runs at least 1")
	}
	st, err := store.Open(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	if len(queries) == 0 {
		views, err := store.Views()
		if err != nil {
			return err
		}
		for _, v := range views {
			queries = append(queries, "SELECT count(*) FROM "+v.Name)
		}
	}
	for _, q := range queries {
		var secs []float64
		var n any
		for i := 0; i < *runs; i++ {
			began := time.Now()
			rows, err := st.DB().QueryContext(ctx, q)
			if err != nil {
				return fmt.Errorf("views: %s: %w", q, err)
			}
			count := 0
			for rows.Next() {
				count++
				if count == 1 {
					cols, _ := rows.Columns()
					vals := make([]any, len(cols))
					for j := range vals {
						vals[j] = new(any)
					}
					if err := rows.Scan(vals...); err != nil {
						rows.Close()
						return fmt.Errorf("views: %s: %w", q, err)
					}
					n = *(vals[len(vals)-1].(*any))
				}
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("views: %s: %w", q, err)
			}
			rows.Close()
			secs = append(secs, time.Since(began).Seconds())
		}
		sort.Float64s(secs)
		fmt.Printf("%7.2f s  %v  %s\n", secs[len(secs)/2], n, q)
	}
	return nil
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return fmt.Sprint(*m) }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }
