package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/tally-dev/tally/schedules"
	"github.com/tally-dev/tally/store"
)

func init() { commands = append(commands, newQueryCmd) }

type queryOptions struct {
	config string
	db     string
	format string
	file   string
	name   string
	memory string // --memory-limit, as given
	csvRaw bool   // --csv-raw: csv without the formula guard
	log    zerolog.Logger
}

func newQueryCmd(g *globalFlags) *cobra.Command {
	o := &queryOptions{}
	cmd := &cobra.Command{
		Use:   "query (--config FILE | --db FILE) [--format table|csv|json] [--csv-raw] [--memory-limit SIZE] (SQL | -f FILE.sql | --name NAME)",
		Short: "Run read-only SQL on the analysts' copy of the data",
		Long: `Run one SQL query, read-only, and print its answer.

With --config, the query reads the published copy of the config's database
(data/tally.duckdb → data/tally.published.duckdb), which every run of
tally fetch refreshes; it never blocks, and is never blocked by, a running
fetch. With --db, it reads the DuckDB file given. Statements that change
data (DELETE, DROP, INSERT, …) fail and change nothing, and the query
reaches nothing beyond that database: reading or writing other files
(read_csv, COPY … TO, EXPORT), ATTACH, extensions and SET are refused. When
another process holds the file for writing, either way reads a private copy
of it and says so (but not tally's live database, which a run writes in
place: query its published copy).

The query runs within --memory-limit (default: a quarter of the machine's
or container's memory) and never spills to disk: a query that needs more
fails naming the limit. SIGINT or SIGTERM stops it at once. The SQL must
be one statement: several are refused, never run with only the last shown.

Give exactly one of: the SQL as one (quoted) argument, -f FILE.sql (- reads
standard input), or --name NAME for a named query shipped with tally.
With none of them, or with --name "", it lists the named queries and the
views, with what each answers; no database is needed for that.

The SQL may begin with a "--" comment, as a file's may.

Formats: table (for people), csv (RFC 4180, one header row) and json (one
array of objects). DECIMAL money is printed exactly, never rounded through a
float; in json it is a string, in csv at its column's scale, and in a table
every figure of a column shows the same decimals: the fewest, at least two,
that show each of them exactly. Dates are YYYY-MM-DD, timestamps RFC 3339 in
UTC. In csv, a text value (or column name) that begins with =, +, -, @, tab
or carriage return is written with a single quote ahead, so a spreadsheet
shows it as text instead of running it as a formula (names come from the
interface, where any project member sets them); numbers are never changed.
--csv-raw writes text as it is, for programs that read the file.`,
		Example: `  tally query --config tally.yaml "SELECT project, currency, sum(cost) FROM usage GROUP BY ALL ORDER BY ALL"
  tally query --config tally.yaml --name cost_by_project_month --format csv > costs.csv
  tally query --db data/tally.published.duckdb -f my_query.sql --format json
  tally query --name ""`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErr("got %d arguments; give the SQL as one quoted argument", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := newLogger(g, os.Stderr)
			if err != nil {
				return err
			}
			o.log = log
			return runQuery(cmd.Context(), o, args, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "config file (YAML): query its published copy")
	f.StringVar(&o.db, "db", "", "DuckDB file to query instead, opened read-only")
	f.StringVar(&o.format, "format", formatTable, "output: table, csv or json")
	f.StringVarP(&o.file, "file", "f", "", "file holding the SQL (- for standard input)")
	f.StringVar(&o.name, "name", "", `named query to run ("" lists them)`)
	f.BoolVar(&o.csvRaw, "csv-raw", false, "format csv: write text as it is, without the quote that keeps a spreadsheet from running =, +, -, @ as a formula")
	f.StringVar(&o.memory, "memory-limit", "", "memory the query may use, e.g. 2GiB or 512MB (default: a quarter of the machine's or container's memory)")
	return cmd
}

func runQuery(ctx context.Context, o *queryOptions, args []string, stdin io.Reader, w io.Writer) error {
	switch o.format {
	case formatTable, formatCSV, formatJSON:
	default:
		return usageErr("--format %q is not one of table, csv, json", o.format)
	}
	if o.csvRaw && o.format != formatCSV {
		return usageErr("--csv-raw applies to --format csv, not %s", o.format)
	}
	given := 0
	for _, set := range []bool{len(args) == 1, o.file != "", o.name != ""} {
		if set {
			given++
		}
	}
	if given > 1 {
		return usageErr("give exactly one of SQL, -f FILE.sql or --name NAME")
	}
	var lim store.QueryLimits
	if o.memory != "" {
		n, ok := store.ParseSize(o.memory)
		if !ok || n < 16<<20 {
			return usageErr("--memory-limit %q is not a size of at least 16MiB; give a number with a unit: 512MB, 2GiB, 1.5GB", o.memory)
		}
		lim.MemoryBytes = n
	}
	if given == 0 {
		return listQueries(w, o.format)
	}
	var text string
	switch {
	case len(args) == 1:
		text = args[0]
		if strings.TrimSpace(text) == "" {
			return usageErr("the SQL argument is empty")
		}
	case o.file != "":
		var b []byte
		var err error
		if o.file == "-" {
			b, err = io.ReadAll(stdin)
		} else {
			b, err = os.ReadFile(o.file)
		}
		if err != nil {
			return usageErr("-f %s: %w", o.file, err)
		}
		if text = string(b); strings.TrimSpace(text) == "" {
			return usageErr("-f %s: the file holds no SQL", o.file)
		}
	default:
		q, err := store.FindNamedQuery(o.name)
		if err != nil {
			return usageErr("--name: %w; tally query --name \"\" lists them", err)
		}
		text = q.SQL
	}
	st, err := openQueryStore(ctx, o, lim)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := st.Query(ctx, text)
	if err != nil {
		if strings.Contains(err.Error(), "read-only") {
			return fmt.Errorf("%w\n(tally query only reads; data changes through tally fetch)", err)
		}
		if errors.Is(err, store.ErrWritesFiles) || strings.Contains(err.Error(), "disabled by configuration") || strings.Contains(err.Error(), "configuration has been locked") {
			return fmt.Errorf("%w\n(tally query reads the database only: no other file, no extension, no setting; to join other files open the published copy with DuckDB itself)", err)
		}
		return err
	}
	format := o.format
	if o.csvRaw {
		format = formatCSVRaw
	}
	return writeResult(w, format, res)
}

// openQueryStore opens what the options point at for analysts' SQL: the
// published copy of the config's database, or --db. Either answers even
// while another process (an analyst's DuckDB) holds the file for writing,
// from a private copy, with a warning.
func openQueryStore(ctx context.Context, o *queryOptions, lim store.QueryLimits) (*store.Store, error) {
	switch {
	case o.config != "" && o.db != "":
		return nil, usageErr("give --config or --db, not both")
	case o.db != "":
		if _, err := os.Stat(o.db); err != nil {
			return nil, usageErr("--db %s: %w", o.db, err)
		}
		if err := store.CheckPath(o.db); err != nil {
			return nil, usageErr("--db: %w", err)
		}
		if _, err := os.Stat(store.LockPath(o.db)); err == nil {
			// Tally's own live database: a fetch writes it in place, so
			// a copy taken meanwhile could be torn. Say what to read.
			st, err := store.Open(ctx, o.db, store.Query(lim))
			if err != nil && strings.Contains(err.Error(), "lock") {
				return nil, fmt.Errorf("%w\n(a tally run holds %s for writing: query its published copy instead, with --config or --db %s, which no run ever holds)", err, o.db, store.PublishedPath(o.db))
			}
			return st, err
		}
		// Any other file (the published copy, a file of one's own) held
		// for writing by another process is read from a private copy,
		// as --config does.
		st, err := store.Open(ctx, o.db, store.Shared(), store.Query(lim))
		if err != nil {
			return nil, err
		}
		if n := st.Notice(); n != "" {
			o.log.Warn().Msg(n)
		}
		return st, nil
	case o.config != "":
		cfg, err := loadConfig(o.config)
		if err != nil {
			return nil, err
		}
		return schedules.OpenPublished(ctx, cfg, o.log, store.Query(lim))
	}
	return nil, usageErr("--config or --db is required: the data to query")
}

// listQueries prints the named queries and the views, in format.
func listQueries(w io.Writer, format string) error {
	named, err := store.NamedQueries()
	if err != nil {
		return err
	}
	views, err := store.Views()
	if err != nil {
		return err
	}
	res := &store.Result{
		Columns: []string{"kind", "name", "answers"},
		Types:   []string{"VARCHAR", "VARCHAR", "VARCHAR"},
		Rows:    [][]any{},
	}
	for _, q := range named {
		res.Rows = append(res.Rows, []any{"query", q.Name, q.Description})
	}
	for _, v := range views {
		res.Rows = append(res.Rows, []any{"view", v.Name, v.Description})
	}
	if format == formatTable {
		fmt.Fprintln(w, `Run a query with: tally query --config FILE --name NAME; read a view with "SELECT * FROM NAME".`)
		fmt.Fprintln(w)
		return writeWrapped(w, res, outputWidth(w))
	}
	return writeResult(w, format, res)
}

// writeWrapped prints res as a table whose last column wraps at width, so
// long descriptions read on a terminal instead of running off it.
func writeWrapped(w io.Writer, res *store.Result, width int) error {
	n := len(res.Columns)
	widths := make([]int, n)
	for i, c := range res.Columns {
		widths[i] = len(c)
	}
	for _, row := range res.Rows {
		for i := 0; i < n-1; i++ {
			widths[i] = max(widths[i], len(fmt.Sprint(row[i])))
		}
	}
	indent := 0
	for _, wd := range widths[:n-1] {
		indent += wd + 2
	}
	room := max(width-indent, 30)
	var b strings.Builder
	line := func(vals []string, last string) {
		for i, v := range vals {
			b.WriteString(v + strings.Repeat(" ", widths[i]-len(v)+2))
		}
		for i, l := range wrapWords(last, room) {
			if i > 0 {
				b.WriteString(strings.Repeat(" ", indent))
			}
			b.WriteString(l + "\n")
		}
	}
	upper := make([]string, n-1)
	for i, c := range res.Columns[:n-1] {
		upper[i] = strings.ToUpper(c)
	}
	line(upper, strings.ToUpper(res.Columns[n-1]))
	for _, row := range res.Rows {
		vals := make([]string, n-1)
		for i := range vals {
			vals[i] = fmt.Sprint(row[i])
		}
		line(vals, fmt.Sprint(row[n-1]))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapWords breaks s into lines of at most width characters at spaces (a
// longer word stands on a line of its own).
func wrapWords(s string, width int) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = word
		case len(cur)+1+len(word) <= width:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = word
		}
	}
	return append(lines, cur)
}

// outputWidth is the width of the terminal w writes to, else $COLUMNS,
// else 100.
func outputWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return 100
}
