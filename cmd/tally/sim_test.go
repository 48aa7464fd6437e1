package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// startSimCLI runs `tally sim args…` through the cobra root and returns the
// base URL it prints, a cancel that interrupts it, and its result.
func startSimCLI(t *testing.T, args ...string) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	started := false
	root := newRootCmd(&started)
	root.SetOut(pw)
	root.SetErr(io.Discard)
	root.SetArgs(append([]string{"sim", "--log-format", "json", "--log-level", "error"}, args...))
	done := make(chan error, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		pw.Close()
		done <- err
	}()
	lines := bufio.NewScanner(pr)
	var out []string
	for lines.Scan() {
		out = append(out, lines.Text())
		if url, ok := strings.CutPrefix(lines.Text(), "listening on "); ok {
			go io.Copy(io.Discard, pr)
			return url, cancel, done
		}
	}
	t.Fatalf("tally sim printed no address: %q, result %v", out, <-done)
	return "", nil, nil
}

func TestSimServesUntilInterrupted(t *testing.T) {
	url, cancel, done := startSimCLI(t, "--addr", "127.0.0.1:0", "--token", "cli-token", "--seed", "4", "--page-size", "2")
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("base URL %q", url)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/api/v1/projects", "cli-token"); code != 200 || !strings.Contains(body, `"@odata.nextLink"`) {
		t.Errorf("with the token: %d %s; want a first page of 2 with a next link", code, body)
	}
	if code, body := get("/api/v1/projects", "sim-token"); code != 401 || !strings.Contains(body, `"Unauthorized"`) {
		t.Errorf("with another token: %d %s", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("interrupted sim returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sim did not stop after the interrupt")
	}
	if _, err := client.Get(url + "/api/v1/projects"); err == nil {
		t.Error("the sim still answers after stopping")
	}
}

func TestSimPrintsTheHint(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // serve nothing: print the hint, then stop at once
	var out strings.Builder
	o := &simOptions{addr: "127.0.0.1:0", token: "hint-token", seed: 1, pageSize: 100}
	if err := runSim(ctx, o, &out, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listening on http://127.0.0.1:", "export TALLY_BASE_URL=http://127.0.0.1:", "export TALLY_API_TOKEN=hint-token"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
}

func TestSimUsageErrors(t *testing.T) {
	cases := map[string]struct {
		args    []string
		mention string
	}{
		"bad faults":      {[]string{"--faults", "429=2"}, `"429=2"`},
		"unknown fault":   {[]string{"--faults", "boom=0.1"}, "allowed: 429, 429bare, 5xx, cut, slow, refuse, seed"},
		"bad page size":   {[]string{"--page-size", "0"}, "--page-size 0"},
		"bad address":     {[]string{"--addr", "8080"}, `--addr "8080"`},
		"empty token":     {[]string{"--token", ""}, "--token"},
		"bad seed":        {[]string{"--seed", "x"}, "seed"},
		"stray arguments": {[]string{"now"}, "now"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			started := false
			root := newRootCmd(&started)
			root.SetOut(io.Discard)
			root.SetErr(io.Discard)
			root.SetArgs(append([]string{"sim", "--addr", "127.0.0.1:0"}, c.args...))
			err := root.ExecuteContext(context.Background())
			if err != nil && !started {
				var ue usageError
				if !errors.As(err, &ue) {
					err = usageError{err}
				}
			}
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v, want a usage error (exit 2)", err)
			}
			if !strings.Contains(err.Error(), c.mention) {
				t.Errorf("error %q does not mention %q", err, c.mention)
			}
		})
	}
}
