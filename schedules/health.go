package schedules

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/secret"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// jobState is what the scheduler knows of one job: its latest finished
// run (seeded from the database at start, so a restart does not forget a
// failure), and counters since the scheduler started.
type jobState struct {
	job          configs.Job
	sched        cron.Schedule
	running      *time.Time // start of the run in progress
	last         *store.RunInfo
	lastSuccess  *time.Time
	runs         map[string]int64 // finished runs by status
	skippedTicks int64            // ticks skipped because the job was still running
	rows         int64
	windows      int64
}

// monitor holds the jobs' states for /healthz and the metrics file. It is
// safe for concurrent use.
type monitor struct {
	mu       sync.Mutex
	started  time.Time
	grace    time.Duration
	now      func() time.Time
	jobs     []*jobState
	onChange func() // called after every change, outside the lock

	// requests and retries count what the jobs' clients sent, by resource
	// and status (see Request, Retry).
	requests *prometheus.CounterVec
	retries  *prometheus.CounterVec

	tokenExpires *time.Time // see Health.TokenExpires

	// budgets are the latest alert check's figures, by budget name;
	// anomalies counts the new anomalies the checks found.
	budgets   map[string][2]float64 // actual and forecast, as fractions of the amount
	anomalies int64

	// fresh is how recent each organization's usage was at the latest
	// fetch (or in the copy at start); health judges its age anew at every
	// check, against staleAfter (usage.stale_after).
	fresh      []job.Freshness
	staleAfter time.Duration
}

// freshnessChecked takes a fetch's judgement of how recent the usage is.
func (m *monitor) freshnessChecked(f []job.Freshness) {
	m.mu.Lock()
	m.fresh = append([]job.Freshness(nil), f...)
	m.mu.Unlock()
	m.changed()
}

// freshness judges the newest usage days against now: what /healthz and
// the age gauge say. Callers hold m.mu.
func (m *monitor) freshness(now time.Time) []job.Freshness {
	out := make([]job.Freshness, len(m.fresh))
	for i, f := range m.fresh {
		out[i] = f.At(now, m.staleAfter)
	}
	return out
}

// alertFigures is what an alert check hands the runner for /metrics
// (alerts.Check has it), so that the runner imports no alerts.
type alertFigures interface {
	// BudgetRatios are each budget's actual and forecast as fractions of
	// its amount, by budget name.
	BudgetRatios() map[string][2]float64
	// NewAnomalies counts the new anomalies the check found.
	NewAnomalies() int
}

// alertsChecked takes one alert check's figures for /metrics.
func (m *monitor) alertsChecked(c alertFigures) {
	m.mu.Lock()
	if m.budgets == nil {
		m.budgets = map[string][2]float64{}
	}
	for name, r := range c.BudgetRatios() {
		m.budgets[name] = r
	}
	m.anomalies += int64(c.NewAnomalies())
	m.mu.Unlock()
	m.changed()
}

func newMonitor(jobs []configs.Job, scheds []cron.Schedule, grace time.Duration, now func() time.Time) *monitor {
	m := &monitor{started: now().UTC(), grace: grace, now: now,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tally_api_requests_total",
			Help: "Requests sent to the management interface since the scheduler started, by resource and HTTP status (error: no answer).",
		}, []string{"resource", "status"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tally_api_retries_total",
			Help: "Requests to the management interface that were retries, by resource.",
		}, []string{"resource"}),
	}
	for i, j := range jobs {
		m.jobs = append(m.jobs, &jobState{job: j, sched: scheds[i], runs: map[string]int64{}})
	}
	return m
}

func (m *monitor) find(name string) *jobState {
	for _, j := range m.jobs {
		if j.job.Name == name {
			return j
		}
	}
	return nil
}

func (m *monitor) changed() {
	if m.onChange != nil {
		m.onChange()
	}
}

// seed takes each job's latest run and last success from what the
// database (its published copy) and the journal say.
func (m *monitor) seed(runs []store.JobRun, pending []store.RunInfo) {
	m.mu.Lock()
	for _, r := range runs {
		if j := m.find(r.Job); j != nil {
			info := r.RunInfo
			j.last, j.lastSuccess = &info, r.LastSuccess
		}
	}
	for _, r := range pending {
		if j := m.find(r.Job); j != nil && (j.last == nil || r.Started.After(j.last.Started)) {
			info := r
			j.last = &info
		}
	}
	m.mu.Unlock()
}

func (m *monitor) runStarted(name string) {
	m.mu.Lock()
	if j := m.find(name); j != nil {
		t := m.now().UTC()
		j.running = &t
	}
	m.mu.Unlock()
	m.changed()
}

// runCancelled records that a started run was called off before it ran
// (the scheduler stopping): the job is no longer running, and no run
// counts.
func (m *monitor) runCancelled(name string) {
	m.mu.Lock()
	if j := m.find(name); j != nil {
		j.running = nil
	}
	m.mu.Unlock()
	m.changed()
}

// runFinished records a finished (or skipped, or panicked) run.
func (m *monitor) runFinished(name string, r store.RunInfo) {
	m.mu.Lock()
	if j := m.find(name); j != nil {
		j.running = nil
		if r.Finished == nil {
			t := m.now().UTC()
			r.Finished = &t
		}
		j.last = &r
		j.runs[r.Status]++
		j.rows += r.Rows
		j.windows += int64(r.Windows)
		if r.Status == store.RunOK {
			j.lastSuccess = r.Finished
		}
	}
	m.mu.Unlock()
	m.changed()
}

func (m *monitor) tickSkipped(name string) {
	m.mu.Lock()
	if j := m.find(name); j != nil {
		j.skippedTicks++
	}
	m.mu.Unlock()
	m.changed()
}

// Health is the body of /healthz.
type Health struct {
	Healthy   bool      `json:"healthy"`
	Status    string    `json:"status"` // ok or failing
	CheckedAt time.Time `json:"checked_at"`
	Started   time.Time `json:"scheduler_started"`
	// TokenExpires is the API token's expiry, when it is a JWT with an exp
	// claim (a detail: health is the jobs').
	TokenExpires *time.Time  `json:"token_expires,omitempty"`
	Jobs         []JobHealth `json:"jobs"`
	// Freshness is how recent each organization's usage is; Stale says
	// why the scheduler is failing when one is older than
	// usage.stale_after, though every run succeeds.
	Freshness []job.Freshness `json:"freshness"`
	Stale     []string        `json:"stale,omitempty"`
}

// JobHealth is one job's part of Health. A job is healthy while its latest
// run succeeded and is recent: its schedule has not come round twice since
// that run started, plus the shutdown grace (for a daily job, 48 hours;
// for one on weekdays, a Friday run lasts until Tuesday). Twice, so a run
// may take up to a whole period and a run skipped because another process
// held the database is not yet an alarm. A job that has not run yet is
// healthy until its schedule has come round twice since the scheduler
// started.
type JobHealth struct {
	Job            string           `json:"job"`
	Healthy        bool             `json:"healthy"`
	Reason         string           `json:"reason"`
	Cron           string           `json:"cron"`
	Steps          []string         `json:"steps"`
	Next           time.Time        `json:"next"`
	ExpectedWithin string           `json:"expected_within"` // from the latest run's start (or the scheduler's) to Deadline
	Deadline       time.Time        `json:"deadline"`        // unhealthy after this unless a run succeeds
	RunningSince   *time.Time       `json:"running_since"`
	LastRun        *store.RunInfo   `json:"last_run"`
	LastSuccess    *time.Time       `json:"last_success"`
	Runs           map[string]int64 `json:"runs"`
	SkippedTicks   int64            `json:"skipped_ticks"`
	Rows           int64            `json:"rows"`
}

// deadline is when a job whose latest run started at ref is overdue: the
// second activation after ref, plus grace.
func deadline(s cron.Schedule, ref time.Time, grace time.Duration) time.Time {
	n1 := s.Next(ref)
	if n1.IsZero() {
		return ref
	}
	n2 := s.Next(n1)
	if n2.IsZero() {
		return n1.Add(grace)
	}
	return n2.Add(grace)
}

func (m *monitor) health() Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now().UTC()
	h := Health{Healthy: true, Status: "ok", CheckedAt: now, Started: m.started, TokenExpires: m.tokenExpires, Jobs: []JobHealth{}}
	for _, j := range m.jobs {
		jh := jobHealth(j, now, m.started, m.grace)
		if !jh.Healthy {
			h.Healthy, h.Status = false, "failing"
		}
		h.Jobs = append(h.Jobs, jh)
	}
	h.Freshness = m.freshness(now)
	for _, f := range h.Freshness {
		if f.Stale {
			h.Healthy, h.Status = false, "failing"
			h.Stale = append(h.Stale, "STALE: "+f.Reason(m.staleAfter))
		}
	}
	return h
}

func jobHealth(j *jobState, now, started time.Time, grace time.Duration) JobHealth {
	jh := JobHealth{
		Job: j.job.Name, Cron: j.job.Cron, Steps: j.job.Run, Next: j.sched.Next(now).UTC(),
		RunningSince: j.running, LastSuccess: j.lastSuccess,
		Runs: map[string]int64{}, SkippedTicks: j.skippedTicks, Rows: j.rows,
	}
	for _, s := range []string{store.RunOK, store.RunPartial, store.RunFailed, store.RunSkipped} {
		jh.Runs[s] = j.runs[s]
	}
	if j.last != nil {
		last := *j.last
		jh.LastRun = &last
	}
	ref := started
	if j.last != nil {
		ref = j.last.Started
	}
	jh.Deadline = deadline(j.sched, ref, grace).UTC()
	jh.ExpectedWithin = jh.Deadline.Sub(ref).Round(time.Second).String()
	switch {
	case j.last != nil && j.last.Status != store.RunOK:
		jh.Reason = fmt.Sprintf("the latest run %s was %s: %s", j.last.ID, j.last.Status, oneLine(j.last.Error))
	case now.After(jh.Deadline) && j.last == nil:
		jh.Reason = fmt.Sprintf("no run since the scheduler started at %s; one was expected by %s", started.Format(time.RFC3339), jh.Deadline.Format(time.RFC3339))
	case now.After(jh.Deadline):
		jh.Reason = fmt.Sprintf("the latest run started at %s and none has succeeded since; one was expected by %s", ref.Format(time.RFC3339), jh.Deadline.Format(time.RFC3339))
	case j.last == nil && j.running != nil:
		jh.Healthy, jh.Reason = true, "the first run is running since "+j.running.Format(time.RFC3339)
	case j.last == nil:
		jh.Healthy, jh.Reason = true, "no run yet; the first is due at "+jh.Next.Format(time.RFC3339)
	default:
		jh.Healthy, jh.Reason = true, "the latest run succeeded; it started at "+ref.Format(time.RFC3339)
	}
	if !jh.Healthy && j.running != nil {
		jh.Reason += fmt.Sprintf(" (a run is in progress since %s)", j.running.Format(time.RFC3339))
	}
	return jh
}

// ServeHTTP answers /healthz: 200 while every job is healthy and no
// organization's usage is stale, 503 otherwise, with Health as JSON
// either way.
func (m *monitor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := m.health()
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// The reason may quote a run's error as it happened: redact it like
	// every other sink.
	b = []byte(secret.Redact(string(b)))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !h.Healthy {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	w.Write(append(b, '\n'))
}

// JobStatus is what `tally status` shows of one configured job.
type JobStatus struct {
	Job         string         `json:"job"`
	Cron        string         `json:"cron"`
	Steps       []string       `json:"steps"`
	Next        *time.Time     `json:"next"`
	LastRun     *store.RunInfo `json:"last_run"`
	LastSuccess *time.Time     `json:"last_success"`
	Pending     bool           `json:"pending"` // the latest run is only in the journal so far
}

// JobStatuses merges the configured jobs with their latest runs in the
// database and in the journal, and says when each runs next.
func JobStatuses(cfg *configs.Config, runs []store.JobRun, pending []store.RunInfo, now time.Time) []JobStatus {
	out := []JobStatus{}
	for _, j := range cfg.Schedule.Jobs {
		js := JobStatus{Job: j.Name, Cron: j.Cron, Steps: j.Run}
		if s, err := configs.ParseCron(j.Cron); err == nil {
			if n := s.Next(now); !n.IsZero() {
				n = n.UTC()
				js.Next = &n
			}
		}
		for _, r := range runs {
			if r.Job == j.Name {
				info := r.RunInfo
				js.LastRun, js.LastSuccess = &info, r.LastSuccess
			}
		}
		for _, r := range pending {
			if r.Job == j.Name && (js.LastRun == nil || r.Started.After(js.LastRun.Started)) {
				info := r
				js.LastRun, js.Pending = &info, true
			}
		}
		out = append(out, js)
	}
	return out
}

// oneLine keeps a multi-line error on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Request and Retry make the monitor the jobs' fetch.Observer.
func (m *monitor) Request(resource string, status int) {
	s := "error"
	if status > 0 {
		s = strconv.Itoa(status)
	}
	m.requests.WithLabelValues(resource, s).Inc()
}

func (m *monitor) Retry(resource string) { m.retries.WithLabelValues(resource).Inc() }
