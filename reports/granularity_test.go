package reports_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/runtest"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

// fetchAt runs one recorded fetch of [from, to) at granularity g through
// the real fetch path.
func fetchAt(h *runtest.Harness, g tally.Granularity, from, to time.Time) {
	h.T.Helper()
	sum, err := runtest.RunFetch(context.Background(), h.Runner, ingest.FetchOptions{From: from, To: to, Granularity: g})
	if err != nil {
		h.T.Fatalf("fetch %s %s..%s: %v", g, from.Format(time.DateOnly), to.Format(time.DateOnly), err)
	}
	if sum.Loaded != sum.Planned || sum.Planned == 0 {
		h.T.Fatalf("fetch %s loaded %d of %d windows", g, sum.Loaded, sum.Planned)
	}
}

// monthTruth is the sim's exact cost per currency of month m on the
// harness's basis.
func monthTruth(h *runtest.Harness, m time.Time) map[string]tally.Decimal {
	return h.Sim.Truth(h.Query(m, m.AddDate(0, 1, 0))).Cost
}

// finestTotals sums usage_finest of a basis in month m per currency.
func finestTotals(t *testing.T, db *sql.DB, basis string, m time.Time) map[string]tally.Decimal {
	t.Helper()
	rows, err := db.Query(`SELECT currency, CAST(sum(cost) AS VARCHAR) FROM usage_finest
WHERE basis = ? AND period_at >= ? AND period_at < ? GROUP BY currency`, basis, m, m.AddDate(0, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]tally.Decimal{}
	for rows.Next() {
		var cur, s string
		if err := rows.Scan(&cur, &s); err != nil {
			t.Fatal(err)
		}
		d, err := tally.ParseDecimal(s)
		if err != nil {
			t.Fatal(err)
		}
		out[cur] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Day for six months, hour for two days of June and month for the year:
// every month of usage_finest equals the sim's truth, per currency, and
// the two hour days do not hide the rest of June nor count twice. On both
// bases: reported filters and counts on the charge date.
func TestUsageFinestMixedLoadsMatchTruth(t *testing.T) {
	for _, reported := range []bool{false, true} {
		t.Run(map[bool]string{false: "usage", true: "reported"}[reported], func(t *testing.T) {
			testUsageFinestMixedLoads(t, reported)
		})
	}
}

func testUsageFinestMixedLoads(t *testing.T, reported bool) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Window: "1y", Start: "2025-01-01", Now: "2026-01-10T12:00:00Z", Reported: reported})
	// usage.window left out: the largest window each granularity allows (a
	// set window must suit every granularity fetched with it).
	h.Runner.Config.Usage.Window = tally.WindowSize{}
	jan, jul := prooftest.Day(t, "2025-01-01"), prooftest.Day(t, "2025-07-01")
	fetchAt(h, tally.Day, jan, jul)
	fetchAt(h, tally.Hour, prooftest.Day(t, "2025-06-01"), prooftest.Day(t, "2025-06-03"))
	fetchAt(h, tally.Month, jan, prooftest.Day(t, "2026-01-01"))

	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		for m := jan; m.Year() == 2025; m = m.AddDate(0, 1, 0) {
			want := monthTruth(h, m)
			if len(want) < 2 {
				t.Fatalf("%s: truth in %d currencies; the test wants two", m.Format("2006-01"), len(want))
			}
			if d := prooftest.SameTotals(finestTotals(t, db, h.Basis(), m), want); d != "" {
				t.Errorf("usage_finest %s differs from the truth: %s", m.Format("2006-01"), d)
			}
		}
		// Which granularity each month is read at: day (and hour for 1-2
		// June) up to June, month after.
		got := map[string][]string{}
		rows, err := db.Query(`SELECT strftime(date_trunc('month', day), '%Y-%m'), list_sort(list(DISTINCT granularity))::VARCHAR
FROM usage_coverage WHERE basis = ? AND day < DATE '2026-01-01' GROUP BY ALL ORDER BY ALL`, h.Basis())
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var m, gs string
			if err := rows.Scan(&m, &gs); err != nil {
				t.Fatal(err)
			}
			got[gs] = append(got[gs], m)
		}
		want := map[string][]string{
			"[day]":       {"2025-01", "2025-02", "2025-03", "2025-04", "2025-05"},
			"[day, hour]": {"2025-06"},
			"[month]":     {"2025-07", "2025-08", "2025-09", "2025-10", "2025-11", "2025-12"},
		}
		for k, v := range want {
			if !slices.Equal(got[k], v) {
				t.Errorf("months read at %s: %v, want %v", k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("coverage by month %v, want %v", got, want)
		}
		var hourDays int
		if err := db.QueryRow(`SELECT count(*) FROM usage_coverage WHERE basis = ? AND granularity = 'hour'`, h.Basis()).Scan(&hourDays); err != nil {
			t.Fatal(err)
		}
		if hourDays != 2 {
			t.Errorf("%d days read at hour, want 2 (1-2 June)", hourDays)
		}
	})
}

// summaryTotals reads a workbook's Summary: its granularity and the total
// usage value per currency.
func summaryTotals(t *testing.T, path string) (string, map[string]float64) {
	t.Helper()
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	summary, err := f.GetRows("Summary", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	start := slices.IndexFunc(summary, func(r []string) bool { return len(r) > 0 && r[0] == "Currency" })
	if start < 0 {
		t.Fatal("Summary has no totals table")
	}
	col := slices.Index(summary[start], "Total usage value")
	if col < 0 {
		t.Fatalf("totals header %q has no Total usage value", summary[start])
	}
	out := map[string]float64{}
	for _, r := range summary[start+1:] {
		if len(r) <= col || r[0] == "" {
			break
		}
		v, err := strconv.ParseFloat(r[col], 64)
		if err != nil {
			t.Fatalf("total %q of %s: %v", r[col], r[0], err)
		}
		out[r[0]] = v
	}
	return prooftest.Labelled(summary, "Granularity"), out
}

// months are the workbooks the report tests write.
var months = []string{"2025-01", "2025-02"}

func checkWorkbook(t *testing.T, h *runtest.Harness, path string, m time.Time, wantGranularity tally.Granularity) {
	t.Helper()
	g, got := summaryTotals(t, path)
	if g != string(wantGranularity) {
		t.Errorf("%s: workbook granularity %q, want %s", m.Format("2006-01"), g, wantGranularity)
	}
	want := monthTruth(h, m)
	if len(got) != len(want) {
		t.Errorf("%s: workbook totals %v, truth %v", m.Format("2006-01"), got, want)
	}
	for cur, w := range want {
		if got[cur] != w.Float64() {
			t.Errorf("%s: workbook total %s %v, truth %s", m.Format("2006-01"), cur, got[cur], w)
		}
	}
}

// A month's workbook at week or year granularity: refused (naming
// usage.granularity and what to fetch) while only week or year rows are
// loaded, which makes the nightly run partial, its fetch done; read from
// the finest loaded hour, day or month data covering the month once there
// is some, and then equal to the truth.
func TestMonthlyReportAtWeekAndYear(t *testing.T) {
	for _, tt := range []struct {
		g      tally.Granularity
		window string
		fetch  tally.Granularity // what the test loads so the month can be served
	}{
		{tally.Week, "4w", tally.Day},
		{tally.Year, "1y", tally.Month},
	} {
		t.Run(string(tt.g), func(t *testing.T) {
			h := runtest.NewHarness(t, runtest.Setup{Granularity: tt.g, Window: tt.window, Start: "2025-01-01", Now: "2025-03-10T12:00:00Z"})
			_, err := runtest.RunNightly(context.Background(), h.Runner, months)
			var pe *job.Partial
			var ge *reports.GranularityError
			if !errors.As(err, &pe) || len(pe.Of(job.KindStep)) != 1 || !errors.As(pe.Of(job.KindStep)[0].Err, &ge) {
				t.Fatalf("nightly at %s: %v, want a *job.Partial: its fetch done, its reports refused with a *reports.GranularityError", tt.g, err)
			}
			if ge.Field != "usage.granularity" || ge.Granularity != tt.g {
				t.Errorf("error names %s %q, want usage.granularity %q", ge.Field, ge.Granularity, tt.g)
			}
			for _, s := range []string{"usage.granularity", `"` + string(tt.g) + `"`, "hour, day or month", "tally fetch --granularity"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}

			fetchAt(h, tt.fetch, prooftest.Day(t, "2025-01-01"), prooftest.Day(t, "2025-03-01"))
			sum, err := runtest.RunNightly(context.Background(), h.Runner, months)
			if err != nil {
				t.Fatalf("nightly after fetching %s: %v", tt.fetch, err)
			}
			if len(sum.Reports) != 2 {
				t.Fatalf("%d workbooks, want 2", len(sum.Reports))
			}
			for _, r := range sum.Reports {
				checkWorkbook(t, h, r.Path, r.Month, tt.fetch)
			}
			if !strings.Contains(h.Logs.String(), "cannot serve a monthly report") {
				t.Error("the run logged no warning that it read another granularity")
			}
		})
	}
}

// At month granularity the workbook equals the truth as it is.
func TestMonthlyReportAtMonth(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Month, Window: "1m", Start: "2025-01-01", Now: "2025-03-10T12:00:00Z"})
	sum, err := runtest.RunNightly(context.Background(), h.Runner, months)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sum.Reports {
		checkWorkbook(t, h, r.Path, r.Month, tally.Month)
	}
}
