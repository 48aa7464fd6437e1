package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" driver

	tallysql "github.com/tally-dev/tally/sql"
)

// anchorInsert is DuckDB loading the page files by itself: read_json over
// every file, the rows unnested from "value", typed as the usage table
// types them, into Tally's own usage table.
const anchorInsert = `INSERT INTO usage (granularity, basis, date, date_processed, meter_name, meter_sku, family, solution, unit, quantity, price, cost, currency, entitlement, entitlement_type, payment_method, payment_method_name, project, run_id, fetched_at)
SELECT 'hour', 'usage', v.date, v.dateProcessed, v.meterName, v.meterSku, v.family, v.solution, v.unit,
       v.quantity, v.price, CAST(v.cost AS DECIMAL(38, 12)), v.currency, v.entitlement, v.entitlementType,
       v.paymentMethod, v.paymentMethodName, v.project, uuidv7(), now()::TIMESTAMP
FROM (SELECT unnest(value) AS v FROM read_json(?, format = 'unstructured', maximum_object_size = 268435456,
    columns = {value: 'STRUCT("date" TIMESTAMP, "dateProcessed" TIMESTAMP, "meterName" VARCHAR,
        "meterSku" VARCHAR, "family" VARCHAR, "solution" VARCHAR, "unit" VARCHAR, "quantity" DOUBLE,
        "price" DOUBLE, "cost" VARCHAR, "currency" VARCHAR, "entitlement" VARCHAR,
        "entitlementType" VARCHAR, "paymentMethod" VARCHAR, "paymentMethodName" VARCHAR,
        "project" VARCHAR)[]'}))`

// runAnchor loads the page files of -dir into a new on-disk database with
// DuckDB's read_json, into Tally's usage table (its migrations applied),
// the speed Tally's fetch is measured against. The database is closed,
// and so checkpointed, before the time is taken.
func runAnchor(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("anchor", flag.ExitOnError)
	dir := flags.String("dir", "", "folder of page files written by gen")
	db := flags.String("db", "", "database file to create (removed first)")
	flags.Parse(args)
	if *dir == "" || *db == "" {
		return errors.New("anchor: -dir and -db are required")
	}
	m, err := readManifest(*dir)
	if err != nil {
		return fmt.Errorf("anchor: read manifest: %w", err)
	}
	os.Remove(*db)
	os.Remove(*db + ".wal")
	began := time.Now()
	// DuckDB as it comes (no setting of Tally's), with Tally's usage table.
	conn, err := sql.Open("duckdb", *db)
	if err != nil {
		return err
	}
	defer conn.Close()
	names, err := fs.Glob(tallysql.Schema, "schema/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		text, err := fs.ReadFile(tallysql.Schema, name)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, tallysql.SchemaText(string(text), "default", "")); err != nil {
			return fmt.Errorf("anchor: %s: %w", name, err)
		}
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	res, err := conn.ExecContext(ctx, anchorInsert, filepath.Join(abs, "w*-p*.json"))
	if err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	n, _ := res.RowsAffected()
	if err := conn.Close(); err != nil {
		return err
	}
	if int(n) != m.Rows {
		return fmt.Errorf("anchor: loaded %d rows, the pages hold %d", n, m.Rows)
	}
	fmt.Fprintf(os.Stderr, "anchor: %d rows in %s\n", n, time.Since(began).Round(time.Millisecond))
	return nil
}
