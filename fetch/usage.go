package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"

	"github.com/tally-dev/tally"
)

// maxPages bounds one listing, against a server whose next links never end
// without ever repeating.
const maxPages = 100000

// errStopped unwinds a usage fetch whose consumer stopped iterating.
var errStopped = errors.New("consumer stopped")

// usageBody is the interface's CustomerUsageQueryData.
type usageBody struct {
	StartDate            string            `json:"startDate"`
	EndDate              string            `json:"endDate"`
	Granularity          tally.Granularity `json:"granularity"`
	Format               tally.Format      `json:"format"`
	FilterOnReportedDate bool              `json:"filterOnReportedDate"`
	GroupBy              []string          `json:"groupBy"`
	ProjectNames         []string          `json:"projectNames,omitempty"`
	PaymentMethodIDs     []string          `json:"paymentMethodIds,omitempty"`
	MeterNames           []string          `json:"meterNames,omitempty"`
}

// checkUsageQuery rejects a query the interface would refuse, before
// anything is sent.
func checkUsageQuery(q tally.UsageQuery) error {
	if err := q.Window.Validate(); err != nil {
		return err
	}
	switch q.Format {
	case "", tally.FormatJSON, tally.FormatCSV:
	default:
		return fmt.Errorf("format %q is not json or csv", q.Format)
	}
	if len(q.ProjectNames) > 0 && len(q.PaymentMethodIDs) > 0 {
		return fmt.Errorf("project names %q and payment method ids %q are mutually exclusive: the interface accepts one filter or the other", q.ProjectNames, q.PaymentMethodIDs)
	}
	for _, l := range []struct {
		name string
		vals []string
	}{{"project names", q.ProjectNames}, {"payment method ids", q.PaymentMethodIDs}, {"meter names", q.MeterNames}} {
		for i, v := range l.vals {
			if v == "" {
				return fmt.Errorf("%s: entry %d is empty", l.name, i+1)
			}
		}
	}
	return nil
}

func newUsageBody(q tally.UsageQuery, w tally.Window) usageBody {
	f := q.Format
	if f == "" {
		f = tally.FormatJSON
	}
	return usageBody{
		StartDate:            w.Start.Format(tally.DateLayout),
		EndDate:              w.End.Format(tally.DateLayout),
		Granularity:          w.Granularity,
		Format:               f,
		FilterOnReportedDate: q.ReportedDate,
		GroupBy:              []string{"meter"},
		ProjectNames:         q.ProjectNames,
		PaymentMethodIDs:     q.PaymentMethodIDs,
		MeterNames:           q.MeterNames,
	}
}

// Usage streams the usage rows of q's window: rows are yielded as they are
// decoded, page after page, and no page is held whole.
//
// Each request is retried (429, 5xx, connection failures, a body cut before
// any of its rows was yielded). A window the interface refuses with 400 is
// split in two and its halves fetched in order, down to one day (or week,
// month, year). A failure after rows were yielded is yielded as an error,
// and the iteration ends: for a cut body it wraps ErrTruncated, and the
// caller restarts the window (see Client.Retry). The iterator never ends
// quietly on a partial answer.
//
// Requests and decoding run on a goroutine of their own, ahead of the
// caller, so that reading the answer overlaps with what the caller does
// with the rows (loading them into the store). Rows are handed over in
// batches, and whenever the reader would wait for the network. The next
// page is requested only once the caller has taken every row of the page
// before, so a caller that stops early causes no request it did not need.
// The caller sees the same rows and errors, in the same order, as if it
// read the answer itself.
func (c *Client) Usage(ctx context.Context, q tally.UsageQuery) iter.Seq2[tally.MeterData, error] {
	return func(yield func(tally.MeterData, error) bool) {
		if err := checkUsageQuery(q); err != nil {
			yield(tally.MeterData{}, fmt.Errorf("usage query: %w", err))
			return
		}
		pctx, stop := context.WithCancel(withResource(ctx, "usage"))
		pr := newProducer(pctx, &usageRun{c: c, q: q})
		go pr.run()
		defer func() {
			// End the producer and wait for it: nothing it started
			// outlives the iteration.
			stop()
			for range pr.batches {
			}
		}()
		for b := range pr.batches {
			for _, md := range b.rows {
				if ctx.Err() != nil {
					// Cancelled: the producer's error names where.
					b = pr.errorAfterCancel(ctx, q)
					yield(tally.MeterData{}, b.err)
					return
				}
				if !yield(md, nil) {
					return
				}
			}
			if b.ack != nil {
				close(b.ack)
			}
			if b.err != nil {
				yield(tally.MeterData{}, b.err)
				return
			}
			select {
			case pr.free <- b.rows[:0]:
			default:
			}
		}
	}
}

// batchRows and batchesAhead size the hand-over from the producer: rows
// go in batches, so that the channel costs little a row, and the producer
// runs at most a few batches ahead, so that memory stays flat.
const (
	batchRows    = 512
	batchesAhead = 4
)

// rowBatch is rows in answer order, then the error that followed them, if
// any. ack, when set, is closed once the rows were taken: the end of a
// page.
type rowBatch struct {
	rows []tally.MeterData
	err  error
	ack  chan struct{}
}

// producer runs one usageRun on its own goroutine and sends its rows.
type producer struct {
	ctx     context.Context
	r       *usageRun
	batches chan rowBatch
	free    chan []tally.MeterData
	cur     []tally.MeterData
}

func newProducer(ctx context.Context, r *usageRun) *producer {
	pr := &producer{ctx: ctx, r: r, batches: make(chan rowBatch, batchesAhead), free: make(chan []tally.MeterData, batchesAhead+2)}
	r.yield = pr.add
	r.beforeRead = func() { pr.flush(nil) }
	r.pageDone = pr.pageDone
	return pr
}

func (pr *producer) run() {
	defer close(pr.batches)
	err := pr.r.window(pr.ctx, pr.r.q.Window)
	if errors.Is(err, errStopped) {
		return
	}
	if len(pr.cur) > 0 || err != nil {
		// Always delivered: the consumer reads on, or drains, to the end.
		pr.batches <- rowBatch{rows: pr.cur, err: err}
	}
}

func (pr *producer) add(md tally.MeterData, _ error) bool {
	if pr.cur == nil {
		select {
		case pr.cur = <-pr.free:
		default:
			pr.cur = make([]tally.MeterData, 0, batchRows)
		}
	}
	pr.cur = append(pr.cur, md)
	return len(pr.cur) < batchRows || pr.flush(nil)
}

// flush sends the rows gathered so far (with ack) and reports false when
// the consumer is gone.
func (pr *producer) flush(ack chan struct{}) bool {
	if len(pr.cur) == 0 && ack == nil {
		return true
	}
	ok := pr.send(rowBatch{rows: pr.cur, ack: ack})
	pr.cur = nil
	return ok
}

// send hands b over, false when the iteration is ending. The consumer
// reads or drains every batch, so the send itself never waits forever.
func (pr *producer) send(b rowBatch) bool {
	if pr.ctx.Err() != nil {
		return false
	}
	pr.batches <- b
	return true
}

// pageDone waits until the consumer has taken every row sent, before the
// next page is requested; false when the consumer is gone.
func (pr *producer) pageDone() bool {
	ack := make(chan struct{})
	if !pr.flush(ack) {
		return false
	}
	select {
	case <-ack:
		return true
	case <-pr.ctx.Done():
		return false
	}
}

// errorAfterCancel returns the producer's error once the caller's context
// is cancelled, or, when the producer had already finished, the error the
// consumer would have met reading on.
func (pr *producer) errorAfterCancel(ctx context.Context, q tally.UsageQuery) rowBatch {
	for b := range pr.batches {
		if b.ack != nil {
			close(b.ack)
		}
		if b.err != nil {
			return b
		}
	}
	return rowBatch{err: fmt.Errorf("fetch usage %s: %w", q.Window, ctx.Err())}
}

// usageRun is one Usage iteration.
type usageRun struct {
	c        *Client
	q        tally.UsageQuery
	yield    func(tally.MeterData, error) bool
	getLinks bool // the server answered 405 to a POST of a next link: GET them

	// beforeRead, when set, is called before each read of an answer's
	// body; pageDone, before a next page is requested, false to stop.
	beforeRead func()
	pageDone   func() bool
}

func (r *usageRun) describe(w tally.Window) string {
	if w == r.q.Window {
		return "fetch usage " + w.String()
	}
	return "fetch usage " + r.q.Window.String() + " (part " + w.String() + ")"
}

// window fetches every page of w, splitting w when the interface refuses
// its range.
func (r *usageRun) window(ctx context.Context, w tally.Window) error {
	c := r.c
	desc := r.describe(w)
	payload, err := json.Marshal(newUsageBody(r.q, w))
	if err != nil {
		return fmt.Errorf("%s: encode query: %w", desc, err)
	}
	accept := "application/json"
	if r.q.Format == tally.FormatCSV {
		accept = "text/csv, application/json"
	}
	link := c.endpoint("usage", nil)
	seen := map[string]bool{link: true}
	rows := 0 // rows of w yielded so far
	fp := new(fingerprinter)
	// fail wraps an error of w: after rows were handed on it is a
	// *StreamError, which the caller answers by restarting (then
	// splitting) the window, since what was handed on cannot be taken back
	// here.
	//
	// Only the stream's faults are: a page that changed, or cuts and
	// failures that outlived their retries. A bad answer (a malformed row,
	// a missing field) is the interface's, would fail again, and fails the
	// window as it is, leaving it as the last good run left it.
	fail := func(err error) error {
		var pc *pageChangedError
		stream := rows > 0 && (errors.As(err, &pc) || Retryable(err))
		err = fmt.Errorf("%s: %w", desc, err)
		if stream {
			return &StreamError{Window: w, Rows: rows, Err: err}
		}
		return err
	}
	for page := 1; ; page++ {
		// The rows of this page handed on, by fingerprint: a page cut (or
		// reset, or timed out) part way is asked for again, the same
		// request or the same next link, and its first rows are checked
		// against these and skipped, so nothing is handed on twice and
		// nothing already loaded is fetched again.
		var handed []uint64
		var next string
		err := c.withRetry(ctx, r.q.Stats, "usage "+w.String(), func(ctx context.Context, _ int) error {
			if len(handed) > 0 {
				c.log.Info().Str("window", w.String()).Int("page", page).Int("rows_taken", len(handed)).
					Msg("resuming page: asking for it again and skipping the rows already taken")
			}
			req := request{method: http.MethodPost, url: link, body: payload, accept: accept, stats: r.q.Stats}
			if page > 1 && r.getLinks {
				req.method, req.body = http.MethodGet, nil
			}
			resp, b, err := c.send(ctx, req)
			var ae *APIError
			if page > 1 && req.method == http.MethodPost && errors.As(err, &ae) && ae.Status == http.StatusMethodNotAllowed {
				// The link carries the query itself: ask for it as is.
				r.getLinks = true
				req.method, req.body = http.MethodGet, nil
				resp, b, err = c.send(ctx, req)
			}
			if err != nil {
				return err
			}
			pg := r.openPage(ctx, resp, b)
			defer pg.close()
			for i := 0; ; i++ {
				md, ok, err := pg.next()
				if err != nil {
					return fmt.Errorf("row %d: %w", rows-len(handed)+i+1, err)
				}
				if !ok {
					if i < len(handed) {
						return &pageChangedError{page: page, at: i + 1, shorter: true}
					}
					// An answer that says how many rows it holds and holds
					// another number is not one to load.
					if n, has := pg.records(); has && n != int64(i) {
						return fmt.Errorf("page %d: supplemental.records says %d rows, the answer held %d: the answer is inconsistent, so the window is not loaded", page, n, i)
					}
					next = pg.nextLink()
					return nil
				}
				if i < len(handed) {
					if fp.row(&md) != handed[i] {
						return &pageChangedError{page: page, at: i + 1}
					}
					continue
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if !r.yield(md, nil) {
					return errStopped
				}
				handed = append(handed, fp.row(&md))
				rows++
			}
		})
		if err != nil {
			if errors.Is(err, errStopped) {
				return errStopped
			}
			var ae *APIError
			if page == 1 && rows == 0 && errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
				if a, b, ok := w.Split(); ok {
					c.log.Info().Str("window", w.String()).Str("code", ae.Code).Str("ref", ae.Ref).
						Str("halves", a.String()+" "+b.String()).Msg("usage range refused, splitting")
					if err := r.window(ctx, a); err != nil {
						return err
					}
					return r.window(ctx, b)
				}
			}
			return fail(err)
		}
		if next == "" {
			return nil
		}
		if r.pageDone != nil && !r.pageDone() {
			return errStopped
		}
		if page >= maxPages {
			return fmt.Errorf("%s: more than %d pages: stopped", desc, maxPages)
		}
		nu, err := c.nextURL(link, next)
		if err != nil {
			return fmt.Errorf("%s: page %d: %w", desc, page, err)
		}
		if seen[nu] {
			return fmt.Errorf("%s: page %d: next link %s was already followed: the interface is paging in a loop", desc, page, redactURL(nu))
		}
		seen[nu] = true
		link = nu
	}
}

// usagePage is one usage answer, read row by row: JSON or CSV according to
// what the server sent, whatever was asked.
type usagePage struct {
	ctx  context.Context
	rc   io.Closer
	body *body // nil when not read from HTTP
	csv  *csvRows
	fast *fastJSON // JSON, until it meets what only env reads
	env  *envelope // JSON, careful: after fast handed off
	// bound limits the bytes read for one row.
	bound *rowBound
	b     rowBuilder
	err   error // sticky: once a page fails it stays failed
}

func (r *usageRun) openPage(ctx context.Context, resp *http.Response, b *body) *usagePage {
	rc := resp.Body
	if r.beforeRead != nil {
		rc = hookedBody{resp.Body, r.beforeRead}
	}
	return newUsagePage(ctx, rc, b, isCSV(resp.Header.Get("Content-Type")))
}

// hookedBody calls before ahead of every read.
type hookedBody struct {
	io.ReadCloser
	before func()
}

func (h hookedBody) Read(p []byte) (int, error) {
	h.before()
	return h.ReadCloser.Read(p)
}

func newUsagePage(ctx context.Context, r io.ReadCloser, b *body, csv bool) *usagePage {
	p := &usagePage{ctx: ctx, rc: r, body: b, bound: &rowBound{r: r, limit: MaxRowBytes + rowReadAhead,
		over: shapef("the answer sent more than %d bytes (1 MiB, fetch.MaxRowBytes) without a row ending: a usage row is never that large, so the answer is not one to load", MaxRowBytes)}}
	if csv {
		p.csv = newCSVRows(p.bound)
	} else {
		p.fast = newFastJSON(p.bound)
	}
	return p
}

// MaxRowBytes bounds one usage row as the interface sends it (a JSON
// object or a CSV line), and so every field of it: a row is a few hundred
// bytes, and a bigger one is an answer gone wrong (a 200 MB field, 2 GiB of
// spaces) that would otherwise be read whole, held in memory and handed to
// DuckDB. A row (or what comes between two rows) beyond it fails its
// window, naming the window, the row and the bound, and is not retried.
const MaxRowBytes = 1 << 20

// rowReadAhead is what the decoders may read past a row's end before it is
// counted as read: their buffers.
const rowReadAhead = fastBufSize

// rowBound fails the read with over once more than limit bytes came
// without a row ending (mark). over is a decode fault: the answer's, not
// retried.
type rowBound struct {
	r        io.Reader
	n, limit int64
	over     error
}

func (b *rowBound) Read(p []byte) (int, error) {
	if b.n >= b.limit {
		return 0, b.over
	}
	if room := b.limit - b.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *rowBound) mark() { b.n = 0 }

func isCSV(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "text/csv" || mt == "application/csv")
}

// next returns the next row, false at the end of the answer. After an
// error it returns that error again: a half-read row is never resumed.
func (p *usagePage) next() (tally.MeterData, bool, error) {
	if p.err != nil {
		return tally.MeterData{}, false, p.err
	}
	md, ok, err := p.read()
	if err != nil {
		p.err = p.failure(err)
		return tally.MeterData{}, false, p.err
	}
	p.bound.mark()
	return md, ok, nil
}

func (p *usagePage) read() (tally.MeterData, bool, error) {
	if p.csv != nil {
		return p.csv.next()
	}
	if p.fast != nil {
		md, ok, err := p.fast.next(&p.b)
		if err != errHandoff {
			return md, ok, err
		}
		p.env, p.fast = p.fast.careful(), nil
	}
	ok, err := p.env.more()
	if err != nil || !ok {
		return tally.MeterData{}, false, err
	}
	md, err := decodeMeterDataJSON(p.env.dec, &p.b, p.env.offset)
	if err != nil {
		return tally.MeterData{}, false, err
	}
	return md, true, nil
}

// failure tells the answer's own faults from a cut or cancelled read.
func (p *usagePage) failure(err error) error {
	if cerr := p.ctx.Err(); cerr != nil {
		return cerr
	}
	if isDecodeFault(err) || errors.Is(err, ErrTruncated) {
		return err
	}
	return readFailure(p.ctx, p.body, err)
}

// records is the answer's supplemental.records, known once next returned
// false, and whether it sent one (a CSV answer has none).
func (p *usagePage) records() (int64, bool) {
	switch {
	case p.fast != nil:
		return p.fast.records, p.fast.hasRecs
	case p.env != nil:
		return p.env.records, p.env.hasRecs
	}
	return 0, false
}

// nextLink is the answer's @odata.nextLink, known once next returned false.
// A CSV answer has none.
func (p *usagePage) nextLink() string {
	switch {
	case p.fast != nil:
		return p.fast.nextLink
	case p.env != nil:
		return p.env.next
	}
	return ""
}

func (p *usagePage) close() { p.rc.Close() }
