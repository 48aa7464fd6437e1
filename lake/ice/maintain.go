package ice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/tally-dev/tally/lake"
)

// Maintain expires the table's snapshots older than keep, never the
// current one, deleting the files only they held, and then deletes the
// files under the table's folder that no snapshot holds and that are
// older than orphanAge: those of commits a kill cut short, or that lost
// a race. Expiring is a commit like any other, redone on the reloaded
// table when another writer committed first, so it is safe beside
// running exports; a file younger than orphanAge is never taken, so an
// export's files written but not yet committed survive. With dry, it only
// counts what it would do. A table the catalog lacks has nothing to do.
func (l *Lake) Maintain(ctx context.Context, name string, keep, orphanAge time.Duration, dry bool) (lake.Maintained, error) {
	m := lake.Maintained{Table: l.namespace + "." + name, DryRun: dry}
	t, err := l.cat.LoadTable(ctx, l.ident(name))
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("load table %s: %w", m.Table, err)
	}
	if dry {
		m.Expired = len(expirable(t, keep, time.Now()))
		m.Snapshots = len(t.Metadata().Snapshots()) - m.Expired
	} else {
		var last error
		for attempt := 1; ; attempt++ {
			before := len(t.Metadata().Snapshots())
			tx := t.NewTransaction()
			err := tx.ExpireSnapshots(table.WithOlderThan(keep), table.WithRetainLast(1))
			if err == nil {
				var after *table.Table
				if after, err = tx.Commit(ctx); err == nil {
					m.Expired, m.Snapshots = before-len(after.Metadata().Snapshots()), len(after.Metadata().Snapshots())
					t = after
					break
				}
			}
			if err = conflict(err); !errors.Is(err, ErrConflict) {
				return m, fmt.Errorf("expire snapshots of %s: %w", m.Table, err)
			}
			if last = err; attempt == MaxAttempts {
				return m, fmt.Errorf("expire snapshots of %s: gave up after %d attempts: %w", m.Table, MaxAttempts, last)
			}
			if t, err = l.cat.LoadTable(ctx, l.ident(name)); err != nil {
				return m, fmt.Errorf("load table %s: %w", m.Table, err)
			}
		}
	}
	res, err := t.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(orphanAge), table.WithDryRun(dry))
	if err != nil {
		return m, fmt.Errorf("delete orphan files of %s: %w", m.Table, err)
	}
	for _, f := range res.OrphanFiles {
		m.Orphans++
		m.OrphanBytes += f.SizeBytes
	}
	return m, nil
}

// expirable are the snapshots of t older than keep at now, but the
// current one and those its branches and tags point at.
func expirable(t *table.Table, keep time.Duration, now time.Time) []int64 {
	held := map[int64]bool{}
	if s := t.CurrentSnapshot(); s != nil {
		held[s.SnapshotID] = true
	}
	for _, ref := range t.Metadata().Refs() {
		held[ref.SnapshotID] = true
	}
	var out []int64
	cutoff := now.Add(-keep).UnixMilli()
	for _, s := range t.Metadata().Snapshots() {
		if !held[s.SnapshotID] && s.TimestampMs < cutoff {
			out = append(out, s.SnapshotID)
		}
	}
	return out
}
