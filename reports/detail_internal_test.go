package reports

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally"
)

// Read a few days at a time, the Detail rows come out in the month's
// order, each once, for both bases: with basis reported, rows charged in
// the month may date from before it.
func TestDetailReadInDateRanges(t *testing.T) {
	db := OpenTestDB(t, "tally.duckdb")
	// 300 rows over 10 October days, several per hour and meter; the
	// reported ones were charged in November, some sampled in October.
	for _, basis := range []string{"usage", "reported"} {
		if _, err := db.Exec(`INSERT INTO usage (granularity, basis, date, date_processed, meter_name, meter_sku, family, solution, unit, quantity, price, cost, currency, entitlement, entitlement_type, payment_method, payment_method_name, project, run_id, fetched_at)
SELECT 'hour', ?, TIMESTAMP '2026-10-21' + to_hours(i * 7 % 240),
       TIMESTAMP '2026-11-01' + to_hours(i % 48), 'm' || (i % 4), NULL, NULL, NULL, NULL,
       i, NULL, (i * 3)::DECIMAL(38, 12) / 7, 'USD', NULL, NULL, NULL, NULL, 'p' || (i % 3),
       '019a9c3e-7b1d-7c4e-9f0a-3b2c1d0e9f8a', TIMESTAMP '2026-11-20'
FROM range(300) t(i)`, basis); err != nil {
			t.Fatal(err)
		}
	}
	old := detailRangeRows
	detailRangeRows = 25
	defer func() { detailRangeRows = old }()
	for _, tt := range []struct {
		basis tally.Basis
		month time.Time
	}{
		{tally.BasisUsage, time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)},
		{tally.BasisReported, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(string(tt.basis), func(t *testing.T) {
			p := Period{Month: tt.month, Basis: tt.basis, Granularity: tally.Hour}
			var buf bytes.Buffer
			if err := Build(context.Background(), db, p, &buf, Options{Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }}); err != nil {
				t.Fatal(err)
			}
			f, err := excelize.OpenReader(&buf)
			if err != nil {
				t.Fatal(err)
			}
			sheet, err := f.GetRows("Detail", excelize.Options{RawCellValue: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range sheet[1:] {
				got = append(got, r[3]) // Quantity: the row's number
			}
			// The whole month in one read, as the Detail order has it.
			b := &builder{ctx: context.Background(), src: db, p: p}
			rows, err := b.query("detail", sql.Named("detail_from", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)),
				sql.Named("detail_to", time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)))
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			var want []string
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				want = append(want, fmt.Sprint(vals[7]))
			}
			ranges, total, err := b.detailRanges()
			if err != nil {
				t.Fatal(err)
			}
			if total != int64(len(want)) {
				t.Errorf("the ranges count %d rows, the sheet has %d", total, len(want))
			}
			if len(want) != 300 || len(ranges) < 5 {
				t.Fatalf("%d rows in %d ranges: the test reads too little", len(want), len(ranges))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Detail quantities, in order:\n got %s\nwant %s", strings.Join(got, " "), strings.Join(want, " "))
			}
		})
	}
}
