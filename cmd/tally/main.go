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
	go func() {
		// The first signal asks for a clean stop (tally schedule waits out
		// schedule.grace). Restoring the default action makes a second one
		// end the process at once: safe, since an interrupted load rolls
		// back like a killed one (docs/guarantees.md).
		<-ctx.Done()
		stop()
	}()
	err := run(ctx)
	stop()
	os.Exit(exitCode(err))
}
