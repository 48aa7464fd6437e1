package schedules

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/store"
)

// Resolve fills the defaults a fetch with o uses (from usage.start, to
// tomorrow in UTC so today's partial data is fetched and fetched again
// later, the config's granularity) and checks the range. `tally plan` and
// `tally fetch` both call it, so they read the same flags the same way.
func (o FetchOptions) Resolve(cfg *configs.Config, now time.Time) (FetchOptions, error) {
	if o.Granularity == "" {
		o.Granularity = cfg.Usage.Granularity
	}
	if o.From.IsZero() {
		o.From = cfg.Usage.Start
	}
	if o.To.IsZero() {
		o.To = tally.Day.Truncate(now.UTC()).AddDate(0, 0, 1)
	}
	if !o.To.After(o.From) {
		return o, fmt.Errorf("--to %s must be after --from %s (--to is exclusive; --from defaults to usage.start, --to to tomorrow)",
			o.To.Format(tally.DateLayout), o.From.Format(tally.DateLayout))
	}
	return o, nil
}

// PlanReport is what `tally plan` prints and where its ledger came from.
type PlanReport struct {
	Windows []tally.PlannedWindow
	// Ledger is the database whose ledger was read: the analysts'
	// published copy, or the database itself before any copy exists; ""
	// when there is neither (a first fetch).
	Ledger string
	// LedgerAt is when Ledger was last written.
	LedgerAt time.Time
}

// Plan returns exactly the windows the next fetch with opts would request,
// with the same reasons, sending nothing. It reads the ledger of the
// analysts' published copy, which every run that ends writes: read-only,
// without the writer's lock, so a fetch that is running neither waits for
// it nor is held up by it. What a running fetch loads shows once it ends.
func Plan(ctx context.Context, cfg *configs.Config, opts FetchOptions, now time.Time) (PlanReport, error) {
	var rep PlanReport
	path, err := ledgerSource(cfg.Store.Path)
	if err != nil {
		return rep, err
	}
	var st *store.Store
	if path != "" {
		fi, err := os.Stat(path)
		if err != nil {
			return rep, fmt.Errorf("read ledger: %w", err)
		}
		opts := []store.Option{store.ReadOnly()} // the database: a running fetch may be writing it, so never copied
		if path != cfg.Store.Path {
			opts = append(opts, store.Shared())
		}
		if st, err = store.Open(ctx, path, opts...); err != nil {
			if path == cfg.Store.Path {
				return rep, fmt.Errorf("read ledger: %w (the first fetch is still running: plan again once it has published %s)", err, store.PublishedPath(cfg.Store.Path))
			}
			return rep, fmt.Errorf("read ledger: %w", err)
		}
		defer st.Close()
		rep.Ledger, rep.LedgerAt = path, fi.ModTime().UTC()
	}
	if !cfg.Grouped() {
		rep.Windows, _, err = PlanWindows(ctx, cfg, st, opts, now)
		return rep, err
	}
	// Each organization's own ledger: the windows of each, in config
	// order.
	for _, org := range cfg.Organizations {
		ws, _, err := planOrgWindows(ctx, cfg, org, st, opts, now)
		if err != nil {
			return rep, fmt.Errorf("organization %s: %w", org.Name, err)
		}
		for _, w := range ws {
			w.Organization = org.Name
			rep.Windows = append(rep.Windows, w)
		}
	}
	return rep, nil
}

// ledgerSource is the database Plan reads: the published copy, else the
// database itself (a first run killed before it published), else none.
func ledgerSource(db string) (string, error) {
	for _, p := range []string{store.PublishedPath(db), db} {
		_, err := os.Stat(p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("read ledger: %w", err)
		}
	}
	return "", nil
}
