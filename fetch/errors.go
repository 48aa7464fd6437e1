package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tally-dev/tally/internal/secret"
)

// ErrTruncated marks an answer whose body ended early: the connection was cut
// or reset while reading, or the JSON document stopped mid-way. It is
// Retryable; the rows read before the cut are not the whole answer.
var ErrTruncated = errors.New("answer cut off before its end")

// APIError is a non-2xx answer of the interface. Code, Detail, Ref and
// ExtraDetail come from its Error body; Ref is what support asks for.
type APIError struct {
	Status      int
	Code        string
	Detail      string
	Ref         string
	ExtraDetail map[string]any
	Method      string
	URL         string        // scheme, host and path; never the query
	RetryAfter  time.Duration // parsed Retry-After; 0 when absent, invalid or not in the future
}

// Error renders e.g. `POST /api/v1/organization/reports/usage: 400
// InvalidRange: range too long (ref 3f2a…)`.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Method)
	b.WriteByte(' ')
	b.WriteString(urlPath(e.URL))
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(e.Status))
	code := e.Code
	if code == "" {
		code = http.StatusText(e.Status)
	}
	if code != "" {
		b.WriteByte(' ')
		b.WriteString(code)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Ref != "" {
		b.WriteString(" (ref ")
		b.WriteString(e.Ref)
		b.WriteByte(')')
	}
	return b.String()
}

func urlPath(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Path == "" {
		return s
	}
	return u.EscapedPath()
}

// redactURL drops the query, fragment and any user info: a next link is the
// server's to shape, and what it carries has no place in logs or errors.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable url)"
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}

// errorBody is the interface's Error body.
type errorBody struct {
	Error *struct {
		Code        string         `json:"code"`
		Detail      string         `json:"detail"`
		ExtraDetail map[string]any `json:"extraDetail"`
	} `json:"error"`
	Ref    string `json:"ref"`
	Status int    `json:"status"`
}

// maxErrorBody bounds what is read of an error answer: enough for any Error
// body, not enough for a proxy's HTML page to matter.
const maxErrorBody = 64 << 10

// newAPIError reads a non-2xx answer. A body that is not the interface's
// Error body (a proxy's page, plain text) still gives an APIError, with a
// short snippet of it as Detail.
func newAPIError(resp *http.Response, method, rawURL string, now time.Time) *APIError {
	e := &APIError{
		Status:     resp.StatusCode,
		Method:     method,
		URL:        redactURL(rawURL),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), now),
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var eb errorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error != nil && (eb.Error.Code != "" || eb.Error.Detail != "") {
		e.Code = eb.Error.Code
		e.Detail = eb.Error.Detail
		e.ExtraDetail = eb.Error.ExtraDetail
		e.Ref = eb.Ref
	} else {
		// Redacted whole before it is cut short, or a secret quoted
		// across the cut would leave its first half.
		e.Detail = snippet([]byte(secret.Redact(string(body))))
	}
	// A server that echoes the request back must not put the token into
	// an error that ends up in logs: the one redaction step knows it (and
	// every other secret the run holds) in each form it may come back in.
	e.Code = secret.Redact(e.Code)
	e.Detail = secret.Redact(e.Detail)
	e.Ref = secret.Redact(e.Ref)
	for k, v := range e.ExtraDetail {
		if s, ok := v.(string); ok {
			e.ExtraDetail[k] = secret.Redact(s)
		}
	}
	return e
}

// snippet returns the start of a body as one printable line.
func snippet(body []byte) string {
	const max = 200
	var b strings.Builder
	space := false
	for len(body) > 0 && b.Len() < max {
		r, n := utf8.DecodeRune(body)
		body = body[n:]
		switch {
		case r == utf8.RuneError && n <= 1:
			r = '?'
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case !unicode.IsPrint(r):
			r = '?'
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	s := b.String()
	if len(body) > 0 {
		s += "…"
	}
	return s
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP-date. A value
// of zero or less, a date not in the future, or anything unparsable gives 0:
// the caller then uses its own backoff and never retries at once.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// Anything beyond a day is capped by the policy anyway; keep
		// the multiplication from overflowing.
		return time.Duration(min(secs, 86400)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// transportError is a request that got no answer: connection refused,
// reset, a timeout. It names the request without its query.
type transportError struct {
	Method string
	URL    string
	Err    error
}

func (e *transportError) Error() string {
	return e.Method + " " + urlPath(e.URL) + ": " + e.Err.Error()
}

func (e *transportError) Unwrap() error { return e.Err }

// exhaustedError is a retryable failure that outlived the retry policy.
// Client.Retry does not start the policy over on it: the budget is spent.
type exhaustedError struct {
	attempts int
	limit    time.Duration // MaxElapsed, when that is what ran out
	err      error
}

func (e *exhaustedError) Error() string {
	if e.limit > 0 {
		return fmt.Sprintf("give up after %d attempts (retry time limit %s reached): %v", e.attempts, e.limit, e.err)
	}
	return fmt.Sprintf("give up after %d attempts: %v", e.attempts, e.err)
}

func (e *exhaustedError) Unwrap() error { return e.err }

// Retryable reports whether err is worth another attempt: 429, 500, 502,
// 503, 504, a refused or reset connection, a connection closed before the
// answer, a timeout, or a cut body (ErrTruncated). A cancelled context is
// never retryable.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrTruncated) {
		return true
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
