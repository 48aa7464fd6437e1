package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tally-dev/tally"
)

func TestStatus(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	empty, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(empty.Runs)+len(empty.Spans)+len(empty.Gaps) != 0 || empty.Freshness.LastFetchedAt != nil || empty.Freshness.LatestUsageDate != nil {
		t.Fatalf("status of an empty store: %+v", empty)
	}

	first, second := NewRunID(), NewRunID()
	if err := s.BeginRun(ctx, first, "fetch", "nightly"); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, first, RunResult{Status: RunPartial, Err: "window 2026-01-15..2026-01-22: 503", Rows: 2, Windows: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(ctx, second, "fetch", ""); err != nil {
		t.Fatal(err)
	}
	charged := date(t, "2026-01-10")
	late := row(date(t, "2026-01-09"), "enc", "a", "1")
	late.DateProcessed = &charged
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-01", "2026-01-08")}, row(date(t, "2026-01-07"), "enc", "a", "1"))
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-08", "2026-01-15")}, late)
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-01-22", "2026-02-01")})
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-02-03", "2026-02-05")})
	load(t, s, tally.UsageQuery{Window: window(t, tally.Month, "2026-01-01", "2026-03-01")}, row(date(t, "2026-02-01"), "enc", "a", "5"))

	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Runs) != 2 || st.Runs[0].ID != second || st.Runs[0].Status != "running" || st.Runs[0].Finished != nil ||
		st.Runs[1].ID != first || st.Runs[1].Status != "partial" || st.Runs[1].Job != "nightly" ||
		st.Runs[1].Error != "window 2026-01-15..2026-01-22: 503" || st.Runs[1].Rows != 2 || st.Runs[1].Windows != 2 || st.Runs[1].Finished == nil {
		t.Fatalf("runs %+v", st.Runs)
	}
	var spans []string
	for _, sp := range st.Spans {
		b, _ := json.Marshal(sp)
		spans = append(spans, strings.Replace(string(b), sp.LastFetchedAt.Format("2006-01-02T15:04:05.999999999Z07:00"), "T", 1))
	}
	equalLines(t, "spans", spans, []string{
		`{"organization":"","granularity":"day","basis":"usage","scope":"all","start":"2026-01-01","end":"2026-02-05","windows":4,"rows":2,"last_fetched_at":"T"}`,
		`{"organization":"","granularity":"month","basis":"usage","scope":"all","start":"2026-01-01","end":"2026-03-01","windows":1,"rows":1,"last_fetched_at":"T"}`,
	})
	var gaps []string
	for _, g := range st.Gaps {
		b, _ := json.Marshal(g)
		gaps = append(gaps, string(b))
	}
	equalLines(t, "gaps", gaps, []string{
		`{"organization":"","granularity":"day","basis":"usage","scope":"all","start":"2026-01-15","end":"2026-01-22"}`,
		`{"organization":"","granularity":"day","basis":"usage","scope":"all","start":"2026-02-01","end":"2026-02-03"}`,
	})
	f := st.Freshness
	if f.LastFetchedAt == nil || !f.LastFetchedAt.Equal(st.Spans[1].LastFetchedAt) ||
		f.LatestUsageDate == nil || !f.LatestUsageDate.Equal(date(t, "2026-02-01")) ||
		f.LatestDateProcessed == nil || !f.LatestDateProcessed.Equal(charged) {
		t.Fatalf("freshness %+v", f)
	}
	// The latest dates are looked for near the ledger's last covered day
	// first; a ledger that reaches months past every row finds them too.
	load(t, s, tally.UsageQuery{Window: window(t, tally.Day, "2026-09-01", "2026-09-02")})
	if st, err = s.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if f := st.Freshness; f.LatestUsageDate == nil || !f.LatestUsageDate.Equal(date(t, "2026-02-01")) ||
		f.LatestDateProcessed == nil || !f.LatestDateProcessed.Equal(charged) {
		t.Fatalf("freshness with the ledger past the rows %+v", f)
	}
}
