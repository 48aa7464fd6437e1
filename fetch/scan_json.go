package fetch

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/bits"
	"time"
	"unicode/utf8"

	"github.com/tally-dev/tally"
)

// This file is long (about 900 lines) because it is one decoder: the fast
// path for usage rows is a state machine over the bytes, and its hot loop is
// read and fuzzed (FuzzFastJSONMatchesCareful) as one piece.

// fastJSON reads a JSON usage answer straight from a buffer: no
// reflection, no tokens, no allocation for a text it has seen before. It
// takes the shape the interface sends — the envelope's keys, flat MeterData
// objects of strings, numbers and nulls — and nothing else. At anything
// else (an escape in a key, a nested value in a row, a syntax error, the
// body ending) it stops before the construct it could not take and hands
// the rest of the answer to the careful decoder (envelope), put in the
// same state, so every error and edge case is the careful decoder's.
//
// Where it does read a value, it gives the row builder what the careful
// decoder would, through the same rowBuilder.set for anything but the
// common forms.
type fastJSON struct {
	r    io.Reader
	buf  []byte
	base int64 // bytes of the answer before buf[0]
	pos  int   // next byte of buf not yet taken
	end  int   // bytes of buf filled
	rerr error // the read error (io.EOF at the end) once seen

	state    int  // envStart, envKeys, envValue or envDone, as envelope
	first    bool // envKeys: right after '{'; envValue: right after '['
	sawValue bool
	nextLink string
	records  int64 // supplemental.records, once read
	hasRecs  bool
	total    int64

	strs   map[string]string         // text values seen, to share one string each
	recent [numMeterFields]textCache // per field, its latest texts
	keys   [keyMemory]int8           // the previous row's fields by position; -1 none
	dates  [2]dateCache              // date, dateProcessed
	slab   allocSlab
}

// keyMemory is how many key positions of the previous row are remembered:
// rows come with their keys in one order, so the key at a position is
// nearly always the previous row's.
const keyMemory = 24

// textCache holds texts of one field, which a field cycles through from
// row to row (meters, projects, their families, units): a slot for each
// cheap hash of the text, so that finding one that came before takes one
// comparison however many distinct texts the field has (a large
// organization bills a thousand project–meter pairs and more).
type textCache struct {
	s [textSlots]string
}

// textSlots is a power of two well above the distinct texts of a field on
// a page (a few dozen meters or projects): two that share a slot replace
// each other and go to the intern map.
const textSlots = 256

// slot hashes raw's length and its first and last eight bytes (or all of
// it when shorter): texts of a field differ mostly at their ends
// ("project-1007", "video_encoding_uhd_v3").
func textSlot(raw []byte) int {
	var h uint64
	if n := len(raw); n >= 8 {
		h = binary.LittleEndian.Uint64(raw) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(raw[n-8:]), 29)
	} else {
		for _, c := range raw {
			h = h<<8 | uint64(c)
		}
	}
	h ^= uint64(len(raw))
	h *= 0x9e3779b97f4a7c15
	return int(h >> (64 - 8))
}

func (c *textCache) find(raw []byte, slot int) (string, bool) {
	if v := c.s[slot]; len(v) == len(raw) && v == string(raw) {
		return v, true
	}
	return "", false
}

// dateCache remembers the last date-time text parsed for a field: rows
// come in date order, so most dates repeat the previous row's.
type dateCache struct {
	text [20]byte
	t    time.Time
	ok   bool
}

// allocSlab hands out the pointers MeterData holds (Price, DateProcessed)
// from blocks, one allocation per block instead of one per row.
type allocSlab struct {
	floats []float64
	times  []time.Time
}

const slabSize = 512

func (s *allocSlab) float(v float64) *float64 {
	if len(s.floats) == 0 {
		s.floats = make([]float64, slabSize)
	}
	p := &s.floats[0]
	s.floats = s.floats[1:]
	*p = v
	return p
}

func (s *allocSlab) time(v time.Time) *time.Time {
	if len(s.times) == 0 {
		s.times = make([]time.Time, slabSize)
	}
	p := &s.times[0]
	s.times = s.times[1:]
	*p = v
	return p
}

const (
	fastBufStart = 2 << 10
	// fastBufSize is the buffer's working size, what one read may fill: a
	// usage page is megabytes, and each read that finds the socket empty
	// parks the goroutine and wakes it again. At 256 KB rather than 64 KB
	// a 5,000,000-row fetch made a third fewer context switches and used
	// about 5% less CPU (alternating runs, docs/development.md).
	fastBufSize = 256 << 10
	// fastBufMax bounds the buffer: a single construct larger than this
	// (a huge unknown value) goes to the careful decoder, which streams it.
	fastBufMax  = 4 << 20
	maxInterned = 1 << 14
)

func newFastJSON(r io.Reader) *fastJSON {
	s := &fastJSON{r: r, buf: make([]byte, fastBufStart), strs: make(map[string]string, 256)}
	for i := range s.keys {
		s.keys[i] = -1
	}
	return s
}

// step is what one attempt at a construct came to.
type step int

const (
	stepOK   step = iota // taken; pos moved past it
	stepMore             // the buffer ended inside it: read more, try again
	stepOdd              // not the fast reader's to take: hand off
)

// errHandoff tells the page to continue with the careful decoder.
var errHandoff = errors.New("hand off to the careful decoder")

// next returns the next row, false at the end of the answer, or
// errHandoff.
func (s *fastJSON) next(b *rowBuilder) (tally.MeterData, bool, error) {
	for {
		var (
			st  step
			err error
			row bool
		)
		switch s.state {
		case envDone:
			return tally.MeterData{}, false, nil
		case envStart:
			st = s.start()
		case envKeys:
			st, err = s.key()
		case envValue:
			st, row, err = s.element(b)
		}
		switch {
		case err != nil:
			return tally.MeterData{}, false, err
		case st == stepMore:
			if !s.fill() {
				return tally.MeterData{}, false, errHandoff
			}
		case st == stepOdd:
			return tally.MeterData{}, false, errHandoff
		case row:
			return b.md, true, nil
		case s.state == envDone:
			return tally.MeterData{}, false, nil
		}
	}
}

// fill reads more of the body, keeping the bytes not yet taken. It reports
// false when nothing more can be read (or the construct outgrew the
// buffer's bound).
func (s *fastJSON) fill() bool {
	if s.rerr != nil {
		return false
	}
	if s.pos > 0 {
		s.base += int64(s.pos)
		s.end = copy(s.buf, s.buf[s.pos:s.end])
		s.pos = 0
	}
	// The buffer starts small, for short answers, and doubles up to its
	// working size as the answer goes on, or beyond while one construct
	// does not fit.
	if full := s.end == len(s.buf); full || len(s.buf) < fastBufSize {
		if full && len(s.buf) >= fastBufMax {
			return false
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.rerr = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// careful returns the careful decoder, positioned where the fast reader
// stopped: a short prefix of valid JSON brings its tokenizer to the same
// place in the envelope, then it reads the bytes not taken and the rest
// of the body. The prefix ends in a bracket, the one token the tokenizer
// takes without reading the byte after it.
func (s *fastJSON) careful() *envelope {
	var prefix string
	var tokens int
	switch {
	case s.state == envKeys && s.first:
		prefix, tokens = `{`, 1
	case s.state == envKeys:
		prefix, tokens = `{"":[]`, 4
	case s.state == envValue && s.first:
		prefix, tokens = `{"":[`, 3
	case s.state == envValue:
		prefix, tokens = `{"":[[]`, 5
	}
	head := append([]byte(prefix), s.buf[s.pos:s.end]...)
	var tail io.Reader = s.r
	switch {
	case s.rerr == io.EOF:
		tail = bytes.NewReader(nil)
	case s.rerr != nil:
		tail = errReader{s.rerr}
	}
	e := newEnvelope(io.MultiReader(bytes.NewReader(head), tail))
	for range tokens {
		if _, err := e.dec.Token(); err != nil {
			panic("fetch: handoff prefix: " + err.Error()) // the prefix is valid JSON
		}
	}
	e.state, e.sawValue, e.next, e.total = s.state, s.sawValue, s.nextLink, s.total
	e.records, e.hasRecs = s.records, s.hasRecs
	// The decoder counts from the prefix; the answer's bytes from its start.
	e.offset = s.base + int64(s.pos) - int64(len(prefix))
	s.buf = nil
	return e
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipSpace(p []byte, i int) int {
	for i < len(p) && isSpace(p[i]) {
		i++
	}
	return i
}

func (s *fastJSON) start() step {
	p := s.buf[:s.end]
	i := skipSpace(p, s.pos)
	if i == len(p) {
		return stepMore
	}
	if p[i] != '{' {
		return stepOdd
	}
	s.pos, s.state, s.first = i+1, envKeys, true
	return stepOK
}

// key takes one key of the envelope and its value, or the closing brace.
func (s *fastJSON) key() (step, error) {
	p := s.buf[:s.end]
	i := skipSpace(p, s.pos)
	if i == len(p) {
		return stepMore, nil
	}
	if p[i] == '}' {
		s.pos, s.state = i+1, envDone
		if !s.sawValue {
			return stepOK, shapef("answer has no \"value\" array")
		}
		return stepOK, nil
	}
	if !s.first {
		if p[i] != ',' {
			return stepOdd, nil
		}
		if i = skipSpace(p, i+1); i == len(p) {
			return stepMore, nil
		}
	}
	key, i, st := plainString(p, i)
	if st != stepOK {
		return st, nil
	}
	if i = skipSpace(p, i); i == len(p) {
		return stepMore, nil
	}
	if p[i] != ':' {
		return stepOdd, nil
	}
	if i = skipSpace(p, i+1); i == len(p) {
		return stepMore, nil
	}
	switch string(key) {
	case "value":
		if p[i] == '[' {
			s.pos, s.state, s.first, s.sawValue = i+1, envValue, true, true
			return stepOK, nil
		}
		if st := nullAt(p, i); st != stepOK {
			return st, nil
		}
		s.pos, s.first, s.sawValue = i+4, false, true
		return stepOK, nil
	case "@odata.nextLink":
		if p[i] == '"' {
			j, esc, st := stringEnd(p, i)
			if st != stepOK {
				return st, nil
			}
			next := string(p[i+1 : j-1])
			if esc || !utf8.ValidString(next) {
				if json.Unmarshal(p[i:j], &next) != nil {
					return stepOdd, nil
				}
			}
			s.nextLink = next
			s.pos, s.first = j, false
			return stepOK, nil
		}
		if st := nullAt(p, i); st != stepOK {
			return st, nil
		}
		s.nextLink = ""
		s.pos, s.first = i+4, false
		return stepOK, nil
	}
	j, st := skipJSONValue(p, i)
	if st != stepOK {
		return st, nil
	}
	if string(key) == "supplemental" {
		s.total = paginationTotal(p[i:j])
		s.records, s.hasRecs = usageRecords(p[i:j])
	}
	s.pos, s.first = j, false
	return stepOK, nil
}

// element takes the next row of "value", or the closing bracket.
func (s *fastJSON) element(b *rowBuilder) (st step, row bool, err error) {
	p := s.buf[:s.end]
	i := skipSpace(p, s.pos)
	if i == len(p) {
		return stepMore, false, nil
	}
	if p[i] == ']' {
		s.pos, s.state, s.first = i+1, envKeys, false
		return stepOK, false, nil
	}
	if !s.first {
		if p[i] != ',' {
			return stepOdd, false, nil
		}
		if i = skipSpace(p, i+1); i == len(p) {
			return stepMore, false, nil
		}
	}
	if p[i] != '{' {
		return stepOdd, false, nil
	}
	j, st, err := s.row(p, i, b)
	if st != stepOK || err != nil {
		return st, false, err
	}
	s.pos, s.first = j, false
	return stepOK, true, nil
}

// row reads the object at p[i] into b.md. A field's bad value is the
// careful decoder's error, from the same rowBuilder.set, in the same
// order.
func (s *fastJSON) row(p []byte, i int, b *rowBuilder) (int, step, error) {
	b.reset()
	if i = skipSpace(p, i+1); i == len(p) {
		return 0, stepMore, nil
	}
	if p[i] != '}' {
		for k := 0; ; k++ {
			f, known, j, st := s.rowKey(p, i, k)
			if st != stepOK {
				return 0, st, nil
			}
			if i = skipSpace(p, j); i == len(p) {
				return 0, stepMore, nil
			}
			if p[i] != ':' {
				return 0, stepOdd, nil
			}
			if i = skipSpace(p, i+1); i == len(p) {
				return 0, stepMore, nil
			}
			var err error
			if i, st, err = s.value(p, i, f, known, b); st != stepOK || err != nil {
				return 0, st, err
			}
			if i = skipSpace(p, i); i == len(p) {
				return 0, stepMore, nil
			}
			if p[i] == '}' {
				break
			}
			if p[i] != ',' {
				return 0, stepOdd, nil
			}
			if i = skipSpace(p, i+1); i == len(p) {
				return 0, stepMore, nil
			}
		}
	}
	if _, err := b.finish(); err != nil {
		return 0, stepOK, err
	}
	return i + 1, stepOK, nil
}

// rowKey reads the key at p[i], the k-th of its row, and returns the
// MeterData field it names (known false for a key that names none) and
// where it ends. It first tries the key the previous row had there.
func (s *fastJSON) rowKey(p []byte, i, k int) (f meterField, known bool, end int, st step) {
	if k < keyMemory && s.keys[k] >= 0 {
		f := meterField(s.keys[k])
		name := meterFieldNames[f]
		if e := i + 1 + len(name); e < len(p) && p[i] == '"' && p[e] == '"' && string(p[i+1:e]) == name {
			return f, true, e + 1, stepOK
		}
	}
	key, end, st := plainString(p, i)
	if st != stepOK {
		return 0, false, 0, st
	}
	f, known = meterFieldByName[string(key)]
	if k < keyMemory {
		s.keys[k] = -1
		if known {
			s.keys[k] = int8(f)
		}
	}
	return f, known, end, stepOK
}

// value reads the value at p[i] of field f (known false: a key that is no
// MeterData field, whose value is only checked and skipped). The error is
// a bad value's, as set gives it.
func (s *fastJSON) value(p []byte, i int, f meterField, known bool, b *rowBuilder) (int, step, error) {
	c := p[i]
	switch {
	case c == '"':
		j, unusual, st := stringEnd(p, i)
		if st != stepOK {
			return 0, st, nil
		}
		raw := p[i+1 : j-1]
		switch {
		case !known:
			if unusual && !json.Valid(p[i:j]) {
				return 0, stepOdd, nil
			}
			return j, stepOK, nil
		case unusual && (bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw)):
			// Escapes, and invalid UTF-8 (replacement characters), as
			// the careful decoder reads them.
			var v string
			if json.Unmarshal(p[i:j], &v) != nil {
				return 0, stepOdd, nil
			}
			return j, stepOK, b.set(f, scalar{kind: 's', text: v})
		}
		return j, stepOK, s.setString(b, f, raw)
	case c == '-' || '0' <= c && c <= '9':
		j, st := numberEnd(p, i)
		if st != stepOK || !known {
			return j, st, nil
		}
		return j, stepOK, s.setNumber(b, f, p[i:j])
	case c == 'n' || c == 't' || c == 'f':
		lit, st := literal(p, i)
		if st != stepOK {
			return 0, st, nil
		}
		j := i + 4
		v := scalar{kind: 'n'}
		switch lit {
		case 't':
			v = scalar{kind: 'b', text: "true"}
		case 'f':
			v, j = scalar{kind: 'b', text: "false"}, i+5
		}
		if !known {
			return j, stepOK, nil
		}
		return j, stepOK, b.set(f, v)
	case (c == '{' || c == '[') && !known:
		j, st := skipJSONValue(p, i)
		return j, st, nil
	}
	return 0, stepOdd, nil
}

var replacementChar = []byte(string(utf8.RuneError))

// setString sets f from string text without escapes, valid UTF-8 (raw,
// between the quotes): the common forms directly, anything else through
// set.
func (s *fastJSON) setString(b *rowBuilder, f meterField, raw []byte) error {
	switch f {
	case fDate, fDateProcessed:
		if t, ok := s.date(f, raw); ok {
			if f == fDate {
				b.md.Date = t
			} else {
				b.md.DateProcessed = s.slab.time(t)
			}
			b.seen[f] = true
			return nil
		}
	case fQuantity, fPrice:
		if x, ok := tally.ParsePlainFloat(raw); ok {
			s.setFloat(b, f, x)
			return nil
		}
	case fCost:
		if d, ok := tally.ParsePlainDecimal(raw); ok {
			b.md.Cost, b.seen[f] = d, true
			return nil
		}
	default:
		v, ok := s.intern(f, raw)
		if !ok {
			return badUTF8(f, string(raw))
		}
		*b.text(f), b.seen[f] = v, true
		return nil
	}
	return b.set(f, scalar{kind: 's', text: string(raw)})
}

// setNumber sets f from a JSON number's text.
func (s *fastJSON) setNumber(b *rowBuilder, f meterField, raw []byte) error {
	switch f {
	case fQuantity, fPrice:
		if x, ok := tally.ParsePlainFloat(raw); ok {
			s.setFloat(b, f, x)
			return nil
		}
	case fCost:
		if d, ok := tally.ParsePlainDecimal(raw); ok {
			b.md.Cost, b.seen[f] = d, true
			return nil
		}
	}
	return b.set(f, scalar{kind: '#', text: string(raw)})
}

func (s *fastJSON) setFloat(b *rowBuilder, f meterField, x float64) {
	if f == fQuantity {
		b.md.Quantity = x
	} else {
		b.md.Price = s.slab.float(x)
	}
	b.seen[f] = true
}

// intern returns raw as a string, shared with earlier rows that sent the
// same text (meters, projects, currencies and payment methods repeat on
// every page), or false when raw holds a replacement character (text the
// careful decoder would have had to repair, which set rejects). A text in
// the cache or the map has been checked before.
func (s *fastJSON) intern(f meterField, raw []byte) (string, bool) {
	c := &s.recent[f]
	slot := textSlot(raw)
	if v, ok := c.find(raw, slot); ok {
		return v, true
	}
	v, ok := s.strs[string(raw)]
	if !ok {
		if bytes.Contains(raw, replacementChar) {
			return "", false
		}
		v = string(raw)
		if len(s.strs) < maxInterned {
			s.strs[v] = v
		}
	}
	c.s[slot] = v
	return v, true
}

// date parses "YYYY-MM-DDTHH:MM:SSZ", the form the interface sends, and
// reports false for any other text (the careful parse then decides).
func (s *fastJSON) date(f meterField, raw []byte) (time.Time, bool) {
	c := &s.dates[0]
	if f == fDateProcessed {
		c = &s.dates[1]
	}
	if len(raw) != 20 {
		return time.Time{}, false
	}
	if c.ok && string(raw) == string(c.text[:]) {
		return c.t, true
	}
	t, ok := parseUTCSeconds(raw)
	if ok {
		copy(c.text[:], raw)
		c.t, c.ok = t, true
	}
	return t, ok
}

func parseUTCSeconds(b []byte) (time.Time, bool) {
	if b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != 'Z' {
		return time.Time{}, false
	}
	num := func(lo, hi int) int {
		n := 0
		for _, c := range b[lo:hi] {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	y, mo, d, h, mi, sec := num(0, 4), num(5, 7), num(8, 10), num(11, 13), num(14, 16), num(17, 19)
	if y < 1 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	if d > daysIn(time.Month(mo), y) {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC), true
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// plainString returns the key or string at p[i] when it has no escape,
// no control character and no byte past ASCII; anything else goes careful.
func plainString(p []byte, i int) ([]byte, int, step) {
	if p[i] != '"' {
		return nil, 0, stepOdd
	}
	j, hi := stringStop(p, i+1)
	switch {
	case j == len(p):
		return nil, 0, stepMore
	case p[j] != '"' || hi:
		return nil, 0, stepOdd
	}
	return p[i+1 : j], j + 1, stepOK
}

// stringEnd returns the end of the string at p[i] (past its closing
// quote), and whether it holds an escape or a byte past ASCII (then the
// text needs unquoting or checking). A control character is a syntax
// error: careful. Like the careful tokenizer, it takes a string only once
// the byte after it is in: when the body fails right after a value, the
// answer is cut, not wrong.
func stringEnd(p []byte, i int) (end int, unusual bool, st step) {
	j, hi := stringStop(p, i+1)
	for j < len(p) && p[j] == '\\' {
		unusual = true
		if j+2 > len(p) {
			return 0, false, stepMore
		}
		var h bool
		j, h = stringStop(p, j+2)
		hi = hi || h
	}
	switch {
	case j == len(p) || j+1 == len(p):
		return 0, false, stepMore
	case p[j] != '"':
		return 0, false, stepOdd
	}
	return j + 1, unusual || hi, stepOK
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stringStop returns the index of the first quote, backslash or control
// character at or after j (len(p) if none), and whether a byte past ASCII
// came before it (or near it). It looks at eight bytes at a time.
func stringStop(p []byte, j int) (int, bool) {
	hi := false
	for ; j+8 <= len(p); j += 8 {
		x := binary.LittleEndian.Uint64(p[j:])
		q, b := x^(lsb*'"'), x^(lsb*'\\')
		// A byte's high bit in m is set where the byte is a quote, a
		// backslash or below 0x20; the lowest such bit is exact.
		m := ((q - lsb) &^ q) | ((b - lsb) &^ b) | ((x - lsb*0x20) &^ x)
		m &= msb
		hi = hi || x&msb != 0
		if m != 0 {
			return j + bits.TrailingZeros64(m)/8, hi
		}
	}
	for ; j < len(p); j++ {
		switch c := p[j]; {
		case c == '"' || c == '\\' || c < 0x20:
			return j, hi
		case c >= 0x80:
			hi = true
		}
	}
	return j, hi
}

// numberEnd returns the end of the JSON number at p[i]; the byte after it
// must be in the buffer to know the number ended.
func numberEnd(p []byte, i int) (int, step) {
	j := i
	if p[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(p) && '0' <= p[j] && p[j] <= '9' {
			j++
		}
		return j - k
	}
	n := digits()
	switch {
	case j == len(p):
		return 0, stepMore
	case n == 0 || n > 1 && p[j-n] == '0':
		return 0, stepOdd
	}
	if p[j] == '.' {
		j++
		if digits() == 0 {
			if j == len(p) {
				return 0, stepMore
			}
			return 0, stepOdd
		}
		if j == len(p) {
			return 0, stepMore
		}
	}
	if p[j] == 'e' || p[j] == 'E' {
		j++
		if j < len(p) && (p[j] == '+' || p[j] == '-') {
			j++
		}
		if digits() == 0 {
			if j == len(p) {
				return 0, stepMore
			}
			return 0, stepOdd
		}
		if j == len(p) {
			return 0, stepMore
		}
	}
	return j, stepOK
}

// literal reports which of null, true, false is at p[i] ('n', 't', 'f'),
// once the byte after it is in (see stringEnd).
func literal(p []byte, i int) (byte, step) {
	for _, l := range [...]string{"null", "true", "false"} {
		if p[i] != l[0] {
			continue
		}
		if len(p)-i <= len(l) {
			if string(p[i:]) == l[:len(p)-i] {
				return 0, stepMore
			}
			return 0, stepOdd
		}
		if string(p[i:i+len(l)]) != l {
			return 0, stepOdd
		}
		return l[0], stepOK
	}
	return 0, stepOdd
}

// nullAt says whether null is at p[i].
func nullAt(p []byte, i int) step {
	lit, st := literal(p, i)
	if st == stepOK && lit != 'n' {
		return stepOdd
	}
	return st
}

// skipJSONValue returns the end of the value at p[i], which must be valid
// JSON (or the careful decoder takes it).
func skipJSONValue(p []byte, i int) (int, step) {
	j, st := valueEnd(p, i)
	if st != stepOK {
		return 0, st
	}
	if !json.Valid(p[i:j]) {
		return 0, stepOdd
	}
	return j, stepOK
}

// valueEnd finds where the value at p[i] ends by its brackets and quotes
// alone; json.Valid then checks it.
func valueEnd(p []byte, i int) (int, step) {
	switch c := p[i]; {
	case c == '"':
		j, _, st := stringEnd(p, i)
		return j, st
	case c == '-' || '0' <= c && c <= '9':
		return numberEnd(p, i)
	case c == 'n' || c == 't' || c == 'f':
		lit, st := literal(p, i)
		if st != stepOK {
			return 0, st
		}
		if lit == 'f' {
			return i + 5, stepOK
		}
		return i + 4, stepOK
	case c != '{' && c != '[':
		return 0, stepOdd
	}
	depth := 0
	for j := i; j < len(p); j++ {
		switch p[j] {
		case '"':
			k, _, st := stringEnd(p, j)
			if st != stepOK {
				return 0, st
			}
			j = k - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, stepOK
			}
		}
	}
	return 0, stepMore
}
