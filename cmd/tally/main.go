// Command tally turns a media cloud's usage interface into a DuckDB file and
// Excel cost workbooks. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	os.Exit(exitCode(err))
}
