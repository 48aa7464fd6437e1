package focuscheck

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// good is FOCUS 1.3 metadata as Tally's export writes it, small.
const good = `{
  "DataGenerator": {"DataGenerator": "Tally"},
  "DatasetInstances": [
    {"DatasetInstanceId": "cu", "DatasetInstanceName": "Cost and Usage (day, usage)", "FocusDatasetId": "CostAndUsage"},
    {"DatasetInstanceId": "cc", "DatasetInstanceName": "Contract Commitment (day, usage)", "FocusDatasetId": "ContractCommitment"}
  ],
  "Schemas": [
    {"SchemaId": "cu-1.3", "FocusVersion": "1.3", "CreationDate": "2026-11-25T00:00:00Z", "DatasetInstanceId": "cu"},
    {"SchemaId": "cc-1.3", "FocusVersion": "1.3", "CreationDate": "2026-11-25T00:00:00Z", "DatasetInstanceId": "cc"}
  ],
  "Recency": [
    {"DatasetInstanceId": "cu", "RecencyLastUpdated": "2026-11-25T00:00:00Z", "TimeSectors": [
      {"TimeSectorStart": "2026-10-01T00:00:00Z", "TimeSectorEnd": "2026-10-02T00:00:00Z", "TimeSectorComplete": true, "TimeSectorLastUpdated": "2026-11-05T00:00:00Z"}
    ]},
    {"DatasetInstanceId": "cc", "RecencyLastUpdated": "2026-11-25T00:00:00Z", "DatasetInstanceLastUpdated": "2026-11-24T00:00:00Z", "DatasetInstanceComplete": false}
  ]
}`

// Each metadata requirement the checker holds fails on metadata broken
// that way; the good metadata passes.
func TestMetadataViolations(t *testing.T) {
	if v := MetadataViolations([]byte(good), "1.3"); len(v) > 0 {
		t.Fatalf("good metadata: %q", v)
	}
	for _, c := range []struct {
		name   string
		change func(m map[string]any)
		want   string
	}{
		{"no generator", func(m map[string]any) { delete(m, "DataGenerator") }, "DataGenerator is an object naming the data generator"},
		{"no instances", func(m map[string]any) { m["DatasetInstances"] = []any{} }, "DatasetInstances is empty"},
		{"unknown dataset", func(m map[string]any) { instance(m, 0)["FocusDatasetId"] = "Invoices" }, `DatasetInstance cu has FocusDatasetId "Invoices"`},
		{"other version", func(m map[string]any) { schema(m, 0)["FocusVersion"] = "1.2" }, "Schema cu-1.3: FocusVersion is not 1.3"},
		{"creation date format", func(m map[string]any) { schema(m, 1)["CreationDate"] = "2026-11-25" }, "Schema cc-1.3: CreationDate is not a FOCUS date/time"},
		{"recency null", func(m map[string]any) { m["Recency"] = nil }, "Recency is null"},
		{"recency twice", func(m map[string]any) { m["Recency"] = append(m["Recency"].([]any), recency(m, 1)) }, "DatasetInstance cc has 2 recency objects, want 1"},
		{"last updated format", func(m map[string]any) { recency(m, 0)["RecencyLastUpdated"] = "yesterday" }, "Recency cu: RecencyLastUpdated is not a FOCUS date/time"},
		{"no time sectors", func(m map[string]any) { recency(m, 0)["TimeSectors"] = []any{} }, "Recency cu: a time series has TimeSectors, at least one"},
		{"sector backwards", func(m map[string]any) {
			recency(m, 0)["TimeSectors"].([]any)[0].(map[string]any)["TimeSectorEnd"] = "2026-09-30T00:00:00Z"
		}, "Recency cu: time sector 2026-10-01T00:00:00Z ends before it starts"},
		{"sector incomplete", func(m map[string]any) {
			delete(recency(m, 0)["TimeSectors"].([]any)[0].(map[string]any), "TimeSectorComplete")
		},
			"Recency cu: a time sector lacks start, end, completeness or last update, or a time is not a FOCUS date/time"},
		{"not time series without complete", func(m map[string]any) { delete(recency(m, 1), "DatasetInstanceComplete") },
			"Recency cc: a dataset that is not a time series has DatasetInstanceComplete and DatasetInstanceLastUpdated"},
		{"recency of nothing", func(m map[string]any) { recency(m, 1)["DatasetInstanceId"] = "zz" }, "Recency zz: no such dataset instance"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal([]byte(good), &m); err != nil {
				t.Fatal(err)
			}
			c.change(m)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			v := MetadataViolations(b, "1.3")
			if !slices.Contains(v, c.want) {
				t.Errorf("violations %q, want %q", v, c.want)
			}
		})
	}
	if v := MetadataViolations([]byte("[1"), "1.3"); len(v) != 1 || !strings.HasPrefix(v[0], "metadata is not a JSON object") {
		t.Errorf("not JSON: %q", v)
	}
}

func instance(m map[string]any, i int) map[string]any {
	return m["DatasetInstances"].([]any)[i].(map[string]any)
}
func schema(m map[string]any, i int) map[string]any  { return m["Schemas"].([]any)[i].(map[string]any) }
func recency(m map[string]any, i int) map[string]any { return m["Recency"].([]any)[i].(map[string]any) }
