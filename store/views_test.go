package store

import (
	"slices"
	"strings"
	"testing"
)

// A view comes after the views it reads; names in comments do not count;
// otherwise the order is by name; a cycle is an error naming it.
func TestViewOrder(t *testing.T) {
	got, err := viewOrder(map[string]string{
		"a_report": "-- reads b_base and zz_last only in this comment\nCREATE VIEW a_report AS SELECT * FROM m_middle",
		"b_base":   "CREATE VIEW b_base AS SELECT 1 AS x",
		"m_middle": "CREATE VIEW m_middle AS SELECT * FROM b_base JOIN b_base_other USING (x)",
		"zz_last":  "CREATE VIEW zz_last AS SELECT 2 -- a_report",
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b_base", "m_middle", "a_report", "zz_last"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	_, err = viewOrder(map[string]string{
		"x": "CREATE VIEW x AS SELECT * FROM y",
		"y": "CREATE VIEW y AS SELECT * FROM x",
	})
	if err == nil || !strings.Contains(err.Error(), "x → y → x") {
		t.Errorf("a cycle: %v", err)
	}
}
