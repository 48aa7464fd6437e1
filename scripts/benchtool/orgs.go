package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tally-dev/tally/fetch/sim"
)

// runOrgs serves n simulated organizations behind one loopback address,
// each with its own token and data (seed), billed in USD or EUR by turns,
// with usage from -days days ago, and writes into -dir a Tally config that
// lists them (tally.yaml) and the tokens as shell exports (tokens.env), for
// the organizations bench. GET /bench/requests answers the requests so far.
func runOrgs(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("orgs", flag.ExitOnError)
	n := fs.Int("n", 200, "organizations")
	days := fs.Int("days", 60, "days of history each organization has")
	dir := fs.String("dir", "", "folder for tally.yaml and tokens.env")
	addrFile := fs.String("addr-file", "", "write the base URL here once listening")
	fs.Parse(args)
	if *dir == "" || *n < 1 {
		return errors.New("orgs: -dir and -n ≥ 1 are required")
	}
	now := time.Now().UTC().Truncate(time.Hour)
	start := now.Truncate(24*time.Hour).AddDate(0, 0, -*days)
	servers := make([]*sim.Server, *n)
	var orgs, env strings.Builder
	for i := range *n {
		cur := []string{"USD", "EUR"}[i%2]
		tok := fmt.Sprintf("bench-org-%03d-%08x", i, uint32(i)*2654435761)
		servers[i] = sim.New(sim.Options{Token: tok, Seed: int64(1000 + i), Start: start, Now: func() time.Time { return now },
			OrgName: fmt.Sprintf("Bench organization %03d", i), Currency: cur})
		fmt.Fprintf(&orgs, "  - name: org-%03d\n    token_env: TALLY_BENCH_ORG_%03d\n", i, i)
		fmt.Fprintf(&env, "export TALLY_BENCH_ORG_%03d=%s\n", i, tok)
	}
	group, err := sim.NewGroup(servers...)
	if err != nil {
		return err
	}
	counted := &counter{next: group}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	cfg := fmt.Sprintf(`api:
  base_url: %s
  concurrency: 4
  total_concurrency: 16
organizations:
%susage:
  granularity: day
  start: %s
  lookback: 1d
store:
  path: tally.duckdb
reports:
  dir: reports
`, base, orgs.String(), start.Format("2006-01-02"))
	if err := os.WriteFile(filepath.Join(*dir, "tally.yaml"), []byte(cfg), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "tokens.env"), []byte(env.String()), 0o600); err != nil {
		return err
	}
	return serveUntilDone(ctx, ln, counted, *addrFile)
}
