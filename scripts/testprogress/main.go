// Command testprogress turns `go test -json` into what `go test` prints,
// plus where the run is: each package as it starts, and every half minute
// the packages still running and for how long, so a long run never looks
// hung. It prints go test's own lines (ok, FAIL, build errors) and the
// output of the tests that fail, not of those that pass; with -v, all of
// it. It exits 1 when any test or build failed. scripts/test pipes go test
// through it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Output     string
	Elapsed    float64
}

func main() {
	verbose := flag.Bool("v", false, "print the output of every test, not only of those that fail")
	every := flag.Duration("every", 30*time.Second, "how often to say which packages are still running")
	flag.Parse()
	os.Exit(run(os.Stdin, os.Stdout, *verbose, *every))
}

type progress struct {
	mu      sync.Mutex
	out     io.Writer
	start   time.Time
	running map[string]time.Time
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, format, args...)
}

func (p *progress) stamp() string {
	return fmt.Sprintf("[%6s]", time.Since(p.start).Truncate(time.Second))
}

func run(in io.Reader, out io.Writer, verbose bool, every time.Duration) int {
	p := &progress{out: out, start: time.Now(), running: map[string]time.Time{}}
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.mu.Lock()
				var names []string
				for pkg, since := range p.running {
					names = append(names, fmt.Sprintf("%s (%s)", pkg, time.Since(since).Truncate(time.Second)))
				}
				sort.Strings(names)
				if len(names) > 0 {
					fmt.Fprintf(p.out, "%s still running: %s\n", p.stamp(), strings.Join(names, ", "))
				}
				p.mu.Unlock()
			}
		}
	}()

	failed := false
	held := map[string][]string{} // package + test -> its output, until it passes or fails
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event: go test's own words (a flag error, say).
			p.printf("%s\n", sc.Text())
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch {
		case e.Action == "build-output":
			p.printf("%s", e.Output)
		case e.Action == "build-fail":
			failed = true
		case e.Test == "" && e.Action == "start":
			p.mu.Lock()
			p.running[e.Package] = time.Now()
			fmt.Fprintf(p.out, "%s running %s\n", p.stamp(), e.Package)
			p.mu.Unlock()
		case e.Test == "" && e.Action == "output":
			if verbose || strings.TrimSpace(e.Output) != "PASS" {
				p.printf("%s", e.Output)
			}
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			p.mu.Lock()
			delete(p.running, e.Package)
			p.mu.Unlock()
			if e.Action == "fail" {
				failed = true
				// A test binary that died mid-test (a timeout's panic, a
				// kill, a crash) ends its running tests with no event of
				// their own: their output, the stack dump included, is
				// what says where it hung, so it is printed, not dropped.
				prefix := e.Package + "\x00"
				var open []string
				for k := range held {
					if strings.HasPrefix(k, prefix) {
						open = append(open, k)
					}
				}
				sort.Strings(open)
				for _, k := range open {
					p.printf("%s", strings.Join(held[k], ""))
					delete(held, k)
				}
			}
		case e.Action == "output":
			if verbose {
				p.printf("%s", e.Output)
			} else {
				held[key] = append(held[key], e.Output)
			}
		case e.Action == "fail":
			failed = true
			p.printf("%s", strings.Join(held[key], ""))
			delete(held, key)
		case e.Action == "pass" || e.Action == "skip":
			delete(held, key)
		}
	}
	if err := sc.Err(); err != nil {
		p.printf("testprogress: read go test -json: %v\n", err)
		return 1
	}
	if failed {
		return 1
	}
	return 0
}
