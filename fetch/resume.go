package fetch

import (
	"encoding/binary"
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
// the interface sent, so a changed amount or date is a changed row, hashed
// with the runtime's fast hash (hash/maphash) into 8 bytes a row, without
// allocating on the hot path of every row.
func fingerprint(md *tally.MeterData) uint64 {
	var h maphash.Hash
	h.SetSeed(fpSeed)
	var b [8 * 8]byte
	n := 0
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(b[n:], v)
		n += 8
	}
	put(uint64(md.Date.UnixNano()))
	if md.DateProcessed != nil {
		put(uint64(md.DateProcessed.UnixNano()))
	} else {
		put(1<<63 - 1)
	}
	put(uint64(md.Cost.Scale()))
	small, fits := md.Cost.Unscaled64()
	put(uint64(small))
	put(math.Float64bits(md.Quantity))
	if md.Price != nil {
		put(math.Float64bits(*md.Price))
	} else {
		put(math.Float64bits(math.NaN()) ^ 1)
	}
	h.Write(b[:n])
	for _, s := range [...]string{md.MeterName, md.MeterSku, md.Family, md.Solution, md.Unit, md.Currency,
		md.Entitlement, md.EntitlementType, md.PaymentMethod, md.PaymentMethodName, md.Project} {
		// The length first, so "ab"+"c" and "a"+"bc" differ.
		binary.LittleEndian.PutUint64(b[:8], uint64(len(s)))
		h.Write(b[:8])
		h.WriteString(s)
	}
	if !fits { // an unscaled cost beyond int64: rare
		h.WriteString(md.Cost.String())
	}
	return h.Sum64()
}
