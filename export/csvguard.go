package export

import (
	"database/sql"
	"fmt"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/tally-dev/tally/store"
)

// csvGuardSQL is CSVGuard in SQL, on the VARCHAR expression e. Not a
// CASE: on the FOCUS rows a CASE per text column ran a month's COPY out
// of the writer's 160 MB, where regexp_replace writes it in the memory of
// the unguarded rows.
func csvGuardSQL(e string) string {
	return `regexp_replace(` + e + `, '^([=+\-@\t\r])', '''\1')`
}

// csvGuarded is query with csvGuardSQL applied to each of its VARCHAR
// columns but keep (the Hive partition column, a month), read from the
// prepared statement's column types, so a DECIMAL, a number or a time is
// never touched. A dataset's queries select * through several layers, so
// the text columns are only known to DuckDB.
func csvGuarded(conn *sql.Conn, query, keep string) (string, error) {
	var repl []string
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*duckdb.Conn)
		if !ok {
			return fmt.Errorf("the CSV guard needs a DuckDB connection, not %T", dc)
		}
		ds, err := c.Prepare(query)
		if err != nil {
			return err
		}
		defer ds.Close()
		st, ok := ds.(*duckdb.Stmt)
		if !ok {
			return fmt.Errorf("the CSV guard needs a DuckDB statement, not %T", ds)
		}
		n, err := st.ColumnCount()
		if err != nil {
			return err
		}
		for i := range n {
			typ, err := st.ColumnType(i)
			if err != nil {
				return err
			}
			name, err := st.ColumnName(i)
			if err != nil {
				return err
			}
			if typ == duckdb.TYPE_VARCHAR && name != keep {
				repl = append(repl, csvGuardSQL(store.QuoteIdent(name))+" AS "+store.QuoteIdent(name))
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("the text columns of the CSV: %w", err)
	}
	if len(repl) == 0 {
		return query, nil
	}
	return "SELECT * REPLACE (" + strings.Join(repl, ", ") + ") FROM (" + query + ")", nil
}
