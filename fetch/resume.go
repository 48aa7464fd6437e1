package fetch

import (
	"fmt"
	"hash/maphash"
	"math"

	"github.com/tally-dev/tally"
)

// StreamError is a usage fetch that failed after rows of its window were
// handed on: a page that kept failing past its retries, or came back
// different. The caller cannot take the rows back, so it restarts the
// window (in a new transaction), and splits a window that keeps failing
// this way into halves that need fewer pages in a row.
type StreamError struct {
	Window tally.Window
	Rows   int // rows handed on before the failure
	Err    error
}

func (e *StreamError) Error() string { return e.Err.Error() }
func (e *StreamError) Unwrap() error { return e.Err }

// pageChangedError is a page asked for again after a cut whose first rows
// are not the rows already handed on: the interface's answer changed
// between the two requests (late charges arriving, say). Retrying the page
// cannot mend that; the window starts over.
type pageChangedError struct {
	page, at int
	shorter  bool
}

func (e *pageChangedError) Error() string {
	if e.shorter {
		return fmt.Sprintf("page %d came back with %d rows, fewer than were already taken from it: the answer changed between requests; the window starts over", e.page, e.at-1)
	}
	return fmt.Sprintf("page %d came back with a different row %d than was already taken: the answer changed between requests; the window starts over", e.page, e.at)
}

// fpSeed seeds the row fingerprints: they are compared only within one
// process (a page and its re-read), so any seed serves.
var fpSeed = maphash.MakeSeed()

// fingerprint identifies a row for checking a re-read page: every field
// the interface sent, so a changed amount or date is a changed row, in 8
// bytes a row. It is taken of every row handed on, so it is one call of
// the runtime's map hash over a flat struct (hash/maphash.Comparable), a
// few nanoseconds a text, not a write per field into a streaming hash.
func fingerprint(md *tally.MeterData) uint64 {
	r := fpRow{
		date:              md.Date.UnixNano(),
		processed:         1<<63 - 1,
		scale:             md.Cost.Scale(),
		quantity:          math.Float64bits(md.Quantity),
		price:             math.Float64bits(math.NaN()) ^ 1,
		meterName:         md.MeterName,
		meterSku:          md.MeterSku,
		family:            md.Family,
		solution:          md.Solution,
		unit:              md.Unit,
		currency:          md.Currency,
		entitlement:       md.Entitlement,
		entitlementType:   md.EntitlementType,
		paymentMethod:     md.PaymentMethod,
		paymentMethodName: md.PaymentMethodName,
		project:           md.Project,
	}
	if md.DateProcessed != nil {
		r.processed = md.DateProcessed.UnixNano()
	}
	if md.Price != nil {
		r.price = math.Float64bits(*md.Price)
	}
	var fits bool
	if r.unscaled, fits = md.Cost.Unscaled64(); !fits { // an unscaled cost beyond int64: rare
		r.bigCost = md.Cost.String()
	}
	return maphash.Comparable(fpSeed, r)
}

// fpRow is a row's fields as fingerprint hashes them: numbers as integers
// (a float's bits, so no NaN hashes at random), texts as they are.
type fpRow struct {
	date, processed, unscaled  int64
	scale                      int
	quantity, price            uint64
	bigCost                    string
	meterName, meterSku        string
	family, solution, unit     string
	currency                   string
	entitlement                string
	entitlementType            string
	paymentMethod              string
	paymentMethodName, project string
}
