package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/tally-dev/tally/fetch/sim"
)

func init() { commands = append(commands, newSimCmd) }

type simOptions struct {
	addr     string
	token    string
	seed     int64
	faults   string
	spike    string
	revise   []string
	pageSize int
}

func newSimCmd(g *globalFlags) *cobra.Command {
	o := &simOptions{}
	cmd := &cobra.Command{
		Use:   "sim [--addr 127.0.0.1:8080] [--token T] [--seed N] [--faults SPEC] [--page-size N] [--spike PROJECT:METER:DAY[:FACTOR]] [--revise PROJECT:METER:DAY[:FACTOR]@WHEN]",
		Short: "Serve a simulated management interface with seeded data, until interrupted",
		Long: "Serve a simulated management interface: usage, payment methods, rate cards,\n" +
			"projects, locations and the organization, with the interface's shapes, limits\n" +
			"and error bodies, and data that depends only on --seed and the clock.\n\n" +
			"--faults injects misbehaviour, as comma-separated KEY=VALUE items:\n" +
			"  429=RATE       429 with Retry-After (seconds and HTTP-date forms, alternating)\n" +
			"  429bare=RATE   429 without Retry-After (or with Retry-After: 0)\n" +
			"  5xx=RATE       500, 502, 503 or 504\n" +
			"  cut=RATE       a body cut off part way, then the connection dropped\n" +
			"  slow=RATE[:D]  answers delayed by D (default 1s)\n" +
			"  refuse=DAYS    usage windows longer than DAYS answered 400\n" +
			"  seed=N         seed of the fault draws\n" +
			"RATE is a fraction of requests from 0 to 1, for example\n" +
			"  --faults 429=0.1,5xx=0.05,cut=0.02,slow=0.01:2s,seed=7",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(g, os.Stderr)
			if err != nil {
				return err
			}
			return runSim(cmd.Context(), o, cmd.OutOrStdout(), log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on, HOST:PORT (port 0 picks a free one)")
	f.StringVar(&o.token, "token", sim.DefaultToken, "bearer token the simulated interface accepts")
	f.Int64Var(&o.seed, "seed", 1, "data seed: the same seed serves the same data")
	f.StringVar(&o.spike, "spike", "", "multiply one project's use of one meter on one UTC day, e.g. newsroom:streaming_egress_gb:2025-03-10:5, for the anomaly detector to find")
	f.StringArrayVar(&o.revise, "revise", nil, "from WHEN (RFC 3339, or a duration from now such as 10m) on, report an earlier day's use of one meter multiplied, as a provider's late correction: a closed month then shows an adjustment; e.g. newsroom:streaming_egress_gb:2025-03-10:2@10m (repeatable)")
	f.StringVar(&o.faults, "faults", "", "faults to inject, e.g. 429=0.1,5xx=0.05,cut=0.02 (see --help)")
	f.IntVar(&o.pageSize, "page-size", 100, "list page size when a request sets no $top")
	return cmd
}

// runSim serves the simulated interface on o.addr until ctx is cancelled,
// then shuts down gracefully.
func runSim(ctx context.Context, o *simOptions, out io.Writer, log zerolog.Logger) error {
	var spike sim.Spike
	if o.spike != "" {
		sp, err := sim.ParseSpike(o.spike)
		if err != nil {
			return usageErr("--spike: %w", err)
		}
		spike = sp
	}
	var revisions []sim.Spike
	for _, r := range o.revise {
		sp, err := sim.ParseRevision(r, time.Now())
		if err != nil {
			return usageErr("--revise: %w", err)
		}
		revisions = append(revisions, sp)
	}
	faults, err := sim.ParseFaults(o.faults)
	if err != nil {
		return usageErr("--faults: %w", err)
	}
	if o.pageSize < 1 {
		return usageErr("--page-size %d must be 1 or more", o.pageSize)
	}
	if o.token == "" {
		return usageErr("--token must not be empty")
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usageErr("--addr %q is not HOST:PORT (for example 127.0.0.1:8080)", o.addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		// Explicitly asked for: allowed, but said out loud.
		log.Warn().Str("addr", o.addr).Msg("the simulated interface listens beyond this machine")
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	s := sim.New(sim.Options{Token: o.token, Seed: o.seed, PageSize: o.pageSize, Faults: faults, Spike: spike, Revisions: revisions})
	hs := &http.Server{
		Handler:           logRequests(s, log),
		ReadHeaderTimeout: 10 * time.Second,
		// Requests end with the command, so a slow answer does not hold up
		// the shutdown.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "listening on %s\n", base)
	fmt.Fprintf(out, "point Tally at it with:\n  export TALLY_BASE_URL=%s\n  export TALLY_API_TOKEN=%s\n", base, o.token)
	log.Info().Str("url", base).Int64("seed", o.seed).Str("faults", faults.String()).Msg("simulated interface up")

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", base, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down %s: %w", base, err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", base, err)
	}
	log.Info().Int64("requests", s.Requests()).Msg("simulated interface stopped")
	return nil
}

// logRequests logs each request at debug level: method, path, status and
// duration. Headers are never logged, so the token is not either.
func logRequests(h http.Handler, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		began := time.Now()
		defer func() {
			log.Debug().Str("method", r.Method).Str("path", r.URL.Path).Int("status", sw.status).
				Dur("took", time.Since(began)).Msg("request")
		}()
		h.ServeHTTP(sw, r)
	})
}

// statusWriter records the status; it passes Flush on, which the sim
// needs to send a cut body before dropping the connection.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
