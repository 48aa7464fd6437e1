package ingest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	// The job this test runs exports: export registers the step.
	_ "github.com/tally-dev/tally/export"
	"github.com/tally-dev/tally/ingest"
	"github.com/tally-dev/tally/internal/testkit/focuscheck"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
	"github.com/tally-dev/tally/internal/testkit/runtest"
	"github.com/tally-dev/tally/job"
)

// usage.source projects, read every third evening of June and on its last
// one through a faulty interface, estimates each project's June cost per
// meter at the rate card price; where the organization's report bills
// that meter at the same price, the estimate equals its cost to the cent
// (billed directly or drawn from a balance: the value is the same). The database holds the organization's report too (it taught the
// estimate its meters' skus): every total keeps the two apart, and the
// workbook of the estimate says what it is.
func TestProjectsSourceEqualsOrganizationAtSamePrice(t *testing.T) {
	projects := []string{"archive", "newsroom", "sports-live", "training"}
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-04-01", Now: "2026-06-01T01:00:00Z", Window: "31d", Faults: runtest.Faults(21),
		Usage: "  source: projects\n  project_names: [" + strings.Join(projects, ", ") + "]\n"})
	// The organization's report of April and May, into the same database.
	org := *h.Runner.Config
	org.Usage.Source, org.Usage.ProjectNames = tally.SourceOrganization, nil
	orgRunner := *h.Runner
	orgRunner.Config = &org
	if _, err := runtest.RunFetch(context.Background(), &orgRunner, ingest.FetchOptions{}); err != nil {
		t.Fatalf("organization fetch: %v", err)
	}

	june := prooftest.Day(t, "2026-06-01")
	var reads []time.Time
	for d := 0; d < 30; d += 3 {
		reads = append(reads, june.AddDate(0, 0, d).Add(23*time.Hour+50*time.Minute))
	}
	last := june.AddDate(0, 0, 29).Add(23*time.Hour + 50*time.Minute)
	reads = append(reads, last)
	for _, at := range reads {
		h.Clock.Set(at)
		if _, err := runtest.RunFetch(context.Background(), h.Runner, ingest.FetchOptions{}); err != nil {
			t.Fatalf("read at %s: %v", at, err)
		}
	}

	// The organization's June as of the last read, per project, meter and
	// currency: all of it, and the part billed directly.
	type key struct{ project, meter, currency string }
	all, directCost := map[key]*big.Rat{}, map[key]*big.Rat{}
	prices := map[key]map[string]bool{} // the unit prices the organization billed at
	for _, p := range projects {
		q := tally.UsageQuery{Window: tally.Window{Start: june, End: june.AddDate(0, 1, 0), Granularity: tally.Day}, ProjectNames: []string{p}}
		for _, r := range h.Sim.Rows(q) {
			k := key{p, r.MeterName, r.Currency}
			for _, m := range []map[key]*big.Rat{all, directCost} {
				if m[k] == nil {
					m[k] = new(big.Rat)
				}
			}
			all[k].Add(all[k], r.Cost.Rat())
			if r.Price != nil && r.Quantity > 0 {
				if prices[k] == nil {
					prices[k] = map[string]bool{}
				}
				prices[k][strconv.FormatFloat(*r.Price, 'g', 10, 64)] = true
			}
			if r.Entitlement == "" {
				directCost[k].Add(directCost[k], r.Cost.Rat())
			}
		}
	}
	estimate, cardPrice := map[key]string{}, map[key]string{}
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		for _, line := range prooftest.QueryStrings(t, db, `SELECT project || '|' || meter_name || '|' || currency || '|' || coalesce(CAST(cost AS VARCHAR), 'null') || '|' || coalesce(CAST(price AS VARCHAR), '') FROM (
    SELECT project, meter_name, currency, sum(cost) AS cost, any_value(price) AS price
    FROM usage_finest WHERE basis = 'estimated' AND date >= DATE '2026-06-01' AND date < DATE '2026-07-01'
    GROUP BY ALL)`) {
			f := strings.Split(line, "|")
			estimate[key{f[0], f[1], f[2]}] = f[3]
			cardPrice[key{f[0], f[1], f[2]}] = f[4]
		}
		// Two sources, never one sum: the organization's rows stay basis usage.
		n := prooftest.QueryStrings(t, db, `SELECT CAST(count(DISTINCT basis) AS VARCHAR) FROM usage`)
		if n[0] != "2" {
			t.Errorf("bases in usage: %s, want usage and estimated", n[0])
		}
	})
	equal, direct := 0, 0
	for k, want := range all {
		got := estimate[k]
		wholeDirect := directCost[k].Cmp(want) == 0
		samePrice := false
		if cp, err := strconv.ParseFloat(cardPrice[k], 64); err == nil && len(prices[k]) == 1 {
			samePrice = prices[k][strconv.FormatFloat(cp, 'g', 10, 64)]
		}
		switch {
		case got == "null" || got == "":
			t.Logf("%v: no estimate (%q): no single rate card price", k, got)
		case !samePrice:
			t.Logf("%v: estimate %s, organization %s (direct %v, billed at %v, card %s: entitlement or a price off the rate card, explained in Notes)", k, got, want.FloatString(2), wholeDirect, prices[k], cardPrice[k])
		default:
			g, _ := new(big.Rat).SetString(got)
			if g.FloatString(2) != want.FloatString(2) {
				t.Errorf("%v: estimate %s, organization's usage value %s at the same price", k, g.FloatString(2), want.FloatString(2))
			} else {
				equal++
				if wholeDirect {
					direct++
				}
			}
		}
	}
	if equal < 4 || direct == 0 {
		t.Fatalf("only %d project-meters compared equal; the test proves too little", equal)
	}
	t.Logf("%d project-meter-currency estimates equal the organization's usage value to the cent (%d of them billed directly)", equal, direct)

	// The FOCUS export of the estimate (the export step, basis estimated):
	// conformant, billed nothing, the estimate as list and contracted cost.
	cfg := h.Runner.Config
	cfg.Export = configs.ExportConfig{Dir: filepath.Join(h.Dir, "lake"), Format: configs.ExportFOCUS}
	if _, err := h.Runner.RunJob(context.Background(), "run", configs.Job{Name: "export", Cron: "@daily", Run: []string{"export"}}); err != nil {
		t.Fatal(err)
	}
	lake := `read_parquet('` + filepath.Join(cfg.Export.Dir, "focus", "*", "*.parquet") + `', hive_partitioning = true)`
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		v, err := focuscheck.ExportViolations(context.Background(), db, cfg.Export.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range v {
			t.Errorf("FOCUS 1.3 of the estimate: %s", line)
		}
		got := prooftest.QueryStrings(t, db, `SELECT string_agg(DISTINCT x_Basis) || ' ' || CAST(sum(BilledCost) AS VARCHAR) || ' ' || CAST(sum(ListCost) = sum(ContractedCost) AND sum(ListCost) > 0 AS VARCHAR) FROM `+lake)
		if got[0] != "estimated 0.000000000000 true" {
			t.Errorf("FOCUS of the estimate: basis, billed, list = contracted > 0: %s", got[0])
		}
	})

	// The workbook of the estimate.
	f, _ := h.Workbook(june, "june-estimated.xlsx")
	summary, _ := f.GetRows("Summary")
	notes, _ := f.GetRows("Notes")
	props, _ := f.GetDocProps()
	for what, text := range map[string]string{"title": props.Title, "summary": fmt.Sprint(summary[:3]), "notes": fmt.Sprint(notes)} {
		if !strings.Contains(text, "estimated from the rate card: not an invoice") {
			t.Errorf("the workbook's %s does not say it is an estimate: %.300s", what, text)
		}
	}
}

// A project the interface does not know (404) is a failed read: the run
// is partial naming it, and the other projects are kept.
func TestProjectsSourceMissingProject(t *testing.T) {
	h := runtest.NewHarness(t, runtest.Setup{Granularity: tally.Day, Start: "2026-04-01", Now: "2026-06-10T23:50:00Z",
		Usage: "  source: projects\n  project_names: [newsroom, newsroooom]\n"})
	_, err := runtest.RunFetch(context.Background(), h.Runner, ingest.FetchOptions{})
	var pe *job.Partial
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "newsroooom") || !strings.Contains(err.Error(), "404") {
		t.Fatalf("fetch: %v; want partial naming the missing project", err)
	}
	prooftest.WithDB(t, h.DB, func(db *sql.DB) {
		got := prooftest.QueryStrings(t, db, `SELECT DISTINCT project FROM usage WHERE basis = 'estimated'`)
		if strings.Join(got, ",") != "newsroom" {
			t.Errorf("estimated projects %v", got)
		}
	})
}
