package job

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/google/uuid"
)

// Result is what one step of a job did.
type Result struct {
	Rows    int64    // usage rows loaded
	Windows int      // windows loaded
	Outputs []string // files or folders written (workbooks, exports)
	// Warnings are what went wrong without failing the step; the run
	// records them.
	Warnings []string
}

// Step is one step of a scheduled job (a name in schedule.jobs[].run). The
// steps of a job run in order under one run id, with the store the run
// holds. A step returns a *Partial when some of its work failed after all
// retries and the rest is kept: the job's later steps still run, and the
// run is partial. An error that Is ErrRefused refused the step's part
// before anything was touched.
type Step func(ctx context.Context, env *Env, runID uuid.UUID) (Result, error)

var (
	mu    sync.RWMutex
	steps = map[string]Step{}
)

// Register makes a step available to schedule.jobs[].run under name. Each
// capability registers its own step in init, so jobs and capabilities need
// not know each other. Registering a name twice is a programming error and
// panics.
func Register(name string, fn Step) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := steps[name]; ok {
		panic(fmt.Sprintf("job: step %q registered twice", name))
	}
	steps[name] = fn
}

// Lookup is the step registered under name.
func Lookup(name string) (Step, bool) {
	mu.RLock()
	defer mu.RUnlock()
	fn, ok := steps[name]
	return fn, ok
}

// Names lists the registered steps, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(steps))
	for n := range steps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Missing lists the names in run that this build does not provide, so a
// scheduler can warn at start rather than at the first run.
func Missing(run []string) []string {
	var out []string
	for _, s := range run {
		if _, ok := Lookup(s); !ok {
			out = append(out, s)
		}
	}
	return out
}

// Unregister removes the step registered under name, so a test's probe
// step lives only as long as its test.
func Unregister(name string) {
	mu.Lock()
	defer mu.Unlock()
	delete(steps, name)
}

// Named is a step as a run runs it: under the name its job calls it.
type Named struct {
	Name string
	Step Step
}
