package fetch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tally-dev/tally"
)

// envelope reads a list answer ({"value":[…],"supplemental":{…},
// "@odata.nextLink":…}, keys in any order) one item at a time, so a page is
// never held whole. Keys other than these three are skipped.
type envelope struct {
	dec      *json.Decoder
	state    int // envStart, envKeys, envValue, envDone
	sawValue bool
	next     string // @odata.nextLink, once read
	total    int64  // supplemental.pagination.total, once read; 0 if absent
	records  int64  // supplemental.records of a usage answer, once read
	hasRecs  bool   // whether supplemental.records was there
	offset   int64  // where dec's input starts in the answer (see fastJSON.careful)
}

const (
	envStart = iota
	envKeys
	envValue
	envDone
)

func newEnvelope(r io.Reader) *envelope {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	return &envelope{dec: dec}
}

// shapeError marks an answer that is not the expected shape, as opposed to a
// cut one. It is never retryable.
type shapeError struct{ msg string }

func (e *shapeError) Error() string { return e.msg }

func shapef(format string, args ...any) error { return &shapeError{fmt.Sprintf(format, args...)} }

// more advances to the next item of value and reports whether there is one;
// the item is then read from e.dec by the caller, exactly once. At the end
// of the answer it returns false, with next and total set. Errors from the
// decoder are returned as they are (the caller tells a cut from bad JSON).
func (e *envelope) more() (bool, error) {
	for {
		switch e.state {
		case envDone:
			return false, nil
		case envStart:
			t, err := e.dec.Token()
			if err != nil {
				return false, err
			}
			if t != json.Delim('{') {
				return false, shapef("answer is not a JSON object (starts with %s)", describeToken(t))
			}
			e.state = envKeys
		case envValue:
			if e.dec.More() {
				return true, nil
			}
			if _, err := e.dec.Token(); err != nil { // ]
				return false, err
			}
			e.state = envKeys
		case envKeys:
			if !e.dec.More() {
				if _, err := e.dec.Token(); err != nil { // }
					return false, err
				}
				e.state = envDone
				if !e.sawValue {
					return false, shapef("answer has no \"value\" array")
				}
				return false, nil
			}
			t, err := e.dec.Token()
			if err != nil {
				return false, err
			}
			key, _ := t.(string)
			switch key {
			case "value":
				t, err := e.dec.Token()
				if err != nil {
					return false, err
				}
				switch t {
				case json.Delim('['):
					e.state = envValue
				case nil: // null: an empty page
				default:
					return false, shapef("answer's \"value\" is %s, not an array", describeToken(t))
				}
				e.sawValue = true
			case "@odata.nextLink":
				t, err := e.dec.Token()
				if err != nil {
					return false, err
				}
				switch v := t.(type) {
				case string:
					e.next = v
				case nil:
					e.next = ""
				default:
					return false, shapef("answer's \"@odata.nextLink\" is %s, not a string", describeToken(t))
				}
			case "supplemental":
				var raw json.RawMessage
				if err := e.dec.Decode(&raw); err != nil {
					return false, err
				}
				e.total = paginationTotal(raw)
				e.records, e.hasRecs = usageRecords(raw)
			default:
				if err := skipValue(e.dec); err != nil {
					return false, err
				}
			}
		}
	}
}

// paginationTotal reads supplemental.pagination.total; it only serves as a
// fallback stop, so a missing or odd value is 0 (unknown), not an error.
func paginationTotal(raw json.RawMessage) int64 {
	var s struct {
		Pagination *struct {
			Total json.Number `json:"total"`
		} `json:"pagination"`
	}
	if json.Unmarshal(raw, &s) != nil || s.Pagination == nil {
		return 0
	}
	n, err := s.Pagination.Total.Int64()
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// usageRecords reads supplemental.records of a usage answer: the rows the
// interface says it sent in this answer. Absent, or not a whole number, it
// is not there to check against.
func usageRecords(raw json.RawMessage) (int64, bool) {
	var s struct {
		Records *json.Number `json:"records"`
	}
	if json.Unmarshal(raw, &s) != nil || s.Records == nil {
		return 0, false
	}
	n, err := s.Records.Int64()
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// skipValue consumes one JSON value of any shape without keeping it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

func describeToken(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return strconv.Quote(v.String())
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", t)
}

// MeterData fields by their interface names; the same names head CSV
// columns.
type meterField int

const (
	fDate meterField = iota
	fDateProcessed
	fMeterName
	fMeterSku
	fFamily
	fSolution
	fUnit
	fQuantity
	fPrice
	fCost
	fCurrency
	fEntitlement
	fEntitlementType
	fPaymentMethod
	fPaymentMethodName
	fProject
	numMeterFields
)

var meterFieldNames = [numMeterFields]string{
	"date", "dateProcessed", "meterName", "meterSku", "family", "solution", "unit",
	"quantity", "price", "cost", "currency", "entitlement", "entitlementType",
	"paymentMethod", "paymentMethodName", "project",
}

var meterFieldByName = func() map[string]meterField {
	m := make(map[string]meterField, numMeterFields)
	for i, n := range meterFieldNames {
		m[n] = meterField(i)
	}
	return m
}()

// requiredMeterFields are the fields MeterData must carry, non-null.
var requiredMeterFields = []meterField{fDate, fMeterName, fCost, fCurrency, fQuantity}

// scalar is one field value as sent: JSON gives strings, numbers, booleans
// and null; CSV gives strings, and null for an empty cell.
type scalar struct {
	kind byte // 'n' null, 's' string, '#' number, 'b' boolean
	text string
}

// fieldError is a row's field that is missing or holds a bad value.
type fieldError struct {
	field string
	value string // as sent, quoted; "" for a missing field
	msg   string
}

func (e *fieldError) Error() string {
	if e.value == "" {
		return fmt.Sprintf("field %q %s", e.field, e.msg)
	}
	return fmt.Sprintf("field %q: value %s %s", e.field, e.value, e.msg)
}

func badValue(f meterField, v scalar, msg string) error {
	shown := v.text
	if len(shown) > 80 {
		shown = shown[:80] + "…"
	}
	switch v.kind {
	case 's':
		shown = strconv.Quote(shown)
	case 'n':
		shown = "null"
	}
	return &fieldError{field: meterFieldNames[f], value: shown, msg: msg}
}

// badUTF8 is a text field that is not valid UTF-8. JSON decoding turns
// such bytes into U+FFFD, so a U+FFFD is refused too: stored, "alpha\xff-live"
// would become a project that does not exist.
func badUTF8(f meterField, text string) error {
	return badValue(f, scalar{kind: 's', text: text}, "is not valid UTF-8 text (or holds U+FFFD, what invalid bytes decode to): the row is not stored rather than stored changed")
}

// rowBuilder fills one MeterData from its fields, in any order.
type rowBuilder struct {
	md   tally.MeterData
	seen [numMeterFields]bool // set and non-null
}

func (b *rowBuilder) reset() { *b = rowBuilder{} }

func (b *rowBuilder) set(f meterField, v scalar) error {
	if v.kind == 'n' {
		b.seen[f] = false
		b.clear(f)
		return nil
	}
	switch f {
	case fDate, fDateProcessed:
		if v.kind != 's' {
			return badValue(f, v, "is not a date-time string")
		}
		t, err := parseTimestamp(v.text)
		if err != nil {
			return badValue(f, v, "is not an RFC 3339 date-time (or YYYY-MM-DD)")
		}
		if f == fDate {
			b.md.Date = t
		} else {
			b.md.DateProcessed = &t
		}
	case fQuantity, fPrice:
		if v.kind != '#' && v.kind != 's' {
			return badValue(f, v, "is not a number")
		}
		x, err := strconv.ParseFloat(v.text, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return badValue(f, v, "is not a finite number")
		}
		if f == fQuantity {
			b.md.Quantity = x
		} else {
			b.md.Price = &x
		}
	case fCost:
		if v.kind != '#' && v.kind != 's' {
			return badValue(f, v, "is not a decimal string")
		}
		d, err := tally.ParseDecimal(v.text)
		if err != nil {
			return badValue(f, v, "is not a decimal number (such as \"12.3400\")")
		}
		b.md.Cost = d
	default:
		if v.kind != 's' {
			return badValue(f, v, "is not a string")
		}
		if strings.ContainsRune(v.text, utf8.RuneError) {
			return badUTF8(f, v.text)
		}
		*b.text(f) = v.text
	}
	b.seen[f] = true
	return nil
}

func (b *rowBuilder) clear(f meterField) {
	switch f {
	case fDate:
		b.md.Date = time.Time{}
	case fDateProcessed:
		b.md.DateProcessed = nil
	case fQuantity:
		b.md.Quantity = 0
	case fPrice:
		b.md.Price = nil
	case fCost:
		b.md.Cost = tally.Decimal{}
	default:
		*b.text(f) = ""
	}
}

func (b *rowBuilder) text(f meterField) *string {
	switch f {
	case fMeterName:
		return &b.md.MeterName
	case fMeterSku:
		return &b.md.MeterSku
	case fFamily:
		return &b.md.Family
	case fSolution:
		return &b.md.Solution
	case fUnit:
		return &b.md.Unit
	case fCurrency:
		return &b.md.Currency
	case fEntitlement:
		return &b.md.Entitlement
	case fEntitlementType:
		return &b.md.EntitlementType
	case fPaymentMethod:
		return &b.md.PaymentMethod
	case fPaymentMethodName:
		return &b.md.PaymentMethodName
	case fProject:
		return &b.md.Project
	}
	panic("fetch: not a text field: " + meterFieldNames[f])
}

// finish checks the required fields and returns the row.
func (b *rowBuilder) finish() (tally.MeterData, error) {
	for _, f := range requiredMeterFields {
		if !b.seen[f] {
			return tally.MeterData{}, &fieldError{field: meterFieldNames[f], msg: "is missing or null (required)"}
		}
	}
	// Totals are kept per currency and never added across currencies, so a
	// code written another way ("usd", "US$") would split a currency's total
	// in two: refuse it rather than store it. A well-formed code Tally has
	// not seen is stored as sent and totalled on its own.
	if !isCurrencyCode(b.md.Currency) {
		return tally.MeterData{}, badValue(fCurrency, scalar{kind: 's', text: b.md.Currency},
			"is not a currency code: ISO 4217 codes are three capital letters, such as USD or EUR")
	}
	return b.md, nil
}

func isCurrencyCode(s string) bool {
	return len(s) == 3 && 'A' <= s[0] && s[0] <= 'Z' && 'A' <= s[1] && s[1] <= 'Z' && 'A' <= s[2] && s[2] <= 'Z'
}

// fieldReadError names the field whose value could not be read and, when
// the answer is not JSON there, says so and where: at is the byte of the
// answer the decoder stopped at (SyntaxError.Offset counts only the bytes
// of the values it decoded, not the answer's). A cut body is still
// recognised through the wrapped error.
func fieldReadError(key string, err error, at int64) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("malformed JSON at byte %d, in field %q: %w", at, key, err)
	}
	return fmt.Errorf("field %q: %w", key, err)
}

// timestampLayouts are the forms accepted for date and dateProcessed: RFC
// 3339, the same without a zone (taken as UTC), and a bare date.
var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	tally.DateLayout,
}

// parseTimestamp parses a date-time in one of timestampLayouts, in UTC.
func parseTimestamp(s string) (time.Time, error) {
	var err error
	for _, l := range timestampLayouts {
		var t time.Time
		if t, err = time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, err
}

// decodeMeterDataJSON reads one MeterData object from dec, by tokens so that
// key names match exactly and null is told from absent. Unknown keys are
// skipped. Decoder errors are returned unwrapped; value errors are
// *fieldError. offset is where dec's input starts in the answer.
func decodeMeterDataJSON(dec *json.Decoder, b *rowBuilder, offset int64) (tally.MeterData, error) {
	b.reset()
	t, err := dec.Token()
	if err != nil {
		return tally.MeterData{}, err
	}
	if t != json.Delim('{') {
		return tally.MeterData{}, shapef("row is %s, not an object", describeToken(t))
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return tally.MeterData{}, err
		}
		key, _ := t.(string)
		f, known := meterFieldByName[key]
		if !known {
			if err := skipValue(dec); err != nil {
				return tally.MeterData{}, fieldReadError(key, err, offset+dec.InputOffset())
			}
			continue
		}
		t, err = dec.Token()
		if err != nil {
			return tally.MeterData{}, fieldReadError(key, err, offset+dec.InputOffset())
		}
		var v scalar
		switch x := t.(type) {
		case nil:
			v = scalar{kind: 'n'}
		case string:
			v = scalar{kind: 's', text: x}
		case json.Number:
			v = scalar{kind: '#', text: string(x)}
		case bool:
			v = scalar{kind: 'b', text: strconv.FormatBool(x)}
		case json.Delim:
			return tally.MeterData{}, &fieldError{field: key, value: describeToken(x), msg: "is not a single value"}
		}
		if err := b.set(f, v); err != nil {
			return tally.MeterData{}, err
		}
	}
	if _, err := dec.Token(); err != nil { // }
		return tally.MeterData{}, err
	}
	return b.finish()
}

// isDecodeFault reports whether err is the answer's fault (bad shape or
// value), as opposed to the decoder's read of a cut body.
func isDecodeFault(err error) bool {
	var se *shapeError
	var fe *fieldError
	return errors.As(err, &se) || errors.As(err, &fe)
}
