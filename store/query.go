package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/big"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	tallysql "github.com/tally-dev/tally/sql"
)

// Result is a query's answer, whole in memory: meant for analyst-sized
// results, not for exports.
type Result struct {
	Columns []string
	Types   []string // DuckDB type names: DECIMAL(38,12), DATE, TIMESTAMP, …
	// Rows hold nil for NULL, tally.Decimal for DECIMAL, uuid.UUID for
	// UUID, time.Time (UTC) for dates and times, and the driver's Go value
	// otherwise.
	Rows [][]any
}

// Query runs query with args and returns its answer. It never changes the
// database: on a read-only store DuckDB refuses writes, and on a read-write
// store the query runs in a transaction that is rolled back.
func (s *Store) Query(ctx context.Context, query string, args ...any) (*Result, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("run query: %w", err)
	}
	defer conn.Close()
	if !s.readOnly {
		if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
			return nil, fmt.Errorf("run query: %w", err)
		}
		defer rollback(conn, nil)
	}
	if err := checkStatement(conn, query, s.queryMemory > 0); err != nil {
		return nil, err
	}
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.queryError(err)
	}
	defer rows.Close()
	res, err := readResult(rows)
	if err != nil {
		return nil, s.queryError(err)
	}
	return res, nil
}

// ErrSeveralStatements is SQL holding more than one statement: the driver
// would run them all and return only the last one's rows, so an analyst
// would see one answer and never know the others were dropped.
var ErrSeveralStatements = errors.New("the SQL holds several statements; run one at a time (tally query shows one answer)")

// ErrWritesFiles is a COPY, EXPORT, ATTACH or DETACH in tally query's
// sandbox. DuckDB's own sandbox still lets a statement write the paths of
// the open database's write-ahead log (<db>.wal, which the next writer
// would replay), so these statements are refused before DuckDB sees them.
var ErrWritesFiles = errors.New("COPY, EXPORT, ATTACH and DETACH are refused: tally query reads the one database it opened and writes no file")

// checkStatement refuses SQL of several statements, and in the sandbox
// the statements that reach files. DuckDB's own parser counts and types
// them (a ';' inside a string or a comment is no separator): the driver's
// Prepare without a context accepts exactly one.
func checkStatement(conn *sql.Conn, query string, sandbox bool) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*duckdb.Conn)
		if !ok {
			return nil
		}
		ds, err := c.Prepare(query)
		if err != nil {
			if strings.Contains(err.Error(), "multi-statement") {
				return fmt.Errorf("run query: %w", ErrSeveralStatements)
			}
			return nil // the query itself reports what is wrong with it
		}
		defer ds.Close()
		st, ok := ds.(*duckdb.Stmt)
		if !sandbox || !ok {
			return nil
		}
		typ, err := st.StatementType()
		if err != nil {
			return fmt.Errorf("run query: %w", err)
		}
		switch typ {
		case duckdb.STATEMENT_TYPE_COPY, duckdb.STATEMENT_TYPE_EXPORT, duckdb.STATEMENT_TYPE_ATTACH, duckdb.STATEMENT_TYPE_DETACH:
			return fmt.Errorf("run query: %w", ErrWritesFiles)
		}
		return nil
	})
}

// ErrReadOnly is a statement that would change the database, which every
// reader opens read-only; ErrSandboxed one that reaches past the database
// (another file, an extension, a setting), which the query sandbox
// refuses. Query's errors wrap them, so a caller tells them apart by
// errors.Is rather than by DuckDB's words.
var (
	ErrReadOnly  = errors.New("the database is open read-only")
	ErrSandboxed = errors.New("the query sandbox reaches nothing beyond the database")
)

// queryError classifies DuckDB's error by its type and names the memory
// limit when DuckDB ran out of it: its own message suggests settings a
// sandboxed query cannot change.
func (s *Store) queryError(err error) error {
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return fmt.Errorf("run query: %w", err)
	}
	switch {
	case de.Type == duckdb.ErrorTypeOutOfMemory && s.queryMemory > 0:
		first, _, _ := strings.Cut(de.Msg, "\n")
		return fmt.Errorf("run query: the query needs more memory than its limit of %s, and tally query never spills to disk: give it more with --memory-limit, or ask for less (filter, aggregate, fewer columns): %s", FormatSize(s.queryMemory), first)
	case de.Type == duckdb.ErrorTypePermission && s.queryMemory > 0:
		return &classified{err: err, kind: ErrSandboxed}
	case de.Type == duckdb.ErrorTypeInvalidInput && strings.Contains(de.Msg, "read-only mode"):
		return &classified{err: err, kind: ErrReadOnly}
	case de.Type == duckdb.ErrorTypeInvalidInput && strings.Contains(de.Msg, "configuration has been locked"):
		return &classified{err: err, kind: ErrSandboxed}
	}
	return fmt.Errorf("run query: %w", err)
}

// classified is DuckDB's error with what kind of refusal it is.
type classified struct {
	err, kind error
}

func (e *classified) Error() string   { return "run query: " + e.err.Error() }
func (e *classified) Unwrap() []error { return []error{e.err, e.kind} }

func readResult(rows *sql.Rows) (*Result, error) {
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	res := &Result{Rows: [][]any{}}
	for _, ct := range cts {
		res.Columns = append(res.Columns, ct.Name())
		res.Types = append(res.Types, ct.DatabaseTypeName())
	}
	for rows.Next() {
		vals := make([]any, len(cts))
		ptrs := make([]any, len(cts))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			vals[i] = normalize(v, res.Types[i])
		}
		res.Rows = append(res.Rows, vals)
	}
	return res, rows.Err()
}

// normalize turns the driver's values into the types Result documents.
func normalize(v any, typ string) any {
	switch x := v.(type) {
	case duckdb.Decimal:
		return tally.NewDecimal(x.Value, int(x.Scale))
	case []byte:
		if typ == "UUID" && len(x) == 16 {
			return uuid.UUID(x)
		}
		return x
	case time.Time:
		return x.UTC()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e, "")
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e, "")
		}
		return out
	case duckdb.OrderedMap:
		var out duckdb.OrderedMap
		vals := x.Values()
		for i, k := range x.Keys() {
			out.Set(normalize(k, ""), normalize(vals[i], ""))
		}
		return out
	}
	return v
}

// NamedQuery is one analyst query of sql/queries.
type NamedQuery struct {
	Name        string // the file's base name: cost_by_project_month
	Description string // the file's header comment
	SQL         string
}

// NamedQueries lists the named analyst queries, by name.
func NamedQueries() ([]NamedQuery, error) {
	return readNamed(tallysql.Queries, "queries")
}

// FindNamedQuery returns the named query name; the error lists the names
// there are.
func FindNamedQuery(name string) (NamedQuery, error) {
	qs, err := NamedQueries()
	if err != nil {
		return NamedQuery{}, err
	}
	var names []string
	for _, q := range qs {
		if q.Name == name {
			return q, nil
		}
		names = append(names, q.Name)
	}
	return NamedQuery{}, fmt.Errorf("no named query %q; the named queries are %s", name, strings.Join(names, ", "))
}

// Views lists the analyst views of sql/views, by name, with their header
// comments; SQL is the statement that creates the view.
func Views() ([]NamedQuery, error) {
	return readNamed(tallysql.Views, "views")
}

func readNamed(fsys fs.FS, dir string) ([]NamedQuery, error) {
	names, err := fs.Glob(fsys, dir+"/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []NamedQuery
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		base := strings.TrimSuffix(path.Base(name), ".sql")
		out = append(out, NamedQuery{Name: base, Description: headerComment(string(b), base), SQL: string(b)})
	}
	return out, nil
}

// headerComment joins the first paragraph of a SQL file's leading "--"
// comment into one line, without the "name:" it starts with. Later
// paragraphs are notes for maintainers.
func headerComment(text, name string) string {
	var parts []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "--") {
			break
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "--"))
		if line == "" {
			break
		}
		parts = append(parts, line)
	}
	d := strings.Join(parts, " ")
	d = strings.TrimPrefix(d, name+":")
	return strings.TrimSpace(d)
}

// CellText renders v for csv and table; ok is false for NULL.
func CellText(v any, typ string) (s string, ok bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case tally.Decimal:
		return x.String(), true
	case time.Time:
		return FormatTime(x, typ), true
	case float64:
		return FormatFloat(x, 64), true
	case float32:
		return FormatFloat(float64(x), 32), true
	case bool:
		return strconv.FormatBool(x), true
	case *big.Int:
		return x.String(), true
	case uuid.UUID:
		return x.String(), true
	case []byte:
		return `\x` + hex.EncodeToString(x), true
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x), true
	}
	if b, err := json.Marshal(JSONValue(v, typ)); err == nil {
		return string(b), true
	}
	return fmt.Sprint(v), true
}

func FormatTime(t time.Time, typ string) string {
	t = t.UTC()
	switch typ {
	case "DATE":
		return t.Format(tally.DateLayout)
	case "TIME":
		return t.Format("15:04:05.999999")
	}
	return t.Format(time.RFC3339Nano)
}

// FormatFloat writes a float as encoding/json does: plain digits for
// everyday magnitudes, an exponent for the very small and very large.
func FormatFloat(f float64, bits int) string {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.FormatFloat(f, format, -1, bits)
}

// JSONValue is v as it appears in JSON output.
func JSONValue(v any, typ string) any {
	switch x := v.(type) {
	case tally.Decimal:
		return x.String()
	case time.Time:
		return FormatTime(x, typ)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return FormatFloat(x, 64)
		}
		return x
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return FormatFloat(float64(x), 32)
		}
		return x
	case *big.Int:
		return json.Number(x.String())
	case uuid.UUID:
		return x.String()
	case []byte:
		return `\x` + hex.EncodeToString(x)
	case []any:
		et := elemType(typ)
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = JSONValue(e, et)
		}
		return out
	case map[string]any:
		if fields := structFields(typ); len(fields) == len(x) {
			// A STRUCT: its fields in their order, each by its type.
			var out duckdb.OrderedMap
			for _, f := range fields {
				e, ok := x[f.name]
				if !ok {
					break
				}
				out.Set(f.name, JSONValue(e, f.typ))
			}
			if out.Len() == len(fields) {
				return out
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = JSONValue(e, "")
		}
		return out
	case duckdb.OrderedMap:
		// A MAP is a JSON object in its own order, keyed by each key's
		// text, its values as values: {"EUR": "81876.920670000000"}.
		kt, vt := mapTypes(typ)
		var out duckdb.OrderedMap
		vals := x.Values()
		for i, k := range x.Keys() {
			ks, ok := CellText(k, kt)
			if !ok {
				ks = "null"
			}
			out.Set(ks, JSONValue(vals[i], vt))
		}
		return out
	case duckdb.Interval:
		return fmt.Sprintf("%d months %d days %d microseconds", x.Months, x.Days, x.Micros)
	}
	return v
}
