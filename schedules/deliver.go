package schedules

import (
	"context"

	"github.com/tally-dev/tally/deliver"
	"github.com/tally-dev/tally/internal/atomicfile"
	"github.com/tally-dev/tally/job"
)

// The deliver step puts in place the finals of closes a kill cut short
// before it sends anything; close's code lives in this package until it has
// one of its own, which then sets the hook instead.
func init() {
	deliver.FinishCloses = func(ctx context.Context, env *job.Env) error {
		_, err := finishCloses(ctx, env)
		return err
	}
}

// fileSHA256 is the sha256 a close records of the files it writes.
func fileSHA256(path string) (string, error) { return atomicfile.SHA256(path) }
