package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/tls"
	"database/sql"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/testkit/prooftest"
)

// The secrets of TestSecurityEchoedSecretsStoredNowhere: each is sent to a
// peer that echoes everything it receives, in every form.
const (
	echoSMTPPassword = "Mail-Pa55word-9f3e"
	echoHookSecret   = "hook-signing-secret-41c7"
	echoHookPath     = "/services/T0ECHO/B0ECHO/Zq8wHookPathSecret"
	echoHookQuery    = "key=QueryKeySecret77"
)

// echoForms is every form a peer may echo s in.
func echoForms(s string) []string {
	out := []string{s, strings.ToUpper(s), strings.ToLower(s), url.QueryEscape(s), url.PathEscape(s),
		base64.StdEncoding.EncodeToString([]byte(s)), base64.URLEncoding.EncodeToString([]byte(s))}
	var pct strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&pct, "%%%02x", s[i])
	}
	return append(out, pct.String())
}

// echoSMTP is a mail server (implicit TLS) that refuses every AUTH with a
// 535 quoting what it was sent: the AUTH PLAIN string as sent, and the
// password in every form.
func echoSMTP(t *testing.T, cert tls.Certificate) (port int, auths *atomic.Int64) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	auths = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				r := bufio.NewReader(c)
				fmt.Fprint(c, "220 echo.test ESMTP\r\n")
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					line = strings.TrimRight(line, "\r\n")
					verb := strings.ToUpper(strings.Fields(line + " x")[0])
					switch verb {
					case "EHLO", "HELO":
						fmt.Fprint(c, "250-echo.test\r\n250 AUTH PLAIN\r\n")
					case "AUTH":
						f := strings.Fields(line)
						resp := ""
						if len(f) >= 3 {
							resp = f[2]
						} else {
							fmt.Fprint(c, "334 \r\n")
							if resp, err = r.ReadString('\n'); err != nil {
								return
							}
							resp = strings.TrimSpace(resp)
						}
						auths.Add(1)
						dec, _ := base64.StdEncoding.DecodeString(resp)
						pw := string(dec[bytes.LastIndexByte(dec, 0)+1:])
						fmt.Fprintf(c, "535 5.7.8 authentication failed for <%s> (password %s)\r\n", resp, strings.Join(echoForms(pw), " "))
					case "QUIT":
						fmt.Fprint(c, "221 bye\r\n")
						return
					default:
						fmt.Fprintf(c, "250 ok %s\r\n", line)
					}
				}
			}(c)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, auths
}

// TestSecurityEchoedSecretsStoredNowhere runs the nightly job against
// peers that echo every secret they get back in every form: the interface
// quotes the Authorization header, the mail server quotes the AUTH string
// and the password, the webhook quotes its path, query and signature
// secret. No secret, in any form, is in what tally printed (logs and
// errors), in the database or the analysts' copy (runs.error,
// alerts.last_error, every text column), in a workbook or an export.
func TestSecurityEchoedSecretsStoredNowhere(t *testing.T) {
	bin := tallyBinary(t)
	now := time.Now().UTC()
	start := tally.Month.Truncate(now).AddDate(0, -1, 0)
	s := sim.New(sim.Options{Token: prooftest.Token, Seed: 5, Start: start, Now: func() time.Time { return now }})
	faults := prooftest.NewFaults(s)
	faults.Set(func(w http.ResponseWriter, r *http.Request, q prooftest.Request) bool {
		if q.Usage && q.Attempt == 1 {
			auth := r.Header.Get("Authorization")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":{"code":"Echo","detail":"you sent %s"},"ref":"r1","status":500}`, strings.Join(echoForms(auth), " "))
			return true
		}
		return false
	})
	api := prooftest.Serve(t, faults)

	var hooks atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hooks.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "no hook at %s %s %s", r.URL.RequestURI(), strings.Join(echoForms(r.URL.Path), " "), strings.Join(echoForms(echoHookSecret), " "))
	}))
	defer hook.Close()

	// The mail server's certificate is trusted through SSL_CERT_FILE, as
	// a company's own CA would be.
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	cert := tlsSrv.TLS.Certificates[0]
	tlsSrv.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	smtpPort, auths := echoSMTP(t, cert)

	yaml := fmt.Sprintf(`api:
  base_url: %s
  token_env: ECHO_TOKEN
  max_retries: 2
usage:
  granularity: day
  start: %s
  lookback: 2d
store:
  path: data/tally.duckdb
reports:
  dir: reports
  months: [previous, current]
  deliver:
    smtp: {host: 127.0.0.1, port: %d, security: tls, username: tally@example.com, password_env: ECHO_SMTP_PASSWORD,
           from: tally@example.com, to: [finance@example.com], subject: "Tally {month}"}
export:
  dir: exports
budgets:
  - {name: all-usd, scope: all, currency: USD, amount: 1, actual: [1], forecast: []}
alerts:
  webhook: {url: "%s%s?%s", secret_env: ECHO_HOOK_SECRET, timeout: 5s}
schedule:
  jobs:
    - {name: nightly, cron: "0 3 * * *", run: [fetch, report, deliver, alerts, export]}
`, api, start.Format(tally.DateLayout), smtpPort, hook.URL, echoHookPath, echoHookQuery)
	if err := os.WriteFile(filepath.Join(dir, "tally.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "ECHO_TOKEN="+prooftest.Token, "ECHO_SMTP_PASSWORD="+echoSMTPPassword,
		"ECHO_HOOK_SECRET="+echoHookSecret, "SSL_CERT_FILE="+caFile)
	var said bytes.Buffer
	code, out, errs := proofCLI(t, bin, dir, env, "run", "--job", "nightly", "--config", "tally.yaml", "--log-level", "debug", "--log-format", "json")
	said.WriteString(out + errs)
	if code == 0 || code == 2 {
		t.Fatalf("tally run --job nightly: exit %d, want the failed deliveries and alerts to fail the run\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{
		{"status", "--config", "tally.yaml"},
		{"alerts", "--config", "tally.yaml"},
		{"query", "--config", "tally.yaml", "--format", "json", "select error from runs union all select last_error from alerts"},
	} {
		_, out, errs := proofCLI(t, bin, dir, env, append(args, "--log-format", "console")...)
		said.WriteString(out + errs)
	}
	if auths.Load() == 0 || hooks.Load() == 0 {
		t.Fatalf("the mail server saw %d AUTH and the webhook %d posts: the echoes were never made", auths.Load(), hooks.Load())
	}
	if !regexp.MustCompile(`535 .{0,8}5\.7\.8 authentication failed for <[^>]*\[redacted\]`).MatchString(said.String()) || !strings.Contains(said.String(), "answered 400 Bad Request: no hook at [redacted]") {
		t.Fatalf("the echoes are not in what tally printed, so the search below would prove nothing:\n%s", said.String())
	}

	secrets := map[string]string{"the API token": prooftest.Token, "the SMTP password": echoSMTPPassword,
		"the webhook secret": echoHookSecret, "the webhook path": echoHookPath, "the webhook query": echoHookQuery}
	var forms [][2]string
	for what, sec := range secrets {
		for _, f := range echoForms(sec) {
			forms = append(forms, [2]string{what, f})
		}
	}
	// The AUTH PLAIN string itself, and the password's part of it.
	plain := base64.StdEncoding.EncodeToString([]byte("\x00tally@example.com\x00" + echoSMTPPassword))
	forms = append(forms, [2]string{"the AUTH PLAIN string", plain}, [2]string{"the password inside AUTH PLAIN", plain[28 : len(plain)-4]})
	search := func(where string, text []byte) {
		t.Helper()
		low := bytes.ToLower(text)
		for _, f := range forms {
			if bytes.Contains(low, bytes.ToLower([]byte(f[1]))) {
				t.Errorf("%s (as %q) is in %s", f[0], f[1], where)
			}
		}
	}
	search("what tally printed", said.Bytes())

	parquetDB, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer parquetDB.Close()
	files := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if d.IsDir() || path == caFile || path == filepath.Join(dir, "tally.yaml") {
			return nil
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		search(path, b)
		switch {
		case strings.HasSuffix(path, ".xlsx"):
			for name, part := range echoZipParts(t, path) {
				search(path+"!"+name, part)
			}
		case strings.HasSuffix(path, ".duckdb"):
			prooftest.WithDB(t, path, func(db *sql.DB) { search(path+" (its text columns)", echoTextColumns(t, db)) })
		case strings.HasSuffix(path, ".parquet"):
			var all string
			if err := parquetDB.QueryRow(`SELECT coalesce(string_agg(CAST(p AS VARCHAR), ' '), '') FROM read_parquet(?) p`, path).Scan(&all); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			search(path+" (its rows)", []byte(all))
		}
		return nil
	})
	for _, want := range []string{"tally.duckdb", "tally.published.duckdb"} {
		if _, err := os.Stat(filepath.Join(dir, "data", want)); err != nil {
			t.Errorf("no %s to search: %v", want, err)
		}
	}
	if files < 6 {
		t.Errorf("only %d files searched: databases, workbooks and exports expected", files)
	}
}

// echoTextColumns is every text value of every table of db, as one text.
func echoTextColumns(t *testing.T, db *sql.DB) []byte {
	t.Helper()
	// Tables only: every view reads them.
	cols := proofTextColumns(t, db, `SELECT c.table_name, c.column_name FROM duckdb_columns() c JOIN duckdb_tables() t USING (database_name, schema_name, table_name)
WHERE NOT c.internal AND c.data_type IN ('VARCHAR', 'JSON')`)
	var all bytes.Buffer
	errorsSeen := 0
	for _, c := range cols {
		var v string
		q := fmt.Sprintf(`SELECT coalesce(string_agg(CAST(%s AS VARCHAR), ' '), '') FROM %s`, sqlIdent(c[1]), sqlIdent(c[0]))
		if err := db.QueryRow(q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if (c[0] == "runs" && c[1] == "error") || (c[0] == "alerts" && c[1] == "last_error") {
			if strings.Contains(v, "[redacted]") {
				errorsSeen++
			}
		}
		all.WriteString(v + "\n")
	}
	if errorsSeen < 2 {
		t.Errorf("runs.error and alerts.last_error do not both hold a redacted echo (%d do): the search saw nothing", errorsSeen)
	}
	return all.Bytes()
}

// echoZipParts is every part of a workbook, uncompressed.
func echoZipParts(t *testing.T, path string) map[string][]byte {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	parts := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		parts[f.Name] = b
	}
	return parts
}
