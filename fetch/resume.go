package fetch

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"unsafe"

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

// fingerprinter identifies rows for checking a re-read page: every field
// the interface sent, so a changed amount or date is a changed row, in 8
// bytes a row. It is taken of every row handed on, so it is kept cheap:
// each text's hash (hash/maphash of its bytes) is remembered by where the
// text is held, and a row's fingerprint is one hash of its numbers and
// its texts' hashes. The decoder shares one string per distinct text
// (fastJSON.intern), so a row's texts are nearly always ones hashed
// before: a lookup each instead of a pass over their bytes (134 → 71 ns a
// row, BenchmarkFingerprint). A remembered text keeps its string, so its
// memory holds that text for as long as it is remembered: the same
// address and length is the same text. A text held elsewhere (the same
// row read again, by another decoder) hashes to the same value from its
// bytes. One fingerprinter serves one window's pages, on one goroutine.
type fingerprinter struct {
	slots [fpSlots]fpText
}

// fpSlots is a power of two well above a window's distinct texts in most
// organizations; two that share a slot only cost their hashes again.
const (
	fpSlotBits = 11
	fpSlots    = 1 << fpSlotBits
)

type fpText struct {
	s string
	h uint64
}

// fpEmpty is the hash of an empty text, which has no address to remember.
var fpEmpty = maphash.String(fpSeed, "")

func (f *fingerprinter) text(s string) uint64 {
	if s == "" {
		return fpEmpty
	}
	p := uint64(uintptr(unsafe.Pointer(unsafe.StringData(s))))
	e := &f.slots[((p^uint64(len(s)))*0x9e3779b97f4a7c15)>>(64-fpSlotBits)]
	if len(e.s) == len(s) && unsafe.StringData(e.s) == unsafe.StringData(s) {
		return e.h
	}
	h := maphash.String(fpSeed, s)
	e.s, e.h = s, h
	return h
}

// row is md's fingerprint: its fields as words (numbers as integers, a
// float's bits so that no NaN hashes at random, texts as their hashes),
// mixed a pair at a time as wyhash does (each word xored with a key drawn
// from fpSeed, the pair multiplied to 128 bits and the halves folded),
// the pairs independent of each other so that the processor multiplies
// them side by side, and their sum mixed once more.
func (f *fingerprinter) row(md *tally.MeterData) uint64 {
	processed := int64(1<<63 - 1)
	if md.DateProcessed != nil {
		processed = md.DateProcessed.UnixNano()
	}
	price := math.Float64bits(math.NaN()) ^ 1
	if md.Price != nil {
		price = math.Float64bits(*md.Price)
	}
	unscaled, fits := md.Cost.Unscaled64()
	var bigCost uint64
	if !fits { // an unscaled cost beyond int64: rare
		bigCost = maphash.String(fpSeed, md.Cost.String())
	}
	w := [...]uint64{uint64(md.Date.UnixNano()), uint64(processed), uint64(unscaled), uint64(md.Cost.Scale()),
		math.Float64bits(md.Quantity), price, bigCost,
		f.text(md.MeterName), f.text(md.MeterSku), f.text(md.Family), f.text(md.Solution), f.text(md.Unit),
		f.text(md.Currency), f.text(md.Entitlement), f.text(md.EntitlementType), f.text(md.PaymentMethod),
		f.text(md.PaymentMethodName), f.text(md.Project)}
	var h uint64
	for i := 0; i < len(w); i += 2 {
		hi, lo := bits.Mul64(w[i]^fpKeys[i], w[i+1]^fpKeys[i+1])
		h += hi ^ lo
	}
	hi, lo := bits.Mul64(h^fpKeys[len(w)], fpKeys[len(w)+1])
	return hi ^ lo
}

// fpKeys are row's keys, a word each and two for the last mix.
var fpKeys = func() (k [20]uint64) {
	for i := range k {
		k[i] = maphash.String(fpSeed, fmt.Sprint("fingerprint key ", i))
	}
	return k
}()
