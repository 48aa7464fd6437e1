package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// NewHTTPClient builds the client used against the interface. The timeout
// (api.timeout) bounds the wait for response headers and every pause in
// the body; answer (api.answer_timeout, 0 for none) bounds one answer
// whole, from the request to the body's last byte, since a usage answer
// that never pauses long could otherwise stream for ever. TLS
// verification is the standard library's, always on.
func NewHTTPClient(timeout, answer time.Duration, conns int) *http.Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: min(timeout, 30*time.Second), KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   min(timeout, 30*time.Second),
		ResponseHeaderTimeout: timeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   max(2, conns),
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: &idleTimeout{next: tr, d: timeout, whole: answer}}
}

// AnswerTimeoutError is an answer that took longer than api.answer_timeout
// from its request to its end. It is not retried: the same answer would
// take as long again.
type AnswerTimeoutError struct{ Limit time.Duration }

func (e *AnswerTimeoutError) Error() string {
	return fmt.Sprintf("the answer was still streaming %s after its request (api.answer_timeout): stopped; the interface sends a usage page in seconds, raise api.answer_timeout only if its pages really take that long", e.Limit)
}

// idleTimeout cancels a request whose body stalls for longer than d, or
// whose answer lasts longer than whole.
type idleTimeout struct {
	next  http.RoundTripper
	d     time.Duration
	whole time.Duration
}

func (t *idleTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	if t.whole > 0 {
		stall := cancel
		var whole context.CancelFunc
		ctx, whole = context.WithTimeoutCause(ctx, t.whole, &AnswerTimeoutError{Limit: t.whole})
		cancel = func() { whole(); stall() }
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, answerCause(ctx, err)
	}
	b := &stallBody{rc: resp.Body, ctx: ctx, cancel: cancel, d: t.d}
	b.timer = time.AfterFunc(t.d, cancel)
	resp.Body = b
	return resp, nil
}

// answerCause is err, or the AnswerTimeoutError that caused it.
func answerCause(ctx context.Context, err error) error {
	var ae *AnswerTimeoutError
	if err != nil && errors.As(context.Cause(ctx), &ae) {
		return ae
	}
	return err
}

type stallBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelFunc
	d      time.Duration
	timer  *time.Timer
	once   sync.Once
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.timer.Reset(b.d)
	return n, answerCause(b.ctx, err)
}

func (b *stallBody) Close() error {
	err := b.rc.Close()
	b.once.Do(func() {
		b.timer.Stop()
		b.cancel()
	})
	return err
}
