package schedules

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// OpenPublished opens the analysts' published copy of cfg's database for a
// reader (tally report, query, status, export, plan): read-only (or as
// opts say, e.g. store.Query for analysts' SQL), never waiting for the
// writer's lock, and answering even when an analyst holds the copy for
// writing (store.Shared; the notice is logged). A copy that does not
// exist yet is a refusal (job.ErrRefused) saying how it comes about.
func OpenPublished(ctx context.Context, cfg *configs.Config, log zerolog.Logger, opts ...store.Option) (*store.Store, error) {
	opts = append([]store.Option{store.ReadOnly(), store.Shared()}, opts...)
	st, err := store.Open(ctx, store.PublishedPath(cfg.Store.Path), opts...)
	return published(cfg, st, err, log)
}

func published(cfg *configs.Config, st *store.Store, err error, log zerolog.Logger) (*store.Store, error) {
	// Nothing was ever loaded: refused (exit 2), saying what to run.
	var nc *store.NoCopyError
	if errors.As(err, &nc) {
		return nil, job.Refuse(fmt.Errorf("%v: nothing was loaded yet; run tally fetch --config %s, which creates it at the end of its run", err, cfg.Path))
	}
	if err != nil {
		return nil, err
	}
	if n := st.Notice(); n != "" {
		log.Warn().Msg(n)
	}
	return st, nil
}
