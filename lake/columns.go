package lake

// Column is one column of a lake table: its name in DuckDB and in the
// table, its Iceberg field id and type, and the SELECT expression that
// reads it from DuckDB when that is not the column itself.
type Column struct {
	Name string `json:"name"`
	ID   int    `json:"id"`
	// Type is the Iceberg type as the spec writes it: string, double,
	// timestamp, decimal(38,12).
	Type string `json:"type"`
	SQL  string `json:"-"`
}

// UsageTable is the usage table's name in the namespace.
const UsageTable = "usage"

// CostType is usage.cost's type in the lake: exact, as DuckDB holds it.
const CostType = "decimal(38,12)"

// UsageColumns are the usage table's columns as the lake holds them: every
// one but Tally's own key_id (store/usagekeys.go), as the Parquet export.
// The run id is text, not Iceberg's uuid, for the engines that do not read
// a UUID column (Spark's and BigQuery's Parquet readers, as for Parquet).
// Field ids are the columns' positions here, from 1: a column added later
// takes the next id, never a used one. Every column is optional in the
// table: DuckDB writes every Parquet column optional, and Iceberg refuses
// a file whose column is optional for a required field.
var UsageColumns = []Column{
	{Name: "organization", ID: 1, Type: "string"},
	{Name: "organization_id", ID: 2, Type: "string"},
	{Name: "granularity", ID: 3, Type: "string"},
	{Name: "basis", ID: 4, Type: "string"},
	{Name: "date", ID: 5, Type: "timestamp"},
	{Name: "date_processed", ID: 6, Type: "timestamp"},
	{Name: "meter_name", ID: 7, Type: "string"},
	{Name: "meter_sku", ID: 8, Type: "string"},
	{Name: "family", ID: 9, Type: "string"},
	{Name: "solution", ID: 10, Type: "string"},
	{Name: "unit", ID: 11, Type: "string"},
	{Name: "quantity", ID: 12, Type: "double"},
	{Name: "price", ID: 13, Type: "double"},
	{Name: "cost", ID: 14, Type: CostType, SQL: "CAST(cost AS DECIMAL(38, 12))"},
	{Name: "currency", ID: 15, Type: "string"},
	{Name: "entitlement", ID: 16, Type: "string"},
	{Name: "entitlement_type", ID: 17, Type: "string"},
	{Name: "payment_method", ID: 18, Type: "string"},
	{Name: "payment_method_name", ID: 19, Type: "string"},
	{Name: "project", ID: 20, Type: "string"},
	{Name: "run_id", ID: 21, Type: "string", SQL: "CAST(run_id AS VARCHAR)"},
	{Name: "fetched_at", ID: 22, Type: "timestamp"},
}
