package fetch

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
)

// StreamError is a usage fetch that failed after rows of its window were
// handed on: a page that kept failing past its retries, or came back
// different. The caller cannot take the rows back, so it restarts the
// window (in a new transaction), and splits a window that keeps failing
// this way into halves that need fewer pages in a row.
type StreamError struct {
	Window Window
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

// fingerprint identifies a row for checking a re-read page: every field
// the interface sent, so a changed amount or date is a changed row. A
// 64-bit FNV-1a over the fields keeps a page's worth to 8 bytes a row.
func fingerprint(md *MeterData) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	num := func(v uint64) {
		for i := range buf {
			buf[i] = byte(v >> (8 * i))
		}
		h.Write(buf[:])
	}
	str := func(s string) {
		num(uint64(len(s)))
		h.Write([]byte(s))
	}
	num(uint64(md.Date.UnixNano()))
	if md.DateProcessed != nil {
		num(1)
		num(uint64(md.DateProcessed.UnixNano()))
	} else {
		num(0)
	}
	for _, s := range []string{md.MeterName, md.MeterSku, md.Family, md.Solution, md.Unit, md.Currency,
		md.Entitlement, md.EntitlementType, md.PaymentMethod, md.PaymentMethodName, md.Project, md.Cost.String()} {
		str(s)
	}
	num(math.Float64bits(md.Quantity))
	if md.Price != nil {
		str(strconv.FormatFloat(*md.Price, 'g', -1, 64))
	} else {
		num(0)
	}
	return h.Sum64()
}
