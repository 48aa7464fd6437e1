package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Faults says how often the sim misbehaves. Rates are fractions of
// requests between 0 and 1. RateLimit, RateLimitBare, ServerError and Cut
// exclude one another and are drawn in that order from one number, so their
// sum should not exceed 1 (beyond it the later ones happen less often than
// asked). Slow is drawn on its own and delays any answer, faulty or not.
// Faults are drawn after authentication and routing: a 401, or a 404 or
// 405 for an unknown path or method, is never replaced by a fault.
type Faults struct {
	Seed          int64   // seeds the fault generator; same seed, same faults in the same request order
	RateLimit     float64 // 429 with Retry-After, alternating the seconds and HTTP-date forms
	RateLimitBare float64 // 429 without Retry-After, or with "Retry-After: 0" every other time
	ServerError   float64 // 500, 502, 503 or 504 with the Error body
	Cut           float64 // a 200 whose body stops part way (mid-row for usage) and whose connection drops
	Slow          float64 // answers delayed by SlowDelay
	SlowDelay     time.Duration
	// RefuseRangeDays, when positive, answers 400 InvalidRange to usage
	// windows longer than this many days, as an interface with a tighter
	// limit would.
	RefuseRangeDays int
}

// defaultSlowDelay is the delay of "slow=RATE" without a duration.
const defaultSlowDelay = time.Second

// ParseFaults reads a fault spec such as
// "429=0.1,429bare=0.05,5xx=0.05,cut=0.02,slow=0.01:2s,refuse=10,seed=7".
// An empty spec means no faults.
func ParseFaults(spec string) (Faults, error) {
	var f Faults
	const allowed = "429, 429bare, 5xx, cut, slow, refuse, seed"
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || val == "" {
			return Faults{}, fmt.Errorf("faults item %q: want KEY=VALUE with KEY one of %s", item, allowed)
		}
		if seen[key] {
			return Faults{}, fmt.Errorf("faults item %q: %s is given twice", item, key)
		}
		seen[key] = true
		rate := func(s string) (float64, error) {
			r, err := strconv.ParseFloat(s, 64)
			if err != nil || r < 0 || r > 1 {
				return 0, fmt.Errorf("faults item %q: rate %q must be a number from 0 to 1", item, s)
			}
			return r, nil
		}
		var err error
		switch key {
		case "429":
			f.RateLimit, err = rate(val)
		case "429bare":
			f.RateLimitBare, err = rate(val)
		case "5xx":
			f.ServerError, err = rate(val)
		case "cut":
			f.Cut, err = rate(val)
		case "slow":
			r, d, hasDelay := strings.Cut(val, ":")
			if f.Slow, err = rate(r); err != nil {
				break
			}
			f.SlowDelay = defaultSlowDelay
			if hasDelay {
				f.SlowDelay, err = time.ParseDuration(d)
				if err != nil || f.SlowDelay <= 0 {
					err = fmt.Errorf("faults item %q: delay %q must be a positive duration such as 2s or 500ms", item, d)
				}
			}
		case "refuse":
			f.RefuseRangeDays, err = strconv.Atoi(val)
			if err != nil || f.RefuseRangeDays < 1 {
				err = fmt.Errorf("faults item %q: refuse takes a whole number of days, 1 or more", item)
			}
		case "seed":
			f.Seed, err = strconv.ParseInt(val, 10, 64)
			if err != nil {
				err = fmt.Errorf("faults item %q: seed must be a whole number", item)
			}
		default:
			return Faults{}, fmt.Errorf("faults item %q: unknown key %q; allowed: %s", item, key, allowed)
		}
		if err != nil {
			return Faults{}, err
		}
	}
	if sum := f.RateLimit + f.RateLimitBare + f.ServerError + f.Cut; sum > 1+1e-9 {
		return Faults{}, fmt.Errorf("faults %q: the rates of 429, 429bare, 5xx and cut add up to %g; at most 1 is allowed, as one request gets at most one of them", spec, sum)
	}
	return f, nil
}

// String renders f in ParseFaults' form.
func (f Faults) String() string {
	var parts []string
	add := func(k string, v float64) {
		if v > 0 {
			parts = append(parts, k+"="+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	add("429", f.RateLimit)
	add("429bare", f.RateLimitBare)
	add("5xx", f.ServerError)
	add("cut", f.Cut)
	if f.Slow > 0 {
		parts = append(parts, "slow="+strconv.FormatFloat(f.Slow, 'g', -1, 64)+":"+f.SlowDelay.String())
	}
	if f.RefuseRangeDays > 0 {
		parts = append(parts, "refuse="+strconv.Itoa(f.RefuseRangeDays))
	}
	if f.Seed != 0 {
		parts = append(parts, "seed="+strconv.FormatInt(f.Seed, 10))
	}
	return strings.Join(parts, ",")
}

// fault is what was drawn for one request.
type fault struct {
	delay      time.Duration
	status     int
	retryAfter string // "" sends no Retry-After header
	cut        bool
	cutAt      int
}

var serverErrors = []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}

// draw decides one request's fault. The same number of values is drawn for
// every request, so the sequence of faults depends only on the seed and the
// order of requests.
func (s *Server) draw() fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults
	u, slow, pick := s.rng.Float64(), s.rng.Float64(), s.rng.IntN(1<<30)
	var out fault
	if slow < f.Slow {
		out.delay = f.SlowDelay
		if out.delay <= 0 {
			out.delay = defaultSlowDelay
		}
	}
	switch {
	case u < f.RateLimit:
		out.status = http.StatusTooManyRequests
		// Alternate the two forms RFC 9110 allows.
		if s.retryN%2 == 0 {
			out.retryAfter = "1"
		} else {
			out.retryAfter = time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
		}
		s.retryN++
	case u < f.RateLimit+f.RateLimitBare:
		out.status = http.StatusTooManyRequests
		if s.bareN%2 == 1 {
			out.retryAfter = "0"
		}
		s.bareN++
	case u < f.RateLimit+f.RateLimitBare+f.ServerError:
		out.status = serverErrors[pick%len(serverErrors)]
	case u < f.RateLimit+f.RateLimitBare+f.ServerError+f.Cut:
		out.cut = true
		out.cutAt = pick % 4
	}
	return out
}

func (s *Server) writeFault(w http.ResponseWriter, f fault) {
	if f.retryAfter != "" {
		w.Header().Set("Retry-After", f.retryAfter)
	}
	switch f.status {
	case http.StatusTooManyRequests:
		s.writeError(w, f.status, "TooManyRequests", "the organization's request rate is over its limit; retry later", nil)
	case http.StatusBadGateway:
		s.writeError(w, f.status, "BadGateway", "an upstream service answered badly; retry later", nil)
	case http.StatusServiceUnavailable:
		s.writeError(w, f.status, "ServiceUnavailable", "the service is temporarily unavailable; retry later", nil)
	case http.StatusGatewayTimeout:
		s.writeError(w, f.status, "GatewayTimeout", "an upstream service did not answer in time; retry later", nil)
	default:
		s.writeError(w, f.status, "InternalServerError", "the service failed to answer; retry later", nil)
	}
}
