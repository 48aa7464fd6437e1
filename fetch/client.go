package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/secret"

	"github.com/rs/zerolog"
)

// Client talks to the management interface. It is safe for concurrent use;
// every method takes the context that bounds its requests and retries.
type Client struct {
	base      *url.URL     // scheme, host and path prefix; no query
	baseStr   string       // base without a trailing slash, paths are appended
	token     secret.Value // formats as [redacted]; Reveal only for the header
	hc        *http.Client
	retry     RetryPolicy
	log       zerolog.Logger
	paths     map[string]string
	userAgent string
	errs      []error // from options, reported by NewClient

	// connectRetries bounds the retries of a request that cannot connect
	// while the interface has not answered this client once (reached):
	// a wrong address fails in seconds, while an interface that answered
	// and then went away gets the full retry policy.
	connectRetries int
	observer       Observer
	reached        atomic.Bool
	sent, retried  atomic.Int64 // every request and retry, references included
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client; its timeouts are the caller's. Without
// it the client uses its own transport, never http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc == nil {
			c.errs = append(c.errs, errors.New("http client must not be nil"))
			return
		}
		c.hc = hc
	}
}

// WithRetry sets the retry policy; zero durations take DefaultRetry's.
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) {
		np, err := p.normalize()
		if err != nil {
			c.errs = append(c.errs, err)
			return
		}
		c.retry = np
	}
}

// WithLogger sets the logger: requests at debug, retries at warn. The token
// is never logged.
func WithLogger(l zerolog.Logger) Option {
	return func(c *Client) { c.log = l }
}

// WithPaths overrides entries of DefaultPaths (config api.paths). An unknown
// key or a malformed path makes NewClient fail, naming it.
func WithPaths(paths map[string]string) Option {
	return func(c *Client) {
		for k, v := range paths {
			if err := tally.CheckPathKey(k); err != nil {
				c.errs = append(c.errs, err)
				continue
			}
			if err := tally.CheckPath(k, v); err != nil {
				c.errs = append(c.errs, fmt.Errorf("api path %s: %w", k, err))
				continue
			}
			c.paths[k] = v
		}
	}
}

// WithConnectRetries sets how often a request that cannot connect (refused,
// no such host, no route) is retried before the interface has answered
// once (config api.connect_retries; default DefaultConnectRetries).
func WithConnectRetries(n int) Option {
	return func(c *Client) {
		if n < 0 {
			c.errs = append(c.errs, fmt.Errorf("connect retries %d must not be negative", n))
			return
		}
		c.connectRetries = n
	}
}

// Observer is told of every request the client sends, by resource (a
// DefaultPaths key) and HTTP status (0: no answer, the connection failed),
// and of every retry: the request and retry counters of /metrics.
type Observer interface {
	Request(resource string, status int)
	Retry(resource string)
}

// WithObserver sets the Observer; it is called from the client's
// goroutines and must be safe for concurrent use.
func WithObserver(o Observer) Option { return func(c *Client) { c.observer = o } }

type resourceKey struct{}

// withResource marks ctx as the requests of one resource, for the
// Observer.
func withResource(ctx context.Context, resource string) context.Context {
	return context.WithValue(ctx, resourceKey{}, resource)
}

func resourceOf(ctx context.Context) string {
	if r, ok := ctx.Value(resourceKey{}).(string); ok {
		return r
	}
	return "other"
}

// DefaultConnectRetries is the connect retries of a client built without
// WithConnectRetries.
const DefaultConnectRetries = 3

// Requests and Retries count what the client sent since it was made,
// every resource included.
func (c *Client) Requests() int64 { return c.sent.Load() }
func (c *Client) Retries() int64  { return c.retried.Load() }

// WithUserAgent sets the User-Agent to "tally/<version>"; the default is
// "tally/dev".
func WithUserAgent(version string) Option {
	return func(c *Client) {
		if version = strings.TrimSpace(version); version != "" {
			c.userAgent = "tally/" + version
		}
	}
}

// NewClient builds a client for the interface at baseURL. The base URL must
// be https; plain http is accepted only for a loopback host (a local
// simulation), so the token never crosses a network in clear text.
func NewClient(baseURL string, tok secret.Value, opts ...Option) (*Client, error) {
	base, err := tally.CheckBaseURL(baseURL)
	if err != nil {
		return nil, fmt.Errorf("base url %w", err)
	}
	// Read here for the checks only; the header is the one place it is sent.
	token := tok.Reveal()
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("api token is empty: set the environment variable or file the config's api.token_env / api.token_file names")
	}
	if strings.ContainsAny(token, "\r\n") {
		return nil, errors.New("api token holds a line break: check the token file for a stray newline inside it")
	}
	c := &Client{
		base:      base,
		baseStr:   strings.TrimRight(base.String(), "/"),
		token:     tok,
		retry:     DefaultRetry(),
		log:       zerolog.Nop(),
		paths:     make(map[string]string, len(tally.DefaultPaths)),
		userAgent: "tally/dev",

		connectRetries: DefaultConnectRetries,
	}
	c.retry.Sleep = sleepCtx
	for k, v := range tally.DefaultPaths {
		c.paths[k] = v
	}
	for _, o := range opts {
		o(c)
	}
	if len(c.errs) > 0 {
		return nil, fmt.Errorf("new client: %w", errors.Join(c.errs...))
	}
	if c.hc == nil {
		c.hc = defaultHTTPClient(base)
	} else if c.hc.CheckRedirect == nil {
		// Go's own policy forwards the Authorization header to another
		// port of the same host; ours keeps redirects on the base
		// origin. A copy, so the caller's client is left as it is.
		hc := *c.hc
		hc.CheckRedirect = sameOriginRedirects(base)
		c.hc = &hc
	}
	return c, nil
}

// defaultHTTPClient bounds the wait for answer headers but not the body: a
// usage answer may stream for minutes.
func defaultHTTPClient(base *url.URL) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: tr, CheckRedirect: sameOriginRedirects(base)}
}

// sameOriginRedirects follows a redirect only within the base URL's origin:
// the token is sent nowhere else.
func sameOriginRedirects(base *url.URL) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("stopped after 5 redirects")
		}
		if !sameOrigin(base, req.URL) {
			return fmt.Errorf("redirect to %s refused: not the base url's origin", redactURL(req.URL.String()))
		}
		return nil
	}
}

// sameOrigin reports whether u has the scheme, host and port of base.
func sameOrigin(base, u *url.URL) bool {
	return strings.EqualFold(base.Scheme, u.Scheme) &&
		strings.EqualFold(base.Hostname(), u.Hostname()) &&
		effectivePort(base) == effectivePort(u)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// endpoint returns the URL of a resource path with its placeholders filled.
func (c *Client) endpoint(key string, vars map[string]string) string {
	return c.baseStr + tally.ExpandPath(c.paths[key], vars)
}

// nextURL resolves a next link and checks that it stays on the base URL's
// origin: the token is never sent anywhere else.
func (c *Client) nextURL(from, link string) (string, error) {
	ref, err := url.Parse(link)
	if err != nil {
		return "", fmt.Errorf("next link is not a URL: %v", err)
	}
	cur, err := url.Parse(from)
	if err != nil {
		return "", fmt.Errorf("next link: current url: %v", err)
	}
	u := cur.ResolveReference(ref)
	if !sameOrigin(c.base, u) {
		return "", fmt.Errorf("next link %s is not on the base url's origin %s://%s: refused, the token is sent nowhere else",
			redactURL(u.String()), c.base.Scheme, c.base.Host)
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

// request is one HTTP request of the interface.
type request struct {
	method string
	url    string
	body   []byte // nil: no body
	accept string // "" means application/json
	stats  *tally.Stats
}

// send makes one attempt at r. A non-2xx answer becomes an *APIError with
// the body read and closed; a 2xx answer is returned with a body that
// counts bytes and remembers read errors.
func (c *Client) send(ctx context.Context, r request) (*http.Response, *body, error) {
	var rd io.Reader
	if r.body != nil {
		rd = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("build request %s %s: %w", r.method, redactURL(r.url), err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token.Reveal())
	accept := r.accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", c.userAgent)
	if r.stats != nil {
		r.stats.Requests.Add(1)
	}
	c.sent.Add(1)
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err == nil {
		c.reached.Store(true)
	}
	if c.observer != nil {
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		c.observer.Request(resourceOf(ctx), status)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, nil, cerr
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		c.log.Debug().Str("method", r.method).Str("url", redactURL(r.url)).AnErr("error", err).Msg("request failed")
		return nil, nil, &transportError{Method: r.method, URL: redactURL(r.url), Err: err}
	}
	b := &body{rc: resp.Body, stats: r.stats}
	resp.Body = b
	c.log.Debug().Str("method", r.method).Str("url", redactURL(r.url)).Int("status", resp.StatusCode).
		Str("content_type", resp.Header.Get("Content-Type")).Dur("wait", time.Since(start).Round(time.Millisecond)).Msg("answer")
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ae := newAPIError(resp, r.method, r.url, time.Now())
		resp.Body.Close()
		return nil, nil, ae
	}
	return resp, b, nil
}

// body wraps an answer's body: it counts bytes into Stats and keeps the
// first read error other than EOF, so a decoder's "unexpected end" can be
// told apart from a cut connection.
type body struct {
	rc    io.ReadCloser
	stats *tally.Stats
	err   error
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.stats != nil {
		b.stats.Bytes.Add(int64(n))
	}
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *body) Close() error { return b.rc.Close() }

// readFailure turns a decoding error into what the caller should see: the
// context's error when it was cancelled, ErrTruncated when the body was cut
// (a read error, or a document that ends early), or err itself.
func readFailure(ctx context.Context, b *body, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	var ae *AnswerTimeoutError
	if b != nil && errors.As(b.err, &ae) {
		return ae // not a cut: the answer would take as long again
	}
	if b != nil && b.err != nil {
		return fmt.Errorf("%w: %w", ErrTruncated, b.err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %w", ErrTruncated, io.ErrUnexpectedEOF)
	}
	return err
}
