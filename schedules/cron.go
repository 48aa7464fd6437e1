package schedules

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// ScheduleOptions are what `tally schedule` serves beside running jobs.
type ScheduleOptions struct {
	// HealthAddr, when set, is where /healthz (and /metrics) are served,
	// e.g. 127.0.0.1:9090 or :9090.
	HealthAddr string
	// MetricsFile, when set, is a file rewritten with the metrics in the
	// Prometheus text format after every change and every MetricsEvery,
	// for node_exporter's textfile collector (name it *.prom).
	MetricsFile string
	// MetricsEvery is how often the metrics file is rewritten when nothing
	// changes, so its health and next-run figures stay current; 0 = 30s.
	MetricsEvery time.Duration
	// Staleness, when set, judges how recent the usage in the analysts'
	// copy is, so health knows it from the start rather than from the
	// first fetch: alerts.Staleness, handed in by the command line so the
	// runner imports no capability.
	Staleness func(ctx context.Context, st *store.Store, cfg *configs.Config, today time.Time) ([]job.Freshness, error)
}

// Scheduler is `tally schedule`: it runs the configured jobs on their cron
// schedules until its context is cancelled.
type Scheduler struct {
	r      *Runner
	opts   ScheduleOptions
	jobs   []configs.Job
	scheds []cron.Schedule
	mon    *monitor

	metricsMu sync.Mutex
	addrMu    sync.Mutex
	addr      net.Addr
	listening chan struct{}
}

// NewScheduler checks the jobs of r's config: every cron spec must parse
// (a bad one is named with its job) and there must be a job. Every error
// is a problem with the config.
func NewScheduler(r *Runner, opts ScheduleOptions) (*Scheduler, error) {
	jobs := r.Config.Schedule.Jobs
	if len(jobs) == 0 {
		return nil, errors.New("schedule.jobs is empty: nothing to schedule; list a job, e.g. {name: nightly, cron: \"CRON_TZ=UTC 30 2 * * *\", run: [fetch, report]}")
	}
	s := &Scheduler{r: r, opts: opts, jobs: jobs, listening: make(chan struct{})}
	for i, j := range jobs {
		sched, err := configs.ParseCron(j.Cron)
		if err != nil {
			return nil, fmt.Errorf("schedule.jobs[%d].cron: job %q: %w", i, j.Name, err)
		}
		s.scheds = append(s.scheds, sched)
	}
	if opts.MetricsEvery <= 0 {
		s.opts.MetricsEvery = 30 * time.Second
	}
	s.mon = newMonitor(jobs, s.scheds, r.Config.Schedule.Grace, time.Now)
	r.observer = s.mon // the jobs' clients count their requests in the metrics
	r.onAlerts = s.mon.alertsChecked
	r.onFreshness = s.mon.freshnessChecked
	s.mon.staleAfter = r.Config.Usage.StaleAfter
	if exp, ok := fetch.TokenExpiry(r.Token.Reveal()); ok {
		s.mon.tokenExpires = &exp
	}
	return s, nil
}

// HealthAddr is the address /healthz is served on, once Run listens; nil
// before or without --health-addr.
func (s *Scheduler) HealthAddr() net.Addr {
	s.addrMu.Lock()
	defer s.addrMu.Unlock()
	return s.addr
}

// Listening closes once Run has started serving /healthz and scheduling.
func (s *Scheduler) Listening() <-chan struct{} { return s.listening }

// Health is what /healthz answers now.
func (s *Scheduler) Health() Health { return s.mon.health() }

// Run schedules the jobs and blocks until ctx is cancelled (SIGTERM or
// SIGINT). Then it starts no job, lets a running one finish or roll back
// within schedule.grace (its context is cancelled when the grace ends) and
// returns nil once it has. A job still running when its next time comes is
// skipped for that time and logged; a panic in a job is recovered and
// recorded as a failed run. A job whose time came while no scheduler was
// running (the machine was down) runs once at start, as a systemd timer
// with Persistent=true would; what it fetches is decided by the ledger, so
// a long outage is caught up by that one run.
func (s *Scheduler) Run(ctx context.Context) error {
	log := s.r.Log
	s.seed(ctx)
	for _, j := range s.jobs {
		if missing := job.Missing(j.Run); len(missing) > 0 {
			log.Warn().Str("job", j.Name).Strs("steps", missing).Msg("this build of tally does not provide these steps: the job's runs will fail until they are removed from its run list")
		}
	}
	if s.opts.MetricsFile != "" {
		if err := s.writeMetrics(); err != nil {
			return err
		}
		s.mon.onChange = func() {
			if err := s.writeMetrics(); err != nil {
				log.Warn().Err(err).Msg("metrics file not written")
			}
		}
	}
	if s.opts.HealthAddr != "" {
		stop, err := s.serveHealth()
		if err != nil {
			return err
		}
		defer stop()
	}

	cl := cronLogger{log}
	c := cron.New(cron.WithLocation(time.UTC), cron.WithLogger(cl), cron.WithChain(cron.Recover(cl)))
	now := time.Now()
	for i, j := range s.jobs {
		job := j
		// SkipIfStillRunning is per job, with a logger that knows the job,
		// so a skipped time is counted against it.
		wrapped := cron.NewChain(cron.SkipIfStillRunning(skipLogger{log: log, mon: s.mon, job: job.Name})).
			Then(cron.FuncJob(func() { s.runJob(ctx, job) }))
		c.Schedule(s.scheds[i], wrapped)
		if due, missed := s.missed(i, now); missed {
			log.Info().Str("job", job.Name).Time("due", due).Msg("a run was due while no scheduler was running: running it now")
			c.Schedule(onceAt{now.Add(time.Second)}, wrapped)
		}
		log.Info().Str("job", job.Name).Str("cron", job.Cron).Strs("steps", job.Run).Time("next", s.scheds[i].Next(now).UTC()).Msg("job scheduled")
	}
	c.Start()
	close(s.listening)

	var tick <-chan time.Time
	if s.opts.MetricsFile != "" {
		t := time.NewTicker(s.opts.MetricsEvery)
		defer t.Stop()
		tick = t.C
	}
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-tick:
			s.mon.changed()
		}
	}

	grace := s.r.Config.Schedule.Grace
	log.Info().Str("grace", grace.String()).Msg("stopping: no job starts from now; a running job has the grace period to finish, then is cancelled and rolls back; a second signal stops at once")
	stopped := c.Stop()
	// Cancelling a job's context makes it stop promptly; the margin is for
	// recording its outcome.
	limit := time.NewTimer(grace + 15*time.Second)
	defer limit.Stop()
	var err error
	select {
	case <-stopped.Done():
		log.Info().Msg("stopped")
	case <-limit.C:
		err = fmt.Errorf("stop scheduler: a job was still running %s after the stop was asked for, past its %s grace; what it had not committed is rolled back by the database", grace+15*time.Second, grace)
	}
	if s.opts.MetricsFile != "" {
		if werr := s.writeMetrics(); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return err
}

// runJob is one run of job from the scheduler. ctx is the scheduler's: a
// time that comes after the stop was asked for starts nothing.
func (s *Scheduler) runJob(ctx context.Context, job configs.Job) {
	if ctx.Err() != nil {
		return
	}
	log := s.r.Log.With().Str("job", job.Name).Logger()
	started := time.Now().UTC()
	s.mon.runStarted(job.Name)
	defer func() {
		// Record turns a panic in the job's steps into a failed run;
		// this catches one around them, where the run could not be
		// recorded in the database, and notes it in the journal instead.
		if p := recover(); p != nil {
			log.Error().Str("panic", fmt.Sprint(p)).Str("stack", string(debug.Stack())).Msg("job panicked")
			s.noteFailed(job, started, fmt.Sprintf("panic: %v", p))
		}
	}()
	sum, err := s.r.RunJob(ctx, "schedule", job)
	if sum.Run.ID == uuid.Nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// The stop came while the run was starting (opening the store):
		// nothing ran, so nothing failed; the job runs at its next time
		// after a restart. Noted as failed, it turned /healthz to failing
		// on a routine stop.
		log.Info().Err(err).Msg("job not started: the scheduler is stopping")
		s.mon.runCancelled(job.Name)
		return
	}
	if sum.Run.ID == uuid.Nil {
		// Failed before a run could be recorded (the store would not
		// open, say): note it, so it is not lost.
		msg := "the run did not start"
		if err != nil {
			msg = err.Error()
		}
		log.Error().Err(err).Msg("job failed before its run was recorded")
		s.noteFailed(job, started, msg)
		return
	}
	ev := log.Info()
	if err != nil {
		ev = log.Error().Err(err)
	}
	ev.Str("run_id", sum.Run.ID.String()).Str("status", sum.Run.Status).Int64("rows", sum.Run.Rows).Strs("outputs", sum.Outputs).Msg("job finished")
	s.mon.runFinished(job.Name, sum.Run.RunInfo)
}

// noteFailed records a failed run of job in the journal (the database may
// be what failed) and in the monitor.
func (s *Scheduler) noteFailed(job configs.Job, started time.Time, msg string) {
	fin := time.Now().UTC()
	r := store.RunInfo{ID: store.NewRunID(), Job: job.Name, Command: "schedule", Started: started, Finished: &fin, Status: store.RunFailed, Error: msg}
	if err := store.AppendJournal(s.r.Config.Store.Path, r); err != nil {
		s.r.Log.Error().Err(err).Str("job", job.Name).Msg("failed run not noted")
	}
	s.mon.runFinished(job.Name, r)
}

// seed loads each job's latest run from the analysts' copy and the
// journal, so a restarted scheduler still reports a failure and knows when
// each job last ran. Nothing there (a first start) is not an error.
func (s *Scheduler) seed(ctx context.Context) {
	db := s.r.Config.Store.Path
	var runs []store.JobRun
	published := store.PublishedPath(db)
	if _, err := os.Stat(published); err == nil {
		st, err := OpenPublished(ctx, s.r.Config, s.r.Log)
		if err == nil {
			status, serr := st.Status(ctx)
			var fresh []job.Freshness
			var ferr error
			if s.opts.Staleness != nil {
				fresh, ferr = s.opts.Staleness(ctx, st, s.r.Config, time.Now())
			}
			st.Close()
			err = errors.Join(serr, ferr)
			if status != nil {
				runs = status.Jobs
			}
			if s.opts.Staleness != nil && ferr == nil {
				s.mon.freshnessChecked(fresh)
			}
		}
		if err != nil {
			s.r.Log.Warn().Err(err).Msg("previous runs not read: health starts from no history")
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		s.r.Log.Warn().Err(err).Msg("previous runs not read: health starts from no history")
	}
	pending, err := store.PendingRuns(db)
	if err != nil {
		s.r.Log.Warn().Err(err).Msg("runs noted beside the database not read")
	}
	s.mon.seed(runs, pending)
}

// missed reports whether job i had a time between its latest run and now,
// and which.
func (s *Scheduler) missed(i int, now time.Time) (time.Time, bool) {
	s.mon.mu.Lock()
	defer s.mon.mu.Unlock()
	j := s.mon.jobs[i]
	if j.last == nil {
		return time.Time{}, false
	}
	due := s.scheds[i].Next(j.last.Started)
	return due, !due.IsZero() && due.Before(now)
}

func (s *Scheduler) serveHealth() (stop func(), err error) {
	ln, err := net.Listen("tcp", s.opts.HealthAddr)
	if err != nil {
		return nil, fmt.Errorf("serve health on %s: %w", s.opts.HealthAddr, err)
	}
	s.addrMu.Lock()
	s.addr = ln.Addr()
	s.addrMu.Unlock()
	mux := http.NewServeMux()
	mux.Handle("/healthz", s.mon)
	mux.Handle("/metrics", s.mon.metricsHandler(s.r.Version, s.r.Commit))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.r.Log.Error().Err(err).Msg("health server stopped")
		}
	}()
	s.r.Log.Info().Str("addr", ln.Addr().String()).Msg("serving /healthz and /metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

func (s *Scheduler) writeMetrics() error {
	s.metricsMu.Lock()
	defer s.metricsMu.Unlock()
	return writeMetricsFile(s.opts.MetricsFile, s.mon.metrics())
}

// onceAt is a schedule that fires once, at its time.
type onceAt struct{ at time.Time }

func (o onceAt) Next(t time.Time) time.Time {
	if t.Before(o.at) {
		return o.at
	}
	return time.Time{}
}

// cronLogger sends robfig/cron's own logging to zerolog: its routine
// messages (every wake-up) at debug, its errors (recovered panics) at
// error.
type cronLogger struct{ log zerolog.Logger }

func (l cronLogger) Info(msg string, kv ...any) {
	l.log.Debug().Fields(kv).Msg("cron: " + msg)
}

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error().Err(err).Fields(kv).Msg("cron: " + msg)
}

// skipLogger is the logger of one job's SkipIfStillRunning wrapper, which
// logs "skip" (and nothing else) when the job is due while still running.
type skipLogger struct {
	log zerolog.Logger
	mon *monitor
	job string
}

func (l skipLogger) Info(msg string, kv ...any) {
	if msg != "skip" {
		l.log.Debug().Fields(kv).Str("job", l.job).Msg("cron: " + msg)
		return
	}
	l.log.Warn().Str("job", l.job).Msg("job skipped: it was due while its previous run was still going")
	l.mon.tickSkipped(l.job)
}

func (l skipLogger) Error(err error, msg string, kv ...any) {
	l.log.Error().Err(err).Fields(kv).Str("job", l.job).Msg("cron: " + msg)
}
