// Command benchtool is the helper of scripts/bench.sh: it generates a
// month of usage as page files, serves them over loopback as the usage
// interface answers, loads them with DuckDB's own read_json (the fetch
// anchor) and writes their Detail cells with excelize's StreamWriter alone
// (the workbook floor). It is not part of tally.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmds := map[string]func(context.Context, []string) error{
		"gen": runGen, "serve": runServe, "orgs": runOrgs, "anchor": runAnchor, "floor": runFloor, "history": runHistory, "views": runViews,
	}
	if len(os.Args) < 2 || cmds[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: benchtool gen|serve|orgs|anchor|floor|history|views [flags]")
		os.Exit(2)
	}
	if err := cmds[os.Args[1]](ctx, os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}
