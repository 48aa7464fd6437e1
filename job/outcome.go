package job

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tally-dev/tally"
)

// Exit codes of INTERFACE.md, the one contract every command holds
// (README, Exit codes).
const (
	ExitOK      = 0
	ExitFailed  = 1 // failed; nothing half-written
	ExitRefused = 2 // refused before anything was touched: usage, config, a month never loaded, a closed month
	ExitPartial = 3 // some work done and recorded, every failure listed
)

// ErrRefused is what every refusal Is: what was asked was refused before
// anything was touched (exit 2). A refusal with its own type (a close of a
// month not over, a month never loaded, an expired token) says so with an
// Is method; any other error is made one with Refuse.
var ErrRefused = errors.New("refused before anything was touched")

// Refuse marks err as a refusal.
func Refuse(err error) error { return &refusal{err} }

type refusal struct{ err error }

func (r *refusal) Error() string        { return r.err.Error() }
func (r *refusal) Unwrap() error        { return r.err }
func (r *refusal) Is(target error) bool { return target == ErrRefused }

// IsRefusal reports whether err refused what was asked before anything
// was touched.
func IsRefusal(err error) bool { return errors.Is(err, ErrRefused) }

// ExitCode is the exit code of a command that ended with err: the one
// place it is decided.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case IsRefusal(err):
		return ExitRefused
	case errors.As(err, new(*Partial)):
		return ExitPartial
	}
	return ExitFailed
}

// Kind is what a failure of a partial run was.
type Kind int

const (
	// KindWindow is a usage window that failed after all retries; the
	// next run fetches it again.
	KindWindow Kind = iota + 1
	// KindOrganization is an organization not fetched at all (its token
	// missing or expired, the interface refusing or unreachable).
	KindOrganization
	// KindReference is reference data not refreshed; reports use the
	// previous snapshot.
	KindReference
	// KindStep is other work of a step that failed after its retries
	// while the rest went on (a delivery to one sink, an alert not sent,
	// a step that refused its part), its error naming itself.
	KindStep
)

// Failure is one failure of a partial run.
type Failure struct {
	Kind         Kind
	Organization string       // whose, "" for the api: form's or none
	Window       tally.Window // the window, for KindWindow
	Err          error
}

// Partial is a run, or a step, where some work failed after all retries
// while the rest was kept (exit 3). It lists every failure, whatever step
// it came from, so what the run records and prints is all of them.
type Partial struct {
	Failures []Failure
}

// Of lists the failures of one kind, in order.
func (p *Partial) Of(kind Kind) []Failure {
	var out []Failure
	for _, f := range p.Failures {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// Failed reports whether p lists any failure.
func (p *Partial) Failed() bool { return len(p.Failures) > 0 }

// Add lists err's failures after p's: another *Partial's each under its
// kind, any other error as a step's. A failure of a step already listed
// (the alerts a fetch and a later alerts step both could not send) is
// listed once.
func (p *Partial) Add(err error) {
	var other *Partial
	if !errors.As(err, &other) {
		other = &Partial{Failures: []Failure{{Kind: KindStep, Err: err}}}
	}
	for _, f := range other.Failures {
		if f.Kind == KindStep && slices.ContainsFunc(p.Failures, func(x Failure) bool {
			return x.Kind == KindStep && x.Err.Error() == f.Err.Error()
		}) {
			continue
		}
		p.Failures = append(p.Failures, f)
	}
}

func (p *Partial) Error() string {
	var b strings.Builder
	orgs := p.Of(KindOrganization)
	// An organization not fetched at all lists its windows in its own
	// error: listed once, there.
	var windows []Failure
	for _, f := range p.Of(KindWindow) {
		if f.Organization == "" || !slices.ContainsFunc(orgs, func(o Failure) bool { return o.Organization == f.Organization }) {
			windows = append(windows, f)
		}
	}
	if n := len(windows); n > 0 {
		fmt.Fprintf(&b, "%d window(s) failed after all retries; the others were loaded and the next run fetches these again:", n)
		for _, f := range windows {
			if f.Organization != "" {
				fmt.Fprintf(&b, "\n  organization %s: %s (%s): %v", f.Organization, f.Window, f.Window.Granularity, f.Err)
				continue
			}
			fmt.Fprintf(&b, "\n  %s (%s): %v", f.Window, f.Window.Granularity, f.Err)
		}
	}
	line := func(s string) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s)
	}
	for _, o := range orgs {
		line(fmt.Sprintf("organization %s not fetched (the others were loaded; the next run fetches it again): %v", o.Organization, o.Err))
	}
	var refs []error
	for _, f := range p.Of(KindReference) {
		refs = append(refs, f.Err)
	}
	if len(refs) > 0 {
		line(fmt.Sprintf("reference data not refreshed (reports use the previous snapshot): %v", errors.Join(refs...)))
	}
	for _, f := range p.Of(KindStep) {
		line(f.Err.Error())
	}
	return b.String()
}

// FailedAfter is a run's failure err, listing what had failed before it in
// the run: the run failed (exit 1), and its error still names every
// failure, not the last.
func FailedAfter(err error, before *Partial) error {
	if !before.Failed() {
		return err
	}
	return &failedRun{err: err, before: before}
}

// failedRun is a failed run that had partial failures first. It unwraps
// to the failure that stopped the run alone: the run failed, it is not
// partial.
type failedRun struct {
	err    error
	before *Partial
}

func (e *failedRun) Error() string {
	return e.err.Error() + "\nbefore that, in this run:\n" + e.before.Error()
}

func (e *failedRun) Unwrap() error { return e.err }

// StepErrors is a step's partial result listing errs, each naming the work
// that failed (a delivery, an alert).
func StepErrors(errs ...error) *Partial {
	p := &Partial{}
	for _, err := range errs {
		p.Failures = append(p.Failures, Failure{Kind: KindStep, Err: err})
	}
	return p
}
