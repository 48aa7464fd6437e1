package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/tally-dev/tally/store"
)

// output.go prints query answers for people and tools: the command line's
// concern, so the store only hands over typed rows (store.Result).

// Output formats of tally query (writeResult).
const (
	formatTable = "table"
	formatCSV   = "csv"
	formatJSON  = "json"
	// formatCSVRaw is csv without the formula guard (--format csv
	// --csv-raw): each text value as it is, for programs, not
	// spreadsheets.
	formatCSVRaw = "csv-raw"
)

// writeResult writes res to w as format:
//
//   - csv: RFC 4180 (CRLF line ends) with one header row; NULL is an empty
//     field. A text value that begins with =, +, -, @, tab or carriage
//     return gets a single quote ahead (store.CSVGuard), so a spreadsheet
//     shows it as text rather than run it as a formula, and so does a
//     column name; numbers and dates are written as they are. csv-raw
//     writes text as it is.
//   - json: one array of objects, keys in column order. DECIMAL values are
//     JSON strings holding the exact value (a JSON number would be read as
//     a float by most consumers), as the interface itself sends cost.
//   - table: aligned columns for people, NULL written as NULL.
//
// Dates are YYYY-MM-DD, timestamps RFC 3339 in UTC, DECIMAL exact at its
// column's scale.
func writeResult(w io.Writer, format string, res *store.Result) error {
	switch format {
	case formatCSV:
		return writeCSV(w, res, true)
	case formatCSVRaw:
		return writeCSV(w, res, false)
	case formatJSON:
		return writeJSON(w, res)
	case formatTable:
		return writeTable(w, res)
	}
	return fmt.Errorf("format %q is not one of table, csv, json", format)
}

func writeCSV(w io.Writer, res *store.Result, guard bool) error {
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	head := res.Columns
	if guard {
		// A column may be named by data (PIVOT … ON project).
		head = make([]string, len(res.Columns))
		for i, c := range res.Columns {
			head[i] = store.CSVGuard(c)
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	rec := make([]string, len(res.Columns))
	for _, row := range res.Rows {
		for i, v := range row {
			rec[i], _ = store.CellText(v, res.Types[i])
			if _, text := v.(string); text && guard {
				rec[i] = store.CSVGuard(rec[i])
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeJSON(w io.Writer, res *store.Result) error {
	keys := make([][]byte, len(res.Columns))
	for i, c := range res.Columns {
		k, err := json.Marshal(c)
		if err != nil {
			return err
		}
		keys[i] = k
	}
	var b []byte
	b = append(b, '[')
	for r, row := range res.Rows {
		if r > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n{"...)
		for i, v := range row {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, keys[i]...)
			b = append(b, ':')
			j, err := json.Marshal(store.JSONValue(v, res.Types[i]))
			if err != nil {
				return fmt.Errorf("column %s: %w", res.Columns[i], err)
			}
			b = append(b, j...)
		}
		b = append(b, '}')
		if len(b) > 1<<16 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	if len(res.Rows) > 0 {
		b = append(b, '\n')
	}
	b = append(b, "]\n"...)
	_, err := w.Write(b)
	return err
}

func writeTable(w io.Writer, res *store.Result) error {
	cells := make([][]string, len(res.Rows))
	widths := make([]int, len(res.Columns))
	right := make([]bool, len(res.Columns))
	for i, c := range res.Columns {
		widths[i] = utf8.RuneCountInString(c)
		right[i] = numericType(res.Types[i])
	}
	escape := strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`)
	scales := decimalScales(res)
	for r, row := range res.Rows {
		cells[r] = make([]string, len(row))
		for i, v := range row {
			s, ok := store.CellText(v, res.Types[i])
			if !ok {
				s = "NULL"
			} else if scales[i] >= 0 {
				s = atScale(s, scales[i])
			}
			s = escape.Replace(s)
			cells[r][i] = s
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	var b strings.Builder
	line := func(vals []string, alignRight func(int) bool) {
		for i, v := range vals {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(v))
			if alignRight(i) {
				b.WriteString(pad + v)
			} else if i < len(vals)-1 {
				b.WriteString(v + pad)
			} else {
				b.WriteString(v)
			}
		}
		b.WriteString("\n")
	}
	line(res.Columns, func(int) bool { return false })
	rule := make([]string, len(res.Columns))
	for i := range rule {
		rule[i] = strings.Repeat("-", widths[i])
	}
	line(rule, func(int) bool { return false })
	for _, row := range cells {
		line(row, func(i int) bool { return right[i] })
	}
	if len(res.Rows) == 1 {
		b.WriteString("(1 row)\n")
	} else {
		fmt.Fprintf(&b, "(%d rows)\n", len(res.Rows))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// decimalScales gives each DECIMAL column of res the decimals its values
// show in a table: the fewest, at least two (money is read in cents), that
// show every value of the column exactly, so a column's figures line up
// and none loses a trailing zero its neighbour keeps (3.000000000000 beside
// 0.100000000001, never 3.00). Not a DECIMAL column: -1. CSV and JSON keep
// the column's own scale.
func decimalScales(res *store.Result) []int {
	scales := make([]int, len(res.Columns))
	for i, typ := range res.Types {
		scales[i] = -1
		if strings.HasPrefix(typ, "DECIMAL") {
			scales[i] = 2
		}
	}
	for _, row := range res.Rows {
		for i, v := range row {
			if scales[i] < 0 {
				continue
			}
			if s, ok := store.CellText(v, res.Types[i]); ok {
				if _, frac, ok := strings.Cut(s, "."); ok {
					scales[i] = max(scales[i], len(strings.TrimRight(frac, "0")))
				}
			}
		}
	}
	return scales
}

// atScale writes the exact decimal s with scale decimals; scale is never
// below the digits s needs (decimalScales), so only zeros are dropped or
// added.
func atScale(s string, scale int) string {
	whole, frac, _ := strings.Cut(s, ".")
	frac = strings.TrimRight(frac, "0")
	return whole + "." + frac + strings.Repeat("0", scale-len(frac))
}

func numericType(typ string) bool {
	switch {
	case strings.HasPrefix(typ, "DECIMAL"):
		return true
	}
	switch typ {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
		"UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "BIGNUM":
		return true
	}
	return false
}
