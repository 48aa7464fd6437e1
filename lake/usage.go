package lake

import (
	"database/sql"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tally-dev/tally"
)

// column is one column of a lake table: its name in DuckDB and in the
// table, and its Iceberg type.
type column struct {
	name     string
	typ      iceberg.Type
	required bool   // NOT NULL in the usage table
	sql      string // the SELECT expression when not the column itself
}

// costScale is usage.cost's scale: DECIMAL(38, 12), exact.
const costScale = 12

var costType = iceberg.DecimalTypeOf(38, costScale)

// usageColumns are the usage table's columns as the lake holds them: every
// one but Tally's own key_id (store/usagekeys.go), as the Parquet export.
// The run id is text, not Iceberg's uuid, for the engines that do not read
// a UUID column (Spark's and BigQuery's Parquet readers, as for Parquet).
// Field ids are the columns' positions here, from 1: a column added later
// takes the next id, never a used one.
var usageColumns = []column{
	{name: "organization", typ: iceberg.PrimitiveTypes.String},
	{name: "organization_id", typ: iceberg.PrimitiveTypes.String},
	{name: "granularity", typ: iceberg.PrimitiveTypes.String, required: true},
	{name: "basis", typ: iceberg.PrimitiveTypes.String, required: true},
	{name: "date", typ: iceberg.PrimitiveTypes.Timestamp, required: true},
	{name: "date_processed", typ: iceberg.PrimitiveTypes.Timestamp},
	{name: "meter_name", typ: iceberg.PrimitiveTypes.String, required: true},
	{name: "meter_sku", typ: iceberg.PrimitiveTypes.String},
	{name: "family", typ: iceberg.PrimitiveTypes.String},
	{name: "solution", typ: iceberg.PrimitiveTypes.String},
	{name: "unit", typ: iceberg.PrimitiveTypes.String},
	{name: "quantity", typ: iceberg.PrimitiveTypes.Float64, required: true},
	{name: "price", typ: iceberg.PrimitiveTypes.Float64},
	// Cast to text in DuckDB and parsed here: exact, whatever the driver
	// makes of a DECIMAL.
	{name: "cost", typ: costType, sql: "CAST(cost AS VARCHAR)"},
	{name: "currency", typ: iceberg.PrimitiveTypes.String, required: true},
	{name: "entitlement", typ: iceberg.PrimitiveTypes.String},
	{name: "entitlement_type", typ: iceberg.PrimitiveTypes.String},
	{name: "payment_method", typ: iceberg.PrimitiveTypes.String},
	{name: "payment_method_name", typ: iceberg.PrimitiveTypes.String},
	{name: "project", typ: iceberg.PrimitiveTypes.String},
	{name: "run_id", typ: iceberg.PrimitiveTypes.String, required: true, sql: "CAST(run_id AS VARCHAR)"},
	{name: "fetched_at", typ: iceberg.PrimitiveTypes.Timestamp, required: true},
}

// UsageColumns are the names of the usage table's columns in the lake, in
// order.
func UsageColumns() []string {
	out := make([]string, len(usageColumns))
	for i, c := range usageColumns {
		out[i] = c.name
	}
	return out
}

// usageSchema is the usage table's Iceberg schema.
func usageSchema() *iceberg.Schema {
	fields := make([]iceberg.NestedField, len(usageColumns))
	for i, c := range usageColumns {
		fields[i] = iceberg.NestedField{ID: i + 1, Name: c.name, Type: c.typ, Required: c.required}
	}
	return iceberg.NewSchema(0, fields...)
}

// usageSpec partitions the usage table by organization and the month of
// date: a partition is what one (organization, month) overwrite replaces.
func usageSpec(sc *iceberg.Schema) iceberg.PartitionSpec {
	org, _ := sc.FindFieldByName("organization")
	date, _ := sc.FindFieldByName("date")
	return iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{org.ID}, FieldID: 1000, Name: "organization", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{date.ID}, FieldID: 1001, Name: "date_month", Transform: iceberg.MonthTransform{}},
	)
}

// usageSelect is the SELECT list reading usageColumns from DuckDB's usage
// table.
func usageSelect() string {
	parts := make([]string, len(usageColumns))
	for i, c := range usageColumns {
		parts[i] = c.name
		if c.sql != "" {
			parts[i] = c.sql + " AS " + c.name
		}
	}
	return strings.Join(parts, ", ")
}

// batchRows bounds a record batch: the rows held in memory at once while
// they stream from DuckDB to the Parquet writer.
const batchRows = 64 << 10

// recordsOf turns DuckDB rows of usageSelect into Arrow record batches
// of schema sc (the table's, with its field ids), each handed over to
// whoever takes it. It closes rows.
func recordsOf(rows *sql.Rows, sc *arrow.Schema) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		defer rows.Close()
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		dest := make([]any, len(usageColumns))
		var (
			texts = make([]sql.NullString, len(usageColumns))
			times = make([]sql.NullTime, len(usageColumns))
			nums  = make([]sql.NullFloat64, len(usageColumns))
		)
		for i, c := range usageColumns {
			switch c.typ.(type) {
			case iceberg.TimestampType:
				dest[i] = &times[i]
			case iceberg.Float64Type:
				dest[i] = &nums[i]
			default:
				dest[i] = &texts[i]
			}
		}
		n := 0
		// The batch yielded is the reader's (array.ReaderFromIter releases
		// it on its next Next).
		flush := func() bool {
			n = 0
			return yield(b.NewRecordBatch(), nil)
		}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				yield(nil, err)
				return
			}
			for i, c := range usageColumns {
				if err := appendValue(b.Field(i), c, texts[i], times[i], nums[i]); err != nil {
					yield(nil, err)
					return
				}
			}
			if n++; n == batchRows && !flush() {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, err)
			return
		}
		if n > 0 {
			flush()
		}
	}
}

func appendValue(fb array.Builder, c column, text sql.NullString, ts sql.NullTime, num sql.NullFloat64) error {
	switch c.typ.(type) {
	case iceberg.TimestampType:
		if !ts.Valid {
			fb.AppendNull()
			return nil
		}
		fb.(*array.TimestampBuilder).Append(arrow.Timestamp(ts.Time.UTC().Truncate(time.Microsecond).UnixMicro()))
	case iceberg.Float64Type:
		if !num.Valid {
			fb.AppendNull()
			return nil
		}
		fb.(*array.Float64Builder).Append(num.Float64)
	case iceberg.DecimalType:
		if !text.Valid {
			fb.AppendNull()
			return nil
		}
		d, err := tally.ParseDecimal(text.String)
		if err != nil {
			return fmt.Errorf("%s %q: %w", c.name, text.String, err)
		}
		v, err := d.Scaled(costScale)
		if err != nil {
			return fmt.Errorf("%s %q: %w", c.name, text.String, err)
		}
		fb.(*array.Decimal128Builder).Append(decimal128.FromBigInt(v))
	default:
		if !text.Valid {
			fb.AppendNull()
			return nil
		}
		fb.(*array.StringBuilder).Append(text.String)
	}
	return nil
}

// arrowSchema is sc as Arrow, each field carrying its Iceberg field id.
func arrowSchema(sc *iceberg.Schema) (*arrow.Schema, error) {
	return table.SchemaToArrowSchema(sc, nil, true, false)
}
