package store

import (
	"context"
	"strings"
	"testing"
)

// TestScopeCurrenciesAsTheView: the currencies of every budget scope, read
// from that scope's days only, are those scope_daily_cost gives it.
func TestScopeCurrenciesAsTheView(t *testing.T) {
	ctx := context.Background()
	s := dayViewsFixture(t)
	scopes := rowsText(t, s, `SELECT DISTINCT scope_kind, scope FROM scope_daily_cost ORDER BY ALL`)
	kinds := map[string]bool{}
	for _, sc := range append(scopes, "project|no-such-project", "all|x") {
		kind, scope, _ := strings.Cut(sc, "|")
		kinds[kind] = true
		got, err := s.ScopeCurrencies(ctx, kind, scope)
		if err != nil {
			t.Fatal(err)
		}
		want := rowsText(t, s, `SELECT DISTINCT currency FROM scope_daily_cost WHERE scope_kind = ? AND scope = ? ORDER BY currency`, kind, scope)
		equalLines(t, "currencies of "+sc, got, want)
	}
	if len(kinds) < 5 {
		t.Fatalf("the fixture has scopes of %d kinds, want all, project, payment method, family and organization", len(kinds))
	}
}
