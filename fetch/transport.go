package fetch

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// NewHTTPClient builds the client used against the interface. The timeout is
// per request, but a usage answer may stream for minutes: so it bounds the
// wait for response headers and every pause in the body, not the whole
// answer. TLS verification is the standard library's, always on.
func NewHTTPClient(timeout time.Duration, conns int) *http.Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: min(timeout, 30*time.Second), KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   min(timeout, 30*time.Second),
		ResponseHeaderTimeout: timeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   max(2, conns),
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: &idleTimeout{next: tr, d: timeout}}
}

// idleTimeout cancels a request whose body stalls for longer than d.
type idleTimeout struct {
	next http.RoundTripper
	d    time.Duration
}

func (t *idleTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	b := &stallBody{rc: resp.Body, cancel: cancel, d: t.d}
	b.timer = time.AfterFunc(t.d, cancel)
	resp.Body = b
	return resp, nil
}

type stallBody struct {
	rc     io.ReadCloser
	cancel context.CancelFunc
	d      time.Duration
	timer  *time.Timer
	once   sync.Once
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.timer.Reset(b.d)
	return n, err
}

func (b *stallBody) Close() error {
	err := b.rc.Close()
	b.once.Do(func() {
		b.timer.Stop()
		b.cancel()
	})
	return err
}
