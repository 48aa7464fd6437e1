package alerts_test

import (
	"archive/zip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/alerts"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/runtest"
	"github.com/tally-dev/tally/job"
)

// The forecast made on day 20 from the data fetched that morning, against
// what the month finally cost (the simulator's truth, read after every
// charge of the month arrived): within 5% for every project whose usage is
// steady, with the error of each project logged.
func TestForecastOnDay20(t *testing.T) {
	for _, month := range []string{"2026-03", "2026-06"} {
		t.Run(month, func(t *testing.T) {
			first := prooftest.Day(t, month+"-01")
			h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-01-01",
				Now: first.AddDate(0, 0, 19).Add(7 * time.Hour).Format(time.RFC3339), Faults: runtest.Faults(11)})
			h.MustFetch()
			type key struct{ project, currency string }
			forecast := map[key]*big.Rat{}
			cv := map[key]float64{}
			prooftest.WithDB(t, h.DB, func(db *sql.DB) {
				rows, err := db.Query(`SELECT scope, currency, CAST(forecast_cost AS VARCHAR), CAST(as_of AS VARCHAR) FROM forecasts
WHERE scope_kind = 'project' AND month = ?`, first)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				for rows.Next() {
					var p, cur, f, asOf string
					if err := rows.Scan(&p, &cur, &f, &asOf); err != nil {
						t.Fatal(err)
					}
					if want := first.AddDate(0, 0, 18).Format(tally.DateLayout); asOf != want {
						t.Fatalf("as_of %s, want %s: the day before the partial day 20", asOf, want)
					}
					r, _ := new(big.Rat).SetString(f)
					forecast[key{p, cur}] = r
				}
				// Steady: the daily cost of the 28 days before varies by
				// less than a tenth of its mean, weekday by weekday.
				rows2, err := db.Query(`WITH d AS (
    SELECT scope, currency, day, CAST(cost AS DOUBLE) AS cost FROM scope_daily_cost
    WHERE scope_kind = 'project' AND day > ? - INTERVAL 29 DAY AND day <= ? - INTERVAL 1 DAY),
w AS (SELECT scope, currency, isodow(day) AS dow, stddev_pop(cost) / nullif(avg(cost), 0) AS cv FROM d GROUP BY ALL)
SELECT scope, currency, max(coalesce(cv, 1)) FROM w GROUP BY ALL`, first.AddDate(0, 0, 19), first.AddDate(0, 0, 19))
				if err != nil {
					t.Fatal(err)
				}
				defer rows2.Close()
				for rows2.Next() {
					var k key
					var v float64
					if err := rows2.Scan(&k.project, &k.currency, &v); err != nil {
						t.Fatal(err)
					}
					cv[k] = v
				}
			})
			h.Clock.Set(first.AddDate(0, 1, 3))
			steady := 0
			for k, f := range forecast {
				q := tally.UsageQuery{Window: tally.Window{Start: first, End: first.AddDate(0, 1, 0), Granularity: tally.Day}, ProjectNames: []string{k.project}}
				final := h.Sim.Truth(q).Cost[k.currency]
				if final.Sign() == 0 {
					continue
				}
				errRat := new(big.Rat).Quo(new(big.Rat).Sub(f, final.Rat()), final.Rat())
				e, _ := errRat.Float64()
				t.Logf("%s %s %s: forecast on day 20 %s, final %s, error %+.2f%% (weekday cv %.3f)",
					month, k.project, k.currency, f.FloatString(2), final, e*100, cv[k])
				if cv[k] < 0.10 {
					steady++
					if math.Abs(e) > 0.05 {
						t.Errorf("%s %s: forecast off by %.2f%%, more than 5%% for a steady project", k.project, k.currency, e*100)
					}
				}
			}
			if steady == 0 {
				t.Fatalf("no steady project among %d forecasts: the bound was not tested", len(forecast))
			}
		})
	}
}

// A spike injected into one project's meter on one day of six months is
// the one anomaly found.
func TestAnomalyFindsTheSpikeAndNothingElse(t *testing.T) {
	for _, g := range []tally.Granularity{tally.Day, tally.Hour} {
		t.Run(string(g), func(t *testing.T) {
			start := "2026-01-01"
			if g == tally.Hour {
				start = "2026-04-01" // hourly rows of three months keep the test quick; the day case covers six
			}
			spike := prooftest.Day(t, "2026-06-10")
			h := runtest.NewHarness(t, runtest.Setup{Granularity: g, Start: start, Now: "2026-07-01T06:00:00Z", Window: "31d", Faults: runtest.Faults(5),
				Spike: sim.Spike{Project: "newsroom", Meter: "streaming_egress_gb", Day: spike, Factor: 3}})
			h.MustFetch()
			prooftest.WithDB(t, h.DB, func(db *sql.DB) {
				got := prooftest.QueryStrings(t, db, `SELECT day || ' ' || project || ' ' || meter_name || ' ' || currency FROM anomalies ORDER BY ALL`)
				want := []string{"2026-06-10 newsroom streaming_egress_gb USD"}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("anomalies %q, want %q", got, want)
				}
				judged := prooftest.QueryStrings(t, db, `SELECT CAST(count(*) AS VARCHAR) FROM (
    SELECT count(*) OVER (PARTITION BY project, meter_name, currency ORDER BY day RANGE BETWEEN INTERVAL 28 DAYS PRECEDING AND INTERVAL 1 DAY PRECEDING) AS n
    FROM (SELECT DISTINCT CAST(period_at AS DATE) AS day, project, meter_name, currency FROM usage_finest WHERE basis = 'usage'))
WHERE n >= 14`)
				t.Logf("%s: %s project-meter-currency days judged against a baseline, %d anomalous", g, judged[0], len(got))
			})
		})
	}
}

// webhookSink is a real HTTP server standing in for a chat webhook: it
// answers with fail (when set) and records the bodies it took, each with
// whether its signature matched.
type webhookSink struct {
	mu     sync.Mutex
	secret []byte
	fail   int // status to answer with; 0: 200
	failN  int // answer fail this many times, then 200; -1: always
	got    []map[string]any
	bad    []string
	tries  int
}

func (s *webhookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	if s.fail != 0 && s.failN != 0 {
		if s.failN > 0 {
			s.failN--
		}
		http.Error(w, "unavailable", s.fail)
		return
	}
	if sig := r.Header.Get(alerts.SignatureHeader); sig != alerts.Sign(s.secret, body) || r.Header.Get("Content-Type") != "application/json" {
		s.bad = append(s.bad, fmt.Sprintf("signature %q", sig))
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		s.bad = append(s.bad, err.Error())
	}
	s.got = append(s.got, m)
}

func (s *webhookSink) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.got {
		if m["kind"] == "budget" {
			out = append(out, fmt.Sprintf("budget %v %v %v", m["budget"], m["threshold"], m["month"]))
		} else {
			out = append(out, fmt.Sprintf("anomaly %v %v %v", m["project"], m["meter"], m["day"]))
		}
	}
	return out
}

// Every budget crossing and the anomaly reach a real webhook once, signed,
// after the webhook failed the first run: that run is partial, naming the
// sink, and the next one sends what it could not; a third sends nothing.
func TestAlertsSentOnceSignedAndRetried(t *testing.T) {
	old := alerts.TuneWebhook
	alerts.TuneWebhook = func(w *alerts.Webhook) { w.Pause = time.Millisecond }
	t.Cleanup(func() { alerts.TuneWebhook = old })
	sink := &webhookSink{secret: []byte("hook-secret-9d1c"), fail: http.StatusServiceUnavailable, failN: -1}
	hook := httptest.NewServer(sink)
	t.Cleanup(hook.Close)
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "hook.secret")
	if err := os.WriteFile(secretFile, append(sink.secret, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-04-01", Now: "2026-06-12T06:00:00Z", Window: "31d",
		Spike: sim.Spike{Project: "newsroom", Meter: "streaming_egress_gb", Day: prooftest.Day(t, "2026-06-10"), Factor: 4},
		Extra: fmt.Sprintf(`budgets:
  - name: org
    currency: EUR
    amount: 100
  - name: newsroom
    scope: project:newsroom
    currency: USD
    amount: 1000000
alerts:
  webhook:
    url: %s/services/T0/B0/secretpath
    secret_file: %s
`, hook.URL, secretFile)})

	_, err := runtest.RunFetch(context.Background(), h.Runner, ingest.FetchOptions{})
	var pe *job.Partial
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "webhook:"+hook.URL) || strings.Contains(err.Error(), "secretpath") {
		t.Fatalf("first run: %v; want partial naming the sink by host only", err)
	}
	if sink.tries != 4*3 {
		t.Errorf("%d posts; want 3 tries for each of 4 alerts", sink.tries)
	}
	sink.mu.Lock()
	sink.failN = 0
	sink.mu.Unlock()

	h.Clock.Set(h.Clock.Now().Add(24 * time.Hour))
	if _, err := runtest.RunFetch(context.Background(), h.Runner, ingest.FetchOptions{}); err != nil {
		t.Fatalf("second run: %v", err)
	}
	want := []string{"budget org actual 80% 2026-06", "budget org actual 100% 2026-06", "budget org forecast 100% 2026-06",
		"anomaly newsroom streaming_egress_gb 2026-06-10"}
	if got := sink.keys(); strings.Join(slices.Sorted(slices.Values(got)), "\n") != strings.Join(slices.Sorted(slices.Values(want)), "\n") {
		t.Errorf("webhook got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(sink.bad) > 0 {
		t.Errorf("bad posts: %v", sink.bad)
	}
	for _, m := range sink.got {
		text, _ := m["text"].(string)
		if !strings.HasPrefix(text, "Tally: ") || strings.Contains(text, "http") {
			t.Errorf("text %q: want a link-free line", text)
		}
		if m["kind"] == "budget" {
			if _, err := tally.ParseDecimal(fmt.Sprint(m["actual"])); err != nil || m["currency"] != "EUR" || m["amount"] != "100.00" {
				t.Errorf("budget body %v", m)
			}
		}
	}

	h.Clock.Set(h.Clock.Now().Add(24 * time.Hour))
	before := len(sink.keys())
	if _, err := runtest.RunFetch(context.Background(), h.Runner, ingest.FetchOptions{}); err != nil {
		t.Fatalf("third run: %v", err)
	}
	if after := len(sink.keys()); after != before {
		t.Errorf("third run sent %d more alerts; each is sent once", after-before)
	}
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		got := prooftest.QueryStrings(t, db, `SELECT status || ' ' || attempts FROM alerts ORDER BY key`)
		if strings.Join(got, ",") != "sent 2,sent 2,sent 2,sent 2" {
			t.Errorf("alerts table: %v; want all sent, at the second of two runs", got)
		}
	})
	if strings.Contains(h.Logs.String(), string(sink.secret)) || strings.Contains(h.Logs.String(), "secretpath") {
		t.Error("the webhook secret or its address's path appears in the logs")
	}
	prooftest.NoTokenInFiles(t, h.Dir, string(sink.secret))
}

// The workbook of a month with budgets has a Budgets and forecast sheet
// whose figures are the forecasts view's, with a chart per budget, and the
// Flags sheet lists the month's anomaly in its Anomalies section.
func TestWorkbookBudgetsAndAnomalies(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Hour, Start: "2026-05-01", Now: "2026-06-20T06:00:00Z", Window: "31d",
		Spike: sim.Spike{Project: "newsroom", Meter: "streaming_egress_gb", Day: prooftest.Day(t, "2026-06-10"), Factor: 4},
		Extra: `budgets:
  - name: news
    scope: project:newsroom
    currency: USD
    amount: 2500.50
  - name: typo
    scope: project:newsrooom
    currency: USD
    amount: 10
`})
	h.MustFetch()
	june := prooftest.Day(t, "2026-06-01")
	f, path := h.Workbook(june, "june.xlsx")
	var actual, forecast string
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		got := prooftest.QueryStrings(t, db, `SELECT CAST(actual_cost AS VARCHAR) || ' ' || CAST(forecast_cost AS VARCHAR) FROM forecasts
WHERE month = DATE '2026-06-01' AND scope_kind = 'project' AND scope = 'newsroom' AND currency = 'USD'`)
		if len(got) != 1 {
			t.Fatalf("forecasts %v", got)
		}
		actual, forecast, _ = strings.Cut(got[0], " ")
	})
	rows, err := f.GetRows("Budgets and forecast", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 3 || rows[1][0] != "news" || rows[2][0] != "typo" {
		t.Fatalf("budget rows %q", rows[:min(3, len(rows))])
	}
	same := func(what, cellText, exact string) {
		t.Helper()
		c, _ := new(big.Rat).SetString(cellText)
		e, _ := new(big.Rat).SetString(exact)
		if c == nil || e == nil || math.Abs(ratFloat(new(big.Rat).Sub(c, e))) > 0.005 {
			t.Errorf("%s: cell %s, view %s", what, cellText, exact)
		}
	}
	same("amount", rows[1][3], "2500.50")
	same("actual", rows[1][4], actual)
	same("forecast", rows[1][6], forecast)
	a, _ := new(big.Rat).SetString(actual)
	same("actual %", rows[1][5], new(big.Rat).Quo(a, big.NewRat(250050, 100)).FloatString(6))
	if len(rows[2]) > 4 && rows[2][4] != "" {
		t.Errorf("a budget whose scope has no usage shows actual %q; want blank", rows[2][4])
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	// A chart belongs to the sheet its series read: the Summary's story
	// charts read the Summary and are not counted here. The sheet names
	// are quoted, the quotes written as &#39;.
	charts := 0
	for _, zf := range zr.File {
		if !strings.HasPrefix(zf.Name, "xl/charts/chart") {
			continue
		}
		r, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		x, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.ReplaceAll(string(x), "&#39;", "'"); strings.Contains(s, "'Daily'!") || strings.Contains(s, "'Budgets and forecast'!") {
			charts++
		}
	}
	zr.Close()
	daily, err := f.GetRows("Daily")
	if err != nil {
		t.Fatal(err)
	}
	if want := len(daily[0]) - 1 + 1; charts != want { // one a currency on Daily, one for the budget with usage
		t.Errorf("%d charts reading Daily or Budgets and forecast; want %d", charts, want)
	}
	flags, err := f.GetRows("Flags")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i, r := range flags {
		if len(r) > 0 && strings.HasPrefix(r[0], "Anomalies") && i+2 < len(flags) {
			row := flags[i+2]
			found = len(row) > 3 && row[1] == "newsroom" && row[2] == "streaming_egress_gb" && row[3] == "USD"
		}
	}
	if !found {
		t.Errorf("the Flags sheet has no Anomalies section listing newsroom's spike:\n%q", flags)
	}
}

func ratFloat(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}

// The Budgets sheet's labels say what its figures hold: in the current
// month the actual cost runs through the latest day of data, which is
// partial, and says so; a month that is over says "Actual", through its
// last day, and its figure is what the month cost.
func TestBudgetLabelsSayThroughWhichDay(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-05-01", Now: "2026-06-20T06:00:00Z", Window: "31d",
		Extra: `budgets:
  - name: org
    scope: all
    currency: USD
    amount: 1000
`})
	h.MustFetch()
	var asOf, mayActual string
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		asOf = prooftest.QueryStrings(t, db, `SELECT CAST(as_of AS VARCHAR) FROM forecasts WHERE month = DATE '2026-06-01' AND scope_kind = 'all' AND currency = 'USD'`)[0]
		mayActual = prooftest.QueryStrings(t, db, `SELECT CAST(actual_cost AS VARCHAR) FROM forecasts WHERE month = DATE '2026-05-01' AND scope_kind = 'all' AND currency = 'USD'`)[0]
	})
	if asOf != "2026-06-19" {
		t.Fatalf("as_of %s; the fixture's latest day should be 2026-06-20, partial", asOf)
	}
	for _, c := range []struct {
		month                   string
		actualHead, throughHead string
		through                 string
	}{
		{"2026-06-01", "Actual so far", "Data through (last day partial)", "2026-06-20"},
		{"2026-05-01", "Actual", "Data through", "2026-05-31"},
	} {
		f, _ := h.Workbook(prooftest.Day(t, c.month), c.month+".xlsx")
		rows, err := f.GetRows("Budgets and forecast")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) < 2 || len(rows[1]) < 9 {
			t.Fatalf("%s: budget rows %q", c.month, rows)
		}
		if rows[0][4] != c.actualHead || rows[0][8] != c.throughHead || rows[1][8] != c.through {
			t.Errorf("%s: headers %q / %q, through %q; want %q / %q, %q", c.month, rows[0][4], rows[0][8], rows[1][8], c.actualHead, c.throughHead, c.through)
		}
	}
	f, _ := h.Workbook(prooftest.Day(t, "2026-05-01"), "may-raw.xlsx")
	raw, err := f.GetRows("Budgets and forecast", excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := new(big.Rat).SetString(raw[1][4])
	e, _ := new(big.Rat).SetString(mayActual)
	if c == nil || e == nil || math.Abs(ratFloat(new(big.Rat).Sub(c, e))) > 0.005 {
		t.Errorf("May's actual: cell %s, view %s", raw[1][4], mayActual)
	}
}

// An anomaly is news for a week: the first backfill of old months records
// one found more than a week after its day as stale and sends it nowhere,
// and one older than the 35 days each check looks back is in the anomalies
// view only (docs/finance.md "Budgets and alerts" says both).
func TestOldAnomaliesAsTheDocsSay(t *testing.T) {
	old := alerts.TuneWebhook
	alerts.TuneWebhook = func(w *alerts.Webhook) { w.Pause = time.Millisecond }
	t.Cleanup(func() { alerts.TuneWebhook = old })
	for _, c := range []struct {
		now    string
		alerts string // the alerts table's anomaly rows
	}{
		{"2026-06-20T06:00:00Z", "anomaly:newsroom:streaming_egress_gb:USD:2026-06-10 stale"},
		{"2026-07-20T06:00:00Z", ""},
	} {
		t.Run(c.now[:10], func(t *testing.T) {
			sink := &webhookSink{secret: []byte("hook-secret-old-anomaly")}
			hook := httptest.NewServer(sink)
			t.Cleanup(hook.Close)
			t.Setenv("TALLY_TEST_OLD_ANOMALY_SECRET", string(sink.secret))
			h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-04-01", Now: c.now, Window: "31d",
				Spike: sim.Spike{Project: "newsroom", Meter: "streaming_egress_gb", Day: prooftest.Day(t, "2026-06-10"), Factor: 4},
				Extra: fmt.Sprintf("alerts:\n  webhook:\n    url: %s/hook\n    secret_env: TALLY_TEST_OLD_ANOMALY_SECRET\n", hook.URL)})
			if _, err := runtest.RunFetch(context.Background(), h.Runner, ingest.FetchOptions{}); err != nil {
				t.Fatal(err)
			}
			prooftest.WithDB(t, h.DB, func(db *sql.DB) {
				found := prooftest.QueryStrings(t, db, `SELECT day || ' ' || project FROM anomalies`)
				if strings.Join(found, ",") != "2026-06-10 newsroom" {
					t.Errorf("anomalies view: %q, want the spike", found)
				}
				got := prooftest.QueryStrings(t, db, `SELECT key || ' ' || status FROM alerts WHERE kind = 'anomaly' ORDER BY key`)
				if strings.Join(got, ",") != c.alerts {
					t.Errorf("alerts table: %q, want %q", got, c.alerts)
				}
			})
			if got := sink.keys(); len(got) != 0 {
				t.Errorf("an old anomaly was sent: %v", got)
			}
		})
	}
}
