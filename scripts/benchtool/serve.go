package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tally-dev/tally/fetch/sim"
)

// runServe serves the page files of -dir as the usage answer, and every
// other resource (payment methods, rate cards, projects, locations, the
// organization) from the simulated interface, on loopback until
// interrupted. With -sim-start it serves the simulated interface alone,
// usage included, with data from that day.
func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", "", "folder of page files written by gen")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	addrFile := fs.String("addr-file", "", "write the base URL here once listening")
	simStart := fs.String("sim-start", "", "serve only the simulated interface, with usage from this day (YYYY-MM-DD)")
	contentLength := fs.Bool("content-length", false, "serve page files as Go's file server does (http.ServeContent: Content-Length, no chunking) instead of streaming them chunked")
	fs.Parse(args)

	var h http.Handler
	switch {
	case *simStart != "":
		start, err := time.Parse("2006-01-02", *simStart)
		if err != nil {
			return fmt.Errorf("serve: -sim-start %q is not YYYY-MM-DD", *simStart)
		}
		h = sim.New(sim.Options{Token: simToken, Seed: simSeed, Start: start})
	case *dir != "":
		m, err := readManifest(*dir)
		if err != nil {
			return fmt.Errorf("serve: read manifest: %w", err)
		}
		h = &pages{dir: *dir, m: m, sim: sim.New(sim.Options{Token: simToken, Seed: simSeed}), contentLength: *contentLength}
	default:
		return errors.New("serve: -dir or -sim-start is required")
	}
	counted := &counter{next: h}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(os.Stderr, "serve: listening on %s\n", base)
	if err := serveUntilDone(ctx, ln, counted, *addrFile); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "serve: %d requests\n", counted.n.Load())
	return nil
}

// serveUntilDone writes the listener's base URL to addrFile (when set;
// atomically, so a script waiting for it reads it whole) and serves h on
// ln until ctx ends.
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler, addrFile string) error {
	base := "http://" + ln.Addr().String()
	if addrFile != "" {
		if err := os.WriteFile(addrFile+".tmp", []byte(base+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(addrFile+".tmp", addrFile); err != nil {
			return err
		}
	}
	srv := &http.Server{Handler: h}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// counter counts requests; GET /bench/requests answers the count so far
// (without counting itself).
type counter struct {
	next http.Handler
	n    atomic.Int64
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/bench/requests" {
		fmt.Fprintln(w, c.n.Load())
		return
	}
	c.n.Add(1)
	c.next.ServeHTTP(w, r)
}

// pages answers usage queries with the page files, following the
// interface's shape: POST of a CustomerUsageQueryData, next pages by
// @odata.nextLink (POST or GET).
type pages struct {
	dir           string
	m             manifest
	sim           http.Handler
	contentLength bool
}

func (p *pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != usagePath {
		p.sim.ServeHTTP(w, r)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+simToken)) != 1 {
		apiError(w, http.StatusUnauthorized, "Unauthorized", "missing or invalid bearer token")
		return
	}
	if tok := r.URL.Query().Get("$skiptoken"); tok != "" {
		for _, win := range p.m.Windows {
			for _, pg := range win.Pages {
				if strings.TrimSuffix(pg, ".json") == tok {
					p.serveFile(w, r, pg)
					return
				}
			}
		}
		apiError(w, http.StatusBadRequest, "InvalidRequest", "$skiptoken is not one this service issued")
		return
	}
	var q struct {
		StartDate   string `json:"startDate"`
		EndDate     string `json:"endDate"`
		Granularity string `json:"granularity"`
		Format      string `json:"format"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&q); err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequest", "the body is not a CustomerUsageQueryData JSON object")
		return
	}
	if q.Granularity != "hour" || (q.Format != "" && q.Format != "json") {
		apiError(w, http.StatusBadRequest, "InvalidRequest", "the bench serves hourly JSON usage only")
		return
	}
	for _, win := range p.m.Windows {
		if win.Start == q.StartDate && win.End == q.EndDate {
			p.serveFile(w, r, win.Pages[0])
			return
		}
	}
	apiError(w, http.StatusBadRequest, "InvalidRange",
		fmt.Sprintf("the bench has no pages for %s..%s; its windows are %s", q.StartDate, q.EndDate, p.windows()))
}

func (p *pages) windows() string {
	var s []string
	for _, w := range p.m.Windows {
		s = append(s, w.Start+".."+w.End)
	}
	return strings.Join(s, ", ")
}

func (p *pages) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	f, err := os.Open(filepath.Join(p.dir, name))
	if err != nil {
		apiError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/json")
	if p.contentLength {
		// What a plain Go file server sends: the length up front, the
		// file copied by sendfile.
		fi, err := f.Stat()
		if err != nil {
			apiError(w, http.StatusInternalServerError, "InternalError", err.Error())
			return
		}
		http.ServeContent(w, r, name, fi.ModTime(), f)
		return
	}
	w.WriteHeader(http.StatusOK)
	io.Copy(w, f)
}

func apiError(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"code": code, "detail": detail}, "ref": "bench", "status": status,
	})
}
