package fetch

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tally-dev/tally"
)

// csvRows reads a CSV usage answer row by row. Its header names MeterData
// fields (the interface does not publish its columns; API-NOTES.md): columns
// are matched by exact name in any order, an unknown one is an error, and an
// empty cell is null.
type csvRows struct {
	r    *csv.Reader
	tail *tailReader
	cols []meterField
	b    rowBuilder
	done bool
}

// tailReader remembers the last byte read, to tell a final row cut mid-way
// from one that merely has a bad field count.
type tailReader struct {
	r    io.Reader
	last byte
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.last = p[n-1]
	}
	return n, err
}

func newCSVRows(r io.Reader) *csvRows {
	t := &tailReader{r: r}
	cr := csv.NewReader(t)
	cr.ReuseRecord = true
	return &csvRows{r: cr, tail: t}
}

// readHeader reads and checks the header row.
func (c *csvRows) readHeader() error {
	rec, err := c.r.Read()
	if err != nil {
		return err // io.EOF here is an empty body: the caller calls it cut
	}
	seen := make(map[meterField]bool, len(rec))
	c.cols = make([]meterField, len(rec))
	for i, name := range rec {
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		f, ok := meterFieldByName[name]
		if !ok {
			return shapef("csv header: column %d %q is not a MeterData field; allowed: %s",
				i+1, name, strings.Join(meterFieldNames[:], ", "))
		}
		if seen[f] {
			return shapef("csv header: column %q appears twice", name)
		}
		seen[f] = true
		c.cols[i] = f
	}
	var missing []string
	for _, f := range requiredMeterFields {
		if !seen[f] {
			missing = append(missing, meterFieldNames[f])
		}
	}
	if len(missing) > 0 {
		return shapef("csv header: required column(s) %s missing", strings.Join(missing, ", "))
	}
	c.r.FieldsPerRecord = len(rec)
	return nil
}

// next returns the next row, or false at the end. Reader errors are
// returned as they are; a final row cut mid-way is ErrTruncated.
func (c *csvRows) next() (tally.MeterData, bool, error) {
	if c.done {
		return tally.MeterData{}, false, nil
	}
	if c.cols == nil {
		if err := c.readHeader(); err != nil {
			c.done = true
			return tally.MeterData{}, false, err
		}
	}
	rec, err := c.r.Read()
	if err == io.EOF {
		c.done = true
		return tally.MeterData{}, false, nil
	}
	if err != nil {
		c.done = true
		var pe *csv.ParseError
		if errors.As(err, &pe) && (errors.Is(pe.Err, csv.ErrFieldCount) || errors.Is(pe.Err, csv.ErrQuote)) {
			// A short last row without its line break, or a quoted
			// field still open at the end, is a body cut mid-row.
			if _, nerr := c.r.Read(); nerr == io.EOF && (errors.Is(pe.Err, csv.ErrQuote) || c.tail.last != '\n') {
				return tally.MeterData{}, false, fmt.Errorf("%w: csv line %d ends mid-row", ErrTruncated, pe.Line)
			}
			return tally.MeterData{}, false, shapef("csv line %d: %v", pe.Line, pe.Err)
		}
		if errors.As(err, &pe) {
			return tally.MeterData{}, false, shapef("csv line %d: %v", pe.Line, pe.Err)
		}
		return tally.MeterData{}, false, err
	}
	c.b.reset()
	for i, cell := range rec {
		v := scalar{kind: 's', text: cell}
		if cell == "" {
			v.kind = 'n'
		}
		if err := c.b.set(c.cols[i], v); err != nil {
			c.done = true
			return tally.MeterData{}, false, err
		}
	}
	md, err := c.b.finish()
	if err != nil {
		c.done = true
		return tally.MeterData{}, false, err
	}
	return md, true, nil
}
