package reports_test

import (
	"archive/zip"
	"database/sql"
	"fmt"
	"html"
	"io"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/reports"
)

// seedHistory adds to the fixture a September in both currencies (beside
// the seed's September row) and October 2025 in USD only, with a fetch
// window for each, so the month at a glance compares with both.
func seedHistory(t *testing.T, db *sql.DB) {
	t.Helper()
	sep := func(d int) time.Time { return time.Date(2026, 9, d, 0, 0, 0, 0, time.UTC) }
	for _, u := range []use{
		{date: sep(3), meter: "video_encoding_ondemand", qty: 100, cost: "4.250000000000", currency: "USD", pm: pm1, project: "alpha"},
		{date: sep(4), meter: "storage_gb", qty: 10, cost: "7.000000000000", currency: "USD", pm: pm1, project: "beta"},
		{date: sep(5), meter: "storage_gb", qty: 10, cost: "0.333000000000", currency: "EUR", pm: pm2, project: "beta"},
		{date: sep(6), meter: "old_meter", qty: 1, cost: "2.000000000000", currency: "EUR", pm: pm2, project: "gamma"},
		{date: time.Date(2025, 10, 12, 0, 0, 0, 0, time.UTC), meter: "video_encoding_ondemand", qty: 1, cost: "12.345000000000", currency: "USD", pm: pm1, project: "alpha"},
	} {
		addUsage(t, db, u)
	}
	for _, w := range [][2]string{{"2026-09-01", "2026-10-01"}, {"2025-10-01", "2025-11-01"}} {
		execSQL(t, db, `INSERT INTO fetch_windows (granularity, basis, scope, start, "end", rows, run_id, fetched_at)
			VALUES ('day', 'usage', 'all', CAST(? AS DATE), CAST(? AS DATE), 1, CAST(? AS UUID), ?)`, w[0], w[1], runID, now.Add(-48*time.Hour))
	}
}

// storyTable is the Summary's table headed, in column A, first, whose
// header row contains want.
func storyTable(t *testing.T, f *excelize.File, first, want string) ([][]string, int) {
	t.Helper()
	all := rows(t, f, "Summary")
	for i, r := range all {
		if at(r, 0) != first || !slices.ContainsFunc(r, func(h string) bool { return strings.HasPrefix(h, want) }) {
			continue
		}
		out := [][]string{r}
		for _, x := range all[i+1:] {
			if len(x) == 0 || at(x, 0) == "" {
				break
			}
			out = append(out, x)
		}
		return out, i + 1
	}
	t.Fatalf("Summary has no table headed %q with %q", first, want)
	return nil, 0
}

// glanceTable is the month at a glance: its header and a row a currency,
// above the lines saying what each month's figures stand on.
func glanceTable(t *testing.T, f *excelize.File) [][]string {
	t.Helper()
	g, _ := storyTable(t, f, "Usage value in", "This month, 2026-10")
	for i, r := range g {
		if strings.HasSuffix(at(r, 0), "figures") {
			return g[:i]
		}
	}
	return g
}

// sqlSums runs check SQL whose rows end with an exact sum, keyed by the
// columns before it joined with "|".
func sqlSums(t *testing.T, db *sql.DB, q string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range querySQL(t, db, q) {
		out[strings.Join(r[:len(r)-1], "|")] = r[len(r)-1]
	}
	return out
}

func dec(t *testing.T, s string) tally.Decimal {
	t.Helper()
	d, err := tally.ParseDecimal(s)
	if err != nil {
		t.Fatalf("decimal %q: %v", s, err)
	}
	return d
}

// sub is a-b, exact, as text.
func sub(t *testing.T, a, b string) string {
	t.Helper()
	r := new(big.Rat).Sub(dec(t, a).Rat(), dec(t, b).Rat())
	return r.FloatString(12)
}

// The month at a glance, the movers, the months table and the projects
// table equal sums taken from the usage rows, per currency, never across.
func TestStoryFiguresEqualTheRows(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	seedHistory(t, db)
	f, _ := build(t, db, reports.Options{})

	month := func(from, to string) map[string]string {
		return sqlSums(t, db, `SELECT currency, CAST(sum(cost) AS VARCHAR) FROM usage
			WHERE basis = 'usage' AND granularity = 'day' AND date >= TIMESTAMP '`+from+`' AND date < TIMESTAMP '`+to+`' GROUP BY currency`)
	}
	oct, sep, lastOct := month("2026-10-01", "2026-11-01"), month("2026-09-01", "2026-10-01"), month("2025-10-01", "2025-11-01")
	glance := glanceTable(t, f)
	if want := []string{"Usage value in", "This month, 2026-10", "Previous month, 2026-09", "Change", "Change %", "A year ago", "Change % y/y"}; !slices.Equal(glance[0], want) {
		t.Errorf("glance header %q", glance[0])
	}
	if len(glance) != 3 || at(glance[1], 0) != "EUR" || at(glance[2], 0) != "USD" {
		t.Fatalf("glance rows %q, want EUR and USD apart", glance[1:])
	}
	for _, r := range glance[1:] {
		c := r[0]
		sameAmount(t, "this month "+c, at(r, 1), oct[c])
		sameAmount(t, "previous month "+c, at(r, 2), sep[c])
		sameAmount(t, "change "+c, at(r, 3), sub(t, oct[c], sep[c]))
		pct, _ := new(big.Rat).Quo(dec(t, sub(t, oct[c], sep[c])).Rat(), dec(t, sep[c]).Rat()).Float64()
		if got := mustFloat(t, at(r, 4)); got != pct {
			t.Errorf("change %% %s: %v, want %v", c, got, pct)
		}
	}
	// A year ago: loaded (a window covers it); USD had usage, EUR none.
	usd := glance[2]
	sameAmount(t, "a year ago USD", at(usd, 5), lastOct["USD"])
	sameAmount(t, "a year ago EUR", at(glance[1], 5), "0")
	if got := at(glance[1], 6); got != "new" {
		t.Errorf("EUR against a year of nothing: %q, want new", got)
	}
	if got := summaryValue(t, f, "Previous month's figures"); got != "2026-09, basis usage, granularity day, as loaded: fetch windows cover the whole month" {
		t.Errorf("previous month's basis %q", got)
	}
	if got := summaryValue(t, f, "This month's figures"); !strings.HasPrefix(got, "2026-10, basis usage, granularity day, as loaded") {
		t.Errorf("this month's basis %q", got)
	}

	// Movers: the five largest changes per currency, project and meter.
	movers, _ := storyTable(t, f, "Project", "In 2026-09")
	want := querySQL(t, db, `WITH p AS (
		SELECT project, meter_name, currency,
		       coalesce(sum(cost) FILTER (WHERE date >= TIMESTAMP '2026-10-01'), 0) AS now,
		       coalesce(sum(cost) FILTER (WHERE date < TIMESTAMP '2026-10-01'), 0) AS before
		FROM usage WHERE basis = 'usage' AND granularity = 'day' AND date >= TIMESTAMP '2026-09-01' AND date < TIMESTAMP '2026-11-01'
		GROUP BY ALL)
	SELECT coalesce(project, '(none)'), meter_name, currency, CAST(before AS VARCHAR), CAST(now AS VARCHAR), CAST(now - before AS VARCHAR)
	FROM p WHERE now <> before
	QUALIFY row_number() OVER (PARTITION BY currency ORDER BY abs(now - before) DESC, project NULLS LAST, meter_name) <= 5
	ORDER BY currency, abs(now - before) DESC, project NULLS LAST, meter_name`)
	if len(movers)-1 != len(want) {
		t.Fatalf("movers %q, want %q", movers[1:], want)
	}
	for i, w := range want {
		r := movers[i+1]
		if at(r, 0) != w[0] || at(r, 1) != w[1] || at(r, 2) != w[2] {
			t.Errorf("mover %d is %q, want %q", i+1, r[:3], w[:3])
		}
		sameAmount(t, "mover before", at(r, 3), w[3])
		sameAmount(t, "mover now", at(r, 4), w[4])
		sameAmount(t, "mover change", at(r, 5), w[5])
	}

	// The months table: a row a month, its figure per currency.
	months, _ := storyTable(t, f, "Month", "Usage value, ")
	if len(months) != 14 {
		t.Fatalf("months table has %d rows, want 13 and its header", len(months)-1)
	}
	byMonth := sqlSums(t, db, `SELECT strftime(date, '%Y-%m'), currency, CAST(sum(cost) AS VARCHAR) FROM usage
		WHERE basis = 'usage' AND granularity = 'day' AND date >= TIMESTAMP '2025-10-01' AND date < TIMESTAMP '2026-11-01' GROUP BY ALL`)
	for i, r := range months[1:] {
		m := time.Date(2025, time.Month(10+i), 1, 0, 0, 0, 0, time.UTC)
		if got := at(r, 0); got != fmt.Sprint(excelDate(m)) {
			t.Errorf("months row %d holds %s, want %s", i+1, got, m.Format("2006-01"))
		}
		loaded := slices.Contains([]string{"2025-10", "2026-09", "2026-10"}, m.Format("2006-01"))
		for _, c := range []string{"EUR", "USD"} {
			got := at(r, colOf(t, months[0], "Usage value, "+c))
			want, ok := byMonth[m.Format("2006-01")+"|"+c]
			switch {
			case ok:
				sameAmount(t, m.Format("2006-01")+" "+c, got, want)
			case loaded:
				sameAmount(t, m.Format("2006-01")+" "+c, got, "0")
			case got != "":
				t.Errorf("%s %s, never loaded, shows %q", m.Format("2006-01"), c, got)
			}
		}
		if l := at(r, colOf(t, months[0], "Loaded")); loaded == (l == "not loaded") {
			t.Errorf("%s says %q", m.Format("2006-01"), l)
		}
	}

	// The projects: the five largest per currency and the rest, each
	// currency's lines adding up to its month.
	p, _ := storyTable(t, f, "Project", "Share")
	for _, c := range []string{"EUR", "USD"} {
		byProject := sqlSums(t, db, `SELECT coalesce(project, '(none)'), CAST(sum(cost) AS VARCHAR) FROM usage WHERE `+monthFilter+` AND currency = '`+c+`' GROUP BY ALL`)
		total := new(big.Rat)
		lines := 0
		for _, r := range p[1:] {
			if r[1] != c {
				continue
			}
			lines++
			w, ok := byProject[r[0]]
			if !ok {
				if !strings.HasSuffix(r[0], " other projects") {
					t.Errorf("%s project %q is not in the rows", c, r[0])
				}
				w = r[2]
			} else {
				sameAmount(t, c+" "+r[0], r[2], w)
			}
			total.Add(total, dec(t, w).Rat())
		}
		if total.Cmp(dec(t, oct[c]).Rat()) != 0 || lines != min(len(byProject), 6) {
			t.Errorf("%s projects %q add up to %s, the month is %s", c, p[1:], total.FloatString(12), oct[c])
		}
	}
}

// A month whose previous month was never loaded says so, in the glance,
// its basis line and the movers; nothing is shown as 0.
func TestStoryPreviousMonthNotLoaded(t *testing.T) {
	db := openDB(t)
	for d := 1; d <= 3; d++ {
		addUsage(t, db, use{date: day(d), meter: "video_encoding_ondemand", qty: 10, cost: "1.25", currency: "USD", pm: pm1, project: "alpha"})
	}
	f, _ := build(t, db, reports.Options{})
	glance := glanceTable(t, f)
	if len(glance) != 2 {
		t.Fatalf("glance %q", glance)
	}
	r := glance[1]
	sameAmount(t, "this month", at(r, 1), "3.75")
	if at(r, 2) != "not loaded" || at(r, 3) != "" || at(r, 4) != "" || at(r, 5) != "not loaded" || at(r, 6) != "" {
		t.Errorf("glance %q: want the previous month and a year ago not loaded, no change", r)
	}
	if got := summaryValue(t, f, "Previous month's figures"); got != "2026-09, basis usage, granularity day, not loaded" {
		t.Errorf("previous month's basis %q", got)
	}
	found := false
	for _, r := range rows(t, f, "Summary") {
		if at(r, 0) == "None: the previous month, 2026-09, is not loaded (basis usage, granularity day)." {
			found = true
		}
	}
	if !found {
		t.Error("the movers do not say the previous month is not loaded")
	}
}

// chartRefs are the Summary's charts: per chart its kind and the ranges
// its series read.
type chartRef struct {
	kind, title  string
	name, cat, v string
}

func summaryCharts(t *testing.T, path string) []chartRef {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	ref := regexp.MustCompile(`<(tx|cat|xVal|val|yVal)><(?:strRef|numRef)><f>([^<]*)</f>`)
	text := regexp.MustCompile(`<a:t>([^<]*)</a:t>`)
	var out []chartRef
	for _, zf := range zr.File {
		if !strings.HasPrefix(zf.Name, "xl/charts/chart") {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		x := string(b)
		if !strings.Contains(html.UnescapeString(x), "'Summary'!") {
			continue
		}
		c := chartRef{kind: "other"}
		switch {
		case strings.Contains(x, "<lineChart>"):
			c.kind = "line"
		case strings.Contains(x, "<barChart>"):
			c.kind = "bar"
		}
		if m := text.FindStringSubmatch(x); m != nil {
			c.title = html.UnescapeString(m[1])
		}
		for _, m := range ref.FindAllStringSubmatch(x, -1) {
			v := html.UnescapeString(m[2])
			switch m[1] {
			case "tx":
				c.name = v
			case "cat", "xVal":
				c.cat = v
			default:
				c.v = v
			}
		}
		out = append(out, c)
	}
	return out
}

// cellsOf reads a range 'Summary'!$A$1:$A$3 (or one cell).
func cellsOf(t *testing.T, f *excelize.File, ref string) []string {
	t.Helper()
	sheet, cells, ok := strings.Cut(ref, "!")
	if !ok {
		t.Fatalf("range %q", ref)
	}
	sheet = strings.Trim(sheet, "'")
	from, to, _ := strings.Cut(strings.ReplaceAll(cells, "$", ""), ":")
	if to == "" {
		to = from
	}
	c1, r1, err := excelize.CellNameToCoordinates(from)
	if err != nil {
		t.Fatal(err)
	}
	c2, r2, err := excelize.CellNameToCoordinates(to)
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Fatalf("range %q spans columns", ref)
	}
	var out []string
	for r := r1; r <= r2; r++ {
		name, _ := excelize.CoordinatesToCellName(c1, r)
		v, err := f.GetCellValue(sheet, name, excelize.Options{RawCellValue: true})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// The Summary has, per currency of the month, a trend chart of the 13
// months and a bar chart of its projects, each reading its own currency's
// figures from the tables below: the months table's month column and
// that currency's column, the currency's projects table.
func TestStoryChartsPointAtTheirRanges(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	seedHistory(t, db)
	f, path := build(t, db, reports.Options{})
	charts := summaryCharts(t, path)
	months, monthsAt := storyTable(t, f, "Month", "Usage value, ")
	kinds := map[string]int{}
	for _, c := range charts {
		kinds[c.kind]++
		switch c.kind {
		case "line":
			cur := c.title[len("Usage value by month, "):][:3]
			col, _ := excelize.ColumnNumberToName(colOf(t, months[0], "Usage value, "+cur) + 1)
			if want := fmt.Sprintf("'Summary'!$A$%d:$A$%d", monthsAt+1, monthsAt+13); c.cat != want {
				t.Errorf("%s: months %s, want %s", c.title, c.cat, want)
			}
			if want := fmt.Sprintf("'Summary'!$%s$%d:$%s$%d", col, monthsAt+1, col, monthsAt+13); c.v != want {
				t.Errorf("%s: values %s, want %s", c.title, c.v, want)
			}
			if got := cellsOf(t, f, c.name); got[0] != "Usage value, "+cur {
				t.Errorf("%s: series named by %q", c.title, got)
			}
		case "bar":
			cur := c.title[len("Usage value by project, "):][:3]
			p, pAt := storyTable(t, f, "Project", "Share")
			first, last := 0, 0
			for i, r := range p[1:] {
				if r[1] == cur {
					if first == 0 {
						first = pAt + 1 + i
					}
					last = pAt + 1 + i
				}
			}
			if want := fmt.Sprintf("'Summary'!$A$%d:$A$%d", first, last); c.cat != want {
				t.Errorf("%s: projects %s, want %s", c.title, c.cat, want)
			}
			if want := fmt.Sprintf("'Summary'!$C$%d:$C$%d", first, last); c.v != want {
				t.Errorf("%s: values %s, want %s", c.title, c.v, want)
			}
		default:
			t.Errorf("Summary chart %q of an unexpected kind", c.title)
		}
	}
	if kinds["line"] != 2 || kinds["bar"] != 2 {
		t.Errorf("Summary charts %+v, want a trend and a bar chart per currency", charts)
	}
}

// Each budget's standing on the Summary is the Budgets sheet's figures:
// over when the actual passes the amount, at risk when the forecast does,
// on track otherwise.
func TestStoryBudgetStanding(t *testing.T) {
	db := openDB(t)
	seed(t, db)
	budgets := []reports.Budget{
		{Name: "roomy", ScopeKind: "all", ScopeText: "all", Currency: "USD", Amount: tally.MustDecimal("1000")},
		{Name: "tight", ScopeKind: "all", ScopeText: "all", Currency: "USD", Amount: tally.MustDecimal("1")},
		{Name: "elsewhere", ScopeKind: "project", Scope: "nobody", ScopeText: "project:nobody", Currency: "EUR", Amount: tally.MustDecimal("5")},
	}
	f, _ := build(t, db, reports.Options{Budgets: budgets})
	sheet := dataRows(t, f, "Budgets and forecast")
	standing, _ := storyTable(t, f, "Budget", "Budget amount")
	if len(standing) != len(budgets)+1 {
		t.Fatalf("standing %q", standing)
	}
	want := map[string]string{"roomy": "on track", "tight": "over", "elsewhere": "on track"}
	for _, r := range standing[1:] {
		s := one(t, sheet, map[string]string{"Budget": r[0]})
		for col, sheetCol := range map[string]string{"Budget amount": "Budget amount", "Forecast": "Forecast month end"} {
			if at(r, colOf(t, standing[0], col)) != at(s, colOf(t, sheet[0], sheetCol)) {
				t.Errorf("%s %s: Summary %q, Budgets sheet %q", r[0], col, r, s)
			}
		}
		if got := at(r, 6); got != want[r[0]] {
			t.Errorf("%s stands %q, want %q", r[0], got, want[r[0]])
		}
	}
}
