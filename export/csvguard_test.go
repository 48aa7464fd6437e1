package export

import (
	"context"
	"database/sql"
	"testing"

	"github.com/tally-dev/tally/internal/testkit/storetest"
	"github.com/tally-dev/tally/store"
)

// The guard in SQL (the FOCUS CSV's COPY) and in Go (tally query's CSV)
// agree on every formula lead of the OWASP rule and on text that merely
// holds one later; only text is guarded, and csvGuarded leaves every
// column that is not VARCHAR as it is, a negative DECIMAL included.
func TestCSVGuardSQLAgreesWithGo(t *testing.T) {
	s := storetest.Open(t)
	ctx := context.Background()
	for _, v := range []string{"=SUM(1,1) Marketplace A", "+1", "-5.00", "@cmd", "\tx", "\rx", "a=b", "'=x", "", "Marketplace A", "ÿ=x"} {
		want := store.CSVGuard(v)
		var got string
		if err := s.DB().QueryRowContext(ctx, `SELECT `+csvGuardSQL("CAST(? AS VARCHAR)"), v).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%q: SQL guards it as %q, Go as %q", v, got, want)
		}
		if lead := v != "" && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@' || v[0] == '\t' || v[0] == '\r'); lead != (want != v) {
			t.Errorf("%q guarded as %q: a formula's lead is guarded, nothing else", v, want)
		}
	}
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q, err := csvGuarded(conn, `SELECT '=SUM(1,1) Marketplace A' AS name, CAST(-5 AS DECIMAL(38, 12)) AS cost, -3 AS n, DATE '2026-10-01' AS day, CAST(NULL AS VARCHAR) AS none, '-2026-10' AS billing_period`, "billing_period")
	if err != nil {
		t.Fatal(err)
	}
	var name, cost, n, day, part string
	var none sql.NullString
	if err := conn.QueryRowContext(ctx, `SELECT name, CAST(cost AS VARCHAR), CAST(n AS VARCHAR), CAST(day AS VARCHAR), none, billing_period FROM (`+q+`)`).Scan(&name, &cost, &n, &day, &none, &part); err != nil {
		t.Fatal(err)
	}
	if name != "'=SUM(1,1) Marketplace A" || cost != "-5.000000000000" || n != "-3" || day != "2026-10-01" || none.Valid || part != "-2026-10" {
		t.Errorf("guarded row: %q %q %q %q %v %q; want only the text column guarded, the partition column as it is", name, cost, n, day, none, part)
	}
}
