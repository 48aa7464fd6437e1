package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
)

// Status is what `tally status` shows: recent runs, what the ledger covers,
// where it has holes, and how fresh the data is.
type Status struct {
	Runs      []RunInfo `json:"runs"`   // newest first, at most 20
	Spans     []Span    `json:"loaded"` // per granularity, basis and scope
	Gaps      []Gap     `json:"gaps"`
	Freshness Freshness `json:"freshness"`
	Jobs      []JobRun  `json:"job_runs"` // each scheduled job's latest run, by name
}

// JobRun is a scheduled job's latest run and when it last succeeded (nil:
// never).
type JobRun struct {
	RunInfo
	LastSuccess *time.Time `json:"last_success"`
}

// RunInfo is one row of the runs table.
type RunInfo struct {
	ID       uuid.UUID  `json:"id"`
	Command  string     `json:"command"`
	Job      string     `json:"job,omitempty"`
	Started  time.Time  `json:"started"`
	Finished *time.Time `json:"finished"`
	Status   string     `json:"status"`
	Error    string     `json:"error,omitempty"`
	Rows     int64      `json:"rows"`
	Windows  int        `json:"windows"`
	Warnings []string   `json:"warnings,omitempty"`
	// AsOf is the day the run counted as today when it was a replay
	// (--as-of); nil for a run as of its own day.
	AsOf *time.Time `json:"as_of,omitempty"`
}

// Span is what the ledger covers for one granularity, basis and scope: from
// the first window's start to the last window's end (exclusive), holes
// included (see Gaps).
type Span struct {
	Organization  string // whose ledger (organizations.name)
	Granularity   tally.Granularity
	Basis         tally.Basis
	Scope         string
	Start, End    time.Time
	Windows       int
	Rows          int64
	LastFetchedAt time.Time
}

// Gap is a date range, start inclusive and end exclusive, between loaded
// windows that no window of the same granularity, basis and scope covers.
type Gap struct {
	Organization string // whose ledger (organizations.name)
	Granularity  tally.Granularity
	Basis        tally.Basis
	Scope        string
	Start, End   time.Time
}

// Freshness says how recent the data is; nil fields mean no data yet.
type Freshness struct {
	LastFetchedAt       *time.Time `json:"last_fetched_at"`       // latest window fetch
	LatestUsageDate     *time.Time `json:"latest_usage_date"`     // latest usage bucket loaded
	LatestDateProcessed *time.Time `json:"latest_date_processed"` // latest charge seen
}

// MarshalJSON writes the span's edges as dates, as `tally plan` does, and
// its organization, so several organizations' spans are told apart as the
// table tells them.
func (s Span) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Organization  string            `json:"organization"`
		Granularity   tally.Granularity `json:"granularity"`
		Basis         tally.Basis       `json:"basis"`
		Scope         string            `json:"scope"`
		Start         string            `json:"start"`
		End           string            `json:"end"`
		Windows       int               `json:"windows"`
		Rows          int64             `json:"rows"`
		LastFetchedAt time.Time         `json:"last_fetched_at"`
	}{s.Organization, s.Granularity, s.Basis, s.Scope, s.Start.Format(tally.DateLayout), s.End.Format(tally.DateLayout), s.Windows, s.Rows, s.LastFetchedAt})
}

// MarshalJSON writes the gap's edges as dates, as `tally plan` does, and
// its organization.
func (g Gap) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Organization string            `json:"organization"`
		Granularity  tally.Granularity `json:"granularity"`
		Basis        tally.Basis       `json:"basis"`
		Scope        string            `json:"scope"`
		Start        string            `json:"start"`
		End          string            `json:"end"`
	}{g.Organization, g.Granularity, g.Basis, g.Scope, g.Start.Format(tally.DateLayout), g.End.Format(tally.DateLayout)})
}

// Status reads the store's status through the named queries last_runs,
// loaded_spans, gaps and freshness, so `tally query --name` shows the same.
func (s *Store) Status(ctx context.Context) (*Status, error) {
	st := &Status{Runs: []RunInfo{}, Spans: []Span{}, Gaps: []Gap{}, Jobs: []JobRun{}}
	err := s.eachRow(ctx, "last_runs", func(rows *sql.Rows) error {
		var r RunInfo
		var id []byte
		var job, errText, warnings sql.NullString
		var finished, asOf sql.NullTime
		if err := rows.Scan(&id, &r.Command, &job, &r.Started, &finished, &r.Status, &errText, &r.Rows, &r.Windows, &warnings, &asOf); err != nil {
			return err
		}
		if asOf.Valid {
			d := asOf.Time.UTC()
			r.AsOf = &d
		}
		if warnings.String != "" {
			r.Warnings = strings.Split(warnings.String, "\n")
		}
		var err error
		if r.ID, err = uuid.FromBytes(id); err != nil {
			return err
		}
		r.Job, r.Error, r.Started = job.String, errText.String, r.Started.UTC()
		if finished.Valid {
			t := finished.Time.UTC()
			r.Finished = &t
		}
		st.Runs = append(st.Runs, r)
		return nil
	})
	if err == nil {
		err = s.eachRow(ctx, "job_runs", func(rows *sql.Rows) error {
			var j JobRun
			var id []byte
			var errText sql.NullString
			var finished, success, asOf sql.NullTime
			if err := rows.Scan(&j.Job, &id, &j.Command, &j.Started, &finished, &j.Status, &errText, &j.Rows, &j.Windows, &success, &asOf); err != nil {
				return err
			}
			if asOf.Valid {
				d := asOf.Time.UTC()
				j.AsOf = &d
			}
			var err error
			if j.ID, err = uuid.FromBytes(id); err != nil {
				return err
			}
			j.Error, j.Started = errText.String, j.Started.UTC()
			if finished.Valid {
				t := finished.Time.UTC()
				j.Finished = &t
			}
			if success.Valid {
				t := success.Time.UTC()
				j.LastSuccess = &t
			}
			st.Jobs = append(st.Jobs, j)
			return nil
		})
	}
	if err == nil {
		err = s.eachRow(ctx, "loaded_spans", func(rows *sql.Rows) error {
			var sp Span
			if err := rows.Scan(&sp.Organization, &sp.Granularity, &sp.Basis, &sp.Scope, &sp.Start, &sp.End, &sp.Windows, &sp.Rows, &sp.LastFetchedAt); err != nil {
				return err
			}
			sp.Start, sp.End, sp.LastFetchedAt = sp.Start.UTC(), sp.End.UTC(), sp.LastFetchedAt.UTC()
			st.Spans = append(st.Spans, sp)
			return nil
		})
	}
	if err == nil {
		err = s.eachRow(ctx, "gaps", func(rows *sql.Rows) error {
			var g Gap
			var days int64
			if err := rows.Scan(&g.Organization, &g.Granularity, &g.Basis, &g.Scope, &g.Start, &g.End, &days); err != nil {
				return err
			}
			g.Start, g.End = g.Start.UTC(), g.End.UTC()
			st.Gaps = append(st.Gaps, g)
			return nil
		})
	}
	if err == nil {
		st.Freshness, err = s.freshness(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("read status of %s: %w", s.path, err)
	}
	return st, nil
}

// freshness gives what the named query freshness gives: the last fetch,
// and the latest date and date_processed in usage. Those two read the
// rows from a little before the ledger's last covered day first, which
// the usage table's zone maps take to the scan; only when none is there
// is every row read. The query itself reads every row: 2.7 s and 500 MB
// at 100 million rows, for two dates.
func (s *Store) freshness(ctx context.Context) (Freshness, error) {
	var f Freshness
	var fetched, end sql.NullTime
	if err := ScanOne(ctx, s.db, `SELECT max(fetched_at), max("end") FROM fetch_windows`, nil, &fetched, &end); err != nil {
		return f, fmt.Errorf("query freshness: %w", err)
	}
	set := func(p **time.Time, t sql.NullTime) {
		if t.Valid {
			u := t.Time.UTC()
			*p = &u
		}
	}
	set(&f.LastFetchedAt, fetched)
	for _, c := range []struct {
		col string
		p   **time.Time
	}{{"date", &f.LatestUsageDate}, {"date_processed", &f.LatestDateProcessed}} {
		var latest sql.NullTime
		if end.Valid {
			if err := ScanOne(ctx, s.db, `SELECT max(`+c.col+`) FROM usage WHERE `+c.col+` >= CAST(? AS TIMESTAMP)`,
				[]any{end.Time.UTC().AddDate(0, 0, -62)}, &latest); err != nil {
				return f, fmt.Errorf("query freshness: %w", err)
			}
		}
		if !latest.Valid {
			if err := ScanOne(ctx, s.db, `SELECT max(`+c.col+`) FROM usage`, nil, &latest); err != nil {
				return f, fmt.Errorf("query freshness: %w", err)
			}
		}
		set(c.p, latest)
	}
	return f, nil
}

func (s *Store) eachRow(ctx context.Context, name string, fn func(*sql.Rows) error) error {
	q, err := FindNamedQuery(name)
	if err != nil {
		return err
	}
	rows, err := s.db.QueryContext(ctx, q.SQL)
	if err != nil {
		return fmt.Errorf("query %s: %w", name, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return fmt.Errorf("query %s: %w", name, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query %s: %w", name, err)
	}
	return nil
}
