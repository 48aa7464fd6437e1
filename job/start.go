package job

import (
	"context"
	"fmt"
	"sort"
)

// Start is what a capability does at the start of every run that writes,
// once the run holds the store and before its steps, whichever steps they
// are: package allocation puts the run's config's chargeback in the store,
// so the analysts' views follow the config of the latest run that wrote.
type Start func(ctx context.Context, env *Env) error

var starts = map[string]Start{}

// RegisterStart makes fn part of the start of every run that writes. Each
// capability registers its own in init, as its step (Register), so the
// runner need not know it. Registering a name twice is a programming error
// and panics.
func RegisterStart(name string, fn Start) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := starts[name]; ok {
		panic(fmt.Sprintf("job: start %q registered twice", name))
	}
	starts[name] = fn
}

// Starts are the registered starts, by name: the order the runner runs
// them in.
func Starts() []Start {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(starts))
	for n := range starts {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Start, len(names))
	for i, n := range names {
		out[i] = starts[n]
	}
	return out
}
