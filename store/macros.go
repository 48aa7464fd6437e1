package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	tallysql "github.com/tally-dev/tally/sql"
)

// tempMacros are the macros of sql/macros as TEMP macros: each file's
// CREATE OR REPLACE MACRO made CREATE OR REPLACE TEMP MACRO.
var tempMacros = sync.OnceValues(func() ([]string, error) {
	names, err := fs.Glob(tallysql.Macros, "macros/*.sql")
	if err != nil {
		return nil, fmt.Errorf("read macros: %w", err)
	}
	const create, temp = "CREATE OR REPLACE MACRO ", "CREATE OR REPLACE TEMP MACRO "
	out := make([]string, 0, len(names))
	for _, name := range names {
		b, err := fs.ReadFile(tallysql.Macros, name)
		if err != nil {
			return nil, fmt.Errorf("read macro %s: %w", name, err)
		}
		text := string(b)
		if strings.Count(text, create) != 1 {
			return nil, fmt.Errorf("read macro %s: want one %q statement", name, strings.TrimSpace(create))
		}
		out = append(out, strings.Replace(text, create, temp, 1))
	}
	return out, nil
})

// defineMacros defines this Tally's macros on a connection the store
// opens, for that connection alone (TEMP): the views and queries of this
// Tally call them on any database it opens, also on a copy an older Tally
// published without them or with other definitions, which, read-only,
// could not take them for good. A temporary macro comes before the
// database's own of its name. The database keeps its own as well
// (createMacros), for what reads the file without Tally.
func defineMacros(ctx context.Context, conn driver.ExecerContext) error {
	stmts, err := tempMacros()
	if err != nil {
		return err
	}
	tables := -1 // not counted yet
	for _, s := range stmts {
		if strings.Contains(s, ") AS TABLE") {
			// A table macro's tables are looked up when it is made: on a
			// database being made (create), before its migrations, there
			// are none, and its own macros (createMacros, made after the
			// migrations) serve it.
			if tables < 0 {
				if tables, err = countTables(ctx, conn); err != nil {
					return fmt.Errorf("define the macros: %w", err)
				}
			}
			if tables == 0 {
				continue
			}
		}
		if _, err := conn.ExecContext(ctx, s, nil); err != nil {
			return fmt.Errorf("define the macros: %w", err)
		}
	}
	return nil
}

// countTables is how many tables the database conn is on holds.
func countTables(ctx context.Context, conn driver.ExecerContext) (int, error) {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return 0, fmt.Errorf("the connection %T cannot query", conn)
	}
	rows, err := q.QueryContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()`, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return 0, err
	}
	n, ok := v[0].(int64)
	if !ok {
		return 0, fmt.Errorf("count the tables: got %T", v[0])
	}
	return int(n), nil
}
