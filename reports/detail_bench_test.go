package reports_test

import (
	"context"
	"database/sql"
	"io"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/reports"
)

// benchDB is a month of hourly usage, n rows, in a temp-dir database.
func benchDB(b *testing.B, n int) *sql.DB {
	b.Helper()
	db := reports.OpenTestDB(b, "bench.duckdb")
	// Rows spread over the month's hours, six meters, 224 projects, two
	// currencies, some entitlements and uncharged rows.
	if _, err := db.Exec(`INSERT INTO usage (granularity, basis, date, date_processed, meter_name, meter_sku, family, solution, unit, quantity, price, cost, currency, entitlement, entitlement_type, payment_method, payment_method_name, project, run_id, fetched_at)
SELECT 'hour', 'usage',
       TIMESTAMP '2026-01-01' + to_hours((i * 744 // ?)::BIGINT),
       CASE WHEN i % 50 = 0 THEN NULL ELSE TIMESTAMP '2026-01-01' + to_hours((i * 744 // ?)::BIGINT + 2) END,
       'meter_' || (i % 6), CASE WHEN i % 6 = 5 THEN NULL ELSE 'SKU-' || (i % 6) END, 'Media Services', 'Encoding',
       CASE WHEN i % 6 = 5 THEN NULL ELSE 'minutes' END,
       (i % 100000) / 10.0, 0.0125, ((i % 100000) * 125)::DECIMAL(38, 12) / 100000,
       CASE WHEN i % 3 = 0 THEN 'EUR' ELSE 'USD' END,
       CASE WHEN i % 5 = 1 THEN '0f6c2a52-8d1e-4c55-9a43-1b7e2f0a9c01' END, CASE WHEN i % 5 = 1 THEN 'license' END,
       '2439471b-5002-49b6-84d1-8fb30e639959', 'Marketplace B private offer', 'project-' || (1000 + i // 6 % 224),
       '019a9c3e-7b1d-7c4e-9f0a-3b2c1d0e9f8a', TIMESTAMP '2026-02-01 02:30:00'
FROM range(?) t(i)`, n, n, n); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkBuild writes the workbook of a month of 100,000 usage rows (all
// sheets; the Detail sheet is nearly all of the work) to io.Discard.
func BenchmarkBuild(b *testing.B) {
	const n = 100_000
	db := benchDB(b, n)
	p := reports.Period{Month: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Basis: tally.BasisUsage, Granularity: tally.Hour}
	opts := reports.Options{Now: func() time.Time { return time.Date(2026, 2, 15, 0, 0, 0, 0, time.UTC) }}
	b.ReportAllocs()
	for b.Loop() {
		if err := reports.Build(context.Background(), db, p, io.Discard, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
