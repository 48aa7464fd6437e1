package lake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Partition is one partition of the usage table: an organization's month.
type Partition struct {
	Organization string
	Month        time.Time // the month's first day, UTC
}

func (p Partition) String() string {
	return fmt.Sprintf("%q %s", p.Organization, p.Month.Format("2006-01"))
}

// MaxAttempts bounds how often a commit that lost a race to another
// writer is redone.
const MaxAttempts = 8

// ErrConflict marks a commit that lost a race to another writer: the
// table changed between its load and its commit, and nothing was
// committed. Redoing the change on the reloaded table is safe.
var ErrConflict = errors.New("commit conflict: another writer committed to the table first")

// conflict says whether err is a lost race, and wraps it as ErrConflict.
// iceberg-go marks only some of them (table.ErrCommitFailed); on the SQL
// catalog a writer whose base went stale because another process
// committed first gets the table's requirement check failing ("requirement
// failed: branch main has changed: expected id …, found …"), a plain
// error its retry does not recognise, raised before the catalog writes
// anything.
func conflict(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, table.ErrCommitFailed) || errors.Is(err, table.ErrCommitDiverged) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "requirement failed:") && (strings.Contains(msg, "has changed") || strings.Contains(msg, "was created concurrently")) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// Rows reads the rows of some partitions from the database: a SELECT of
// usageSelect over the usage table, restricted by the condition given.
type Rows func(ctx context.Context, query string, args ...any) (*sql.Rows, error)

// Commit says what one ReplaceUsage committed.
type Commit struct {
	SnapshotID int64 // the snapshot committed; 0 when nothing was
	Attempts   int   // 1, or more when conflicts were redone
	Rows       int64 // rows the partitions hold now
}

// ReplaceUsage replaces the usage table's partitions parts, each whole,
// with their rows in the database read reads, in one snapshot whose
// summary carries props. The overwrite's filter matches whole partitions,
// so the files it drops are dropped, never rewritten, and another
// writer's partitions are left as they are. A commit that loses a race
// (ErrConflict) is redone from the start on the table as it is then: the
// change is a replacement of whole partitions by what the database holds,
// so redoing it never duplicates a row. retried is told of each redo; at
// most MaxAttempts are made.
func (l *Lake) ReplaceUsage(ctx context.Context, parts []Partition, read Rows, props iceberg.Properties, retried func(attempt int, err error)) (Commit, error) {
	if len(parts) == 0 {
		return Commit{}, nil
	}
	var last error
	for attempt := 1; attempt <= MaxAttempts; attempt++ {
		if attempt > 1 {
			retried(attempt, last)
			// Jittered so that writers that collided do not collide again.
			wait := time.Duration(min(25<<attempt, 2000)+rand.IntN(100)) * time.Millisecond
			select {
			case <-ctx.Done():
				return Commit{}, ctx.Err()
			case <-time.After(wait):
			}
		}
		c, err := l.replaceOnce(ctx, parts, read, props)
		if err = conflict(err); err == nil {
			c.Attempts = attempt
			return c, nil
		}
		if !errors.Is(err, ErrConflict) {
			return Commit{}, err
		}
		last = err
	}
	return Commit{}, fmt.Errorf("gave up after %d attempts: %w", MaxAttempts, last)
}

func (l *Lake) replaceOnce(ctx context.Context, parts []Partition, read Rows, props iceberg.Properties) (Commit, error) {
	sc := usageSchema()
	t, err := l.ensureTable(ctx, UsageTable, sc, usageSpec(sc))
	if err != nil {
		return Commit{}, fmt.Errorf("load table %s.%s: %w", l.namespace, UsageTable, err)
	}
	asc, err := arrowSchema(t.Schema())
	if err != nil {
		return Commit{}, err
	}
	cond, args := partitionsWhere(parts)
	rows, err := read(ctx, "SELECT "+usageSelect()+" FROM usage WHERE "+cond, args...)
	if err != nil {
		return Commit{}, fmt.Errorf("read usage: %w", err)
	}
	var n int64
	counted := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range recordsOf(rows, asc) {
			if rec != nil {
				n += rec.NumRows()
			}
			if !yield(rec, err) {
				return
			}
		}
	}
	rdr := array.ReaderFromIter(asc, counted)
	defer rdr.Release()
	tx := t.NewTransaction()
	if err := tx.Overwrite(ctx, rdr, props, table.WithOverwriteFilter(partitionsFilter(parts))); err != nil {
		return Commit{}, fmt.Errorf("write partitions: %w", err)
	}
	t, err = tx.Commit(ctx)
	if err != nil {
		return Commit{}, err
	}
	c := Commit{Rows: n}
	if s := t.CurrentSnapshot(); s != nil {
		c.SnapshotID = s.SnapshotID
	}
	return c, nil
}

// partitionsWhere is the SQL condition selecting the usage rows of parts.
func partitionsWhere(parts []Partition) (string, []any) {
	var conds []string
	var args []any
	for _, p := range parts {
		conds = append(conds, "(organization = ? AND date >= ? AND date < ?)")
		args = append(args, p.Organization, p.Month, p.Month.AddDate(0, 1, 0))
	}
	return strings.Join(conds, " OR "), args
}

// partitionsFilter is the Iceberg filter matching exactly the rows of
// parts: on the partition columns' sources, so that each data file, which
// holds one partition, matches it whole or not at all.
func partitionsFilter(parts []Partition) iceberg.BooleanExpression {
	ps := slices.Clone(parts)
	var out iceberg.BooleanExpression = iceberg.AlwaysFalse{}
	for _, p := range ps {
		one := iceberg.NewAnd(
			iceberg.EqualTo(iceberg.Reference("organization"), p.Organization),
			iceberg.GreaterThanEqual(iceberg.Reference("date"), iceberg.Timestamp(p.Month.UnixMicro())),
			iceberg.LessThan(iceberg.Reference("date"), iceberg.Timestamp(p.Month.AddDate(0, 1, 0).UnixMicro())),
		)
		out = iceberg.NewOr(out, one)
	}
	return out
}
