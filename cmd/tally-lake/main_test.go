package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/lake"
)

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
		{"no command", "", "", "give one of state, replace, files, maintain or version", 2},
		{"not JSON", "state", "state please", "read the request", 2},
		{"unknown field", "state", `{"op":"state","token":"x"}`, `unknown field "token"`, 2},
		{"op not the command", "replace", string(body), `the request's op "state" is not the command "replace"`, 2},
		{"unknown op", "drop", strings.Replace(string(body), `"state"`, `"drop"`, 1), `op "drop" is not one of state, replace, files, maintain`, 1},
		{"relative catalog", "state", strings.Replace(string(body), dir, "rel", 2), "must be an absolute path", 1},
	} {
		var out, log bytes.Buffer
		code := run(context.Background(), strings.Fields(c.args), strings.NewReader(c.stdin), &out, zerolog.New(&log))
		if code != c.code || !strings.Contains(strings.ReplaceAll(log.String(), `\"`, `"`), c.log) || out.Len() != 0 {
			t.Errorf("%s: exit %d, log %q, answer %q; want exit %d and a log naming %q", c.name, code, log.String(), out.String(), c.code, c.log)
		}
	}

	var out, log bytes.Buffer
	if code := run(context.Background(), []string{"state"}, bytes.NewReader(body), &out, zerolog.New(&log)); code != 0 {
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
