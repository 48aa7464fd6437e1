package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tally-dev/tally/internal/testkit/s3test"
	"github.com/tally-dev/tally/lake"
)

func TestMain(m *testing.M) {
	code := m.Run()
	s3test.Stop()
	os.Exit(code)
}

func TestRequestsRefusedAndAnswered(t *testing.T) {
	dir := t.TempDir()
	req := lake.Request{Op: "state", Catalog: lake.Config{SQLite: filepath.Join(dir, "catalog.db"), Warehouse: filepath.Join(dir, "warehouse")},
		Table: lake.UsageTable, Columns: lake.UsageColumns, Source: "/srv/tally.duckdb"}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, args, stdin, log string
		code                   int
	}{
		{"no command", "", "", "give one of state, replace, files, download, maintain or version", 2},
		{"not JSON", "state", "state please", "read the request", 2},
		{"unknown field", "state", `{"op":"state","token":"x"}`, `unknown field "token"`, 2},
		{"op not the command", "replace", string(body), `the request's op "state" is not the command "replace"`, 2},
		{"unknown op", "drop", strings.Replace(string(body), `"state"`, `"drop"`, 1), `op "drop" is not one of state, replace, files, download, maintain`, 1},
		{"relative warehouse", "state", strings.Replace(string(body), dir, "rel", 2), `the warehouse "rel/warehouse" must be an absolute path or s3://BUCKET[/PREFIX]`, 1},
	} {
		var out, log bytes.Buffer
		code := run(context.Background(), strings.Fields(c.args), strings.NewReader(c.stdin), &out, &log)
		if code != c.code || !strings.Contains(strings.ReplaceAll(log.String(), `\"`, `"`), c.log) || out.Len() != 0 {
			t.Errorf("%s: exit %d, log %q, answer %q; want exit %d and a log naming %q", c.name, code, log.String(), out.String(), c.code, c.log)
		}
	}

	var out, log bytes.Buffer
	if code := run(context.Background(), []string{"state"}, bytes.NewReader(body), &out, &log); code != 0 {
		t.Fatalf("state: exit %d, log %s", code, log.String())
	}
	var st lake.State
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Table != "tally.usage" || st.Found || !strings.Contains(st.Location, filepath.Join(dir, "warehouse")) {
		t.Fatalf("state of a new table: %+v", st)
	}
}

// TestSecretsNeverInItsLog: keys an S3 server refuses fail the request
// with the server's word for it, and neither key, nor the catalog's
// password, is in the log tally relays; a line that quotes one has it
// redacted.
func TestSecretsNeverInItsLog(t *testing.T) {
	dir := t.TempDir()
	warehouse, s3 := s3test.Warehouse(t)
	s3.AccessKey, s3.SecretKey = "AKIAWRONGKEY3F7A", "wrong/secret+key-9b1c"
	req := lake.Request{Op: "state", Catalog: lake.Config{SQLite: filepath.Join(dir, "catalog.db"), Password: "pw-never-logged-77", Warehouse: warehouse, S3: s3},
		Table: lake.UsageTable, Columns: lake.UsageColumns, Source: "/srv/tally.duckdb"}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var out, log bytes.Buffer
	code := run(context.Background(), []string{"state"}, bytes.NewReader(body), &out, &log)
	if code != 1 || !strings.Contains(log.String(), "PutObject") || !strings.Contains(log.String(), "access key") {
		t.Fatalf("wrong keys: exit %d, log %s; want exit 1 and the server refusing the access key", code, log.String())
	}
	for _, secret := range []string{s3.AccessKey, s3.SecretKey, "pw-never-logged-77"} {
		if strings.Contains(log.String(), secret) {
			t.Fatalf("the log holds the secret %q: %s", secret, log.String())
		}
	}
	r := &redactor{w: &log}
	r.hide(s3.AccessKey, `quote"d`)
	log.Reset()
	fmt.Fprintf(r, "{\"message\":\"denied %s, %s\"}\n", s3.AccessKey, `quote\"d`)
	if got := log.String(); strings.Contains(got, s3.AccessKey) || strings.Contains(got, "quote") {
		t.Fatalf("redacted line %s", got)
	}
}
