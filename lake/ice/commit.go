package ice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/tally-dev/tally/lake"
)

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

// Replacement is one commit of whole partitions: Files, Parquet files
// with the table's field ids each holding one of Partitions' rows, take
// the place of every file the partitions hold now.
type Replacement struct {
	Table      string
	Columns    []lake.Column
	Partitions []lake.Partition
	Files      []string
	// Uploads are copied to the table's data folder before the first
	// attempt, each to one of Files: a warehouse on S3's files, which
	// tally writes locally.
	Uploads    []lake.Upload
	Properties iceberg.Properties
	// Retried is told of each redo after a lost race.
	Retried func(attempt int, err error)
	// Loaded, when set, is called once the table is loaded for an
	// attempt, before the attempt commits: tests hold writers there so
	// that they race.
	Loaded func(attempt int)
}

// Replace commits r in one snapshot: an overwrite that drops the files
// of r.Partitions, never rewriting one (each holds one partition), and
// adds r.Files; another writer's partitions are left as they are. A
// commit that loses a race (ErrConflict) is redone from the start on the
// table as it is then: the files to drop are found again, the files to
// add are the same, so redoing never duplicates a row. At most
// MaxAttempts are made.
func (l *Lake) Replace(ctx context.Context, r Replacement) (lake.Commit, error) {
	if len(r.Partitions) == 0 {
		return lake.Commit{}, nil
	}
	if len(r.Uploads) > 0 {
		// Once, not per attempt: a redo commits the same files. A kill
		// or a failure after this leaves files no snapshot holds, which
		// tally lake maintain deletes once they are lake.orphan_age old;
		// they are not deleted here, since a commit that failed on its
		// way back may have landed.
		if err := l.upload(ctx, r); err != nil {
			return lake.Commit{}, err
		}
	}
	var last error
	for attempt := 1; attempt <= MaxAttempts; attempt++ {
		if attempt > 1 {
			if r.Retried != nil {
				r.Retried(attempt, last)
			}
			// Jittered so that writers that collided do not collide again.
			wait := time.Duration(min(25<<attempt, 2000)+rand.IntN(100)) * time.Millisecond
			select {
			case <-ctx.Done():
				return lake.Commit{}, ctx.Err()
			case <-time.After(wait):
			}
		}
		c, err := l.replaceOnce(ctx, r, attempt)
		if err = conflict(err); err == nil {
			c.Attempts = attempt
			return c, nil
		}
		if !errors.Is(err, ErrConflict) {
			return lake.Commit{}, err
		}
		last = err
	}
	return lake.Commit{}, fmt.Errorf("gave up after %d attempts: %w", MaxAttempts, last)
}

func (l *Lake) replaceOnce(ctx context.Context, r Replacement, attempt int) (lake.Commit, error) {
	t, err := l.EnsureTable(ctx, r.Table, r.Columns)
	if err != nil {
		return lake.Commit{}, fmt.Errorf("load table %s.%s: %w", l.namespace, r.Table, err)
	}
	old, err := partitionFiles(ctx, t, r.Partitions)
	if err != nil {
		return lake.Commit{}, fmt.Errorf("read the partitions' files: %w", err)
	}
	if r.Loaded != nil {
		r.Loaded(attempt)
	}
	if len(old) == 0 && len(r.Files) == 0 && t.CurrentSnapshot() == nil {
		// Empty partitions of a table that holds nothing: nothing to
		// commit (Iceberg has no overwrite without a snapshot).
		return lake.Commit{}, nil
	}
	tx := t.NewTransaction()
	if err := tx.ReplaceDataFiles(ctx, old, r.Files, r.Properties); err != nil {
		return lake.Commit{}, fmt.Errorf("replace the partitions' files: %w", err)
	}
	t, err = tx.Commit(ctx)
	if err != nil {
		return lake.Commit{}, err
	}
	c := lake.Commit{Dropped: len(old)}
	if s := t.CurrentSnapshot(); s != nil {
		c.SnapshotID = s.SnapshotID
	}
	return c, nil
}

// partitionFiles are the data files of t's current snapshot in parts,
// told by the partition values each file records.
func partitionFiles(ctx context.Context, t *table.Table, parts []lake.Partition) ([]string, error) {
	if t.CurrentSnapshot() == nil {
		return nil, nil
	}
	orgID, monthID := partitionFieldIDs(t)
	want := map[string]bool{}
	for _, p := range parts {
		want[partKey(p.Organization, monthsSinceEpoch(p.Month))] = true
	}
	tasks, err := t.Scan(table.WithRowFilter(partitionsFilter(parts))).PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, task := range tasks {
		pv := task.File.Partition()
		org, _ := pv[orgID].(string)
		month, ok := pv[monthID].(int32)
		if ok && want[partKey(org, month)] {
			out = append(out, task.File.FilePath())
		}
	}
	return out, nil
}

// partitionFieldIDs are the ids of t's organization and month partition
// fields, which key a data file's partition values.
func partitionFieldIDs(t *table.Table) (orgID, monthID int) {
	spec := t.Spec()
	for _, f := range spec.Fields() {
		switch f.Name {
		case partOrganization:
			orgID = f.FieldID
		case partMonth:
			monthID = f.FieldID
		}
	}
	return orgID, monthID
}

func partKey(org string, month int32) string { return fmt.Sprintf("%d %s", month, org) }

// monthsSinceEpoch is Iceberg's month transform of the month m.
func monthsSinceEpoch(m time.Time) int32 {
	return int32((m.Year()-1970)*12 + int(m.Month()) - 1)
}

// partitionsFilter is the Iceberg filter matching exactly the rows of
// parts: on the partition columns' sources, so that planning reads only
// the manifests of the partitions.
func partitionsFilter(parts []lake.Partition) iceberg.BooleanExpression {
	var out iceberg.BooleanExpression = iceberg.AlwaysFalse{}
	for _, p := range parts {
		one := iceberg.NewAnd(
			iceberg.EqualTo(iceberg.Reference("organization"), p.Organization),
			iceberg.GreaterThanEqual(iceberg.Reference("date"), iceberg.Timestamp(p.Month.UnixMicro())),
			iceberg.LessThan(iceberg.Reference("date"), iceberg.Timestamp(p.Month.AddDate(0, 1, 0).UnixMicro())),
		)
		out = iceberg.NewOr(out, one)
	}
	return out
}

// upload copies r.Uploads to their places, each one of r.Files under the
// table's data folder, through the table's own IO (the catalog's S3
// properties).
func (l *Lake) upload(ctx context.Context, r Replacement) error {
	t, err := l.EnsureTable(ctx, r.Table, r.Columns)
	if err != nil {
		return fmt.Errorf("load table %s.%s: %w", l.namespace, r.Table, err)
	}
	data := strings.TrimRight(t.Location(), "/") + "/data/"
	adds := map[string]bool{}
	for _, f := range r.Files {
		adds[f] = true
	}
	// Cancelled on a failed copy, which aborts the object's upload
	// rather than letting Close complete a part of it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fsys, err := t.FS(ctx)
	if err != nil {
		return fmt.Errorf("open the storage of %s: %w", t.Location(), err)
	}
	w, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("the storage of %s cannot be written (%T)", t.Location(), fsys)
	}
	for _, u := range r.Uploads {
		switch {
		case !strings.HasPrefix(u.To, data) || strings.Contains(u.To[len(data):], ".."):
			return fmt.Errorf("upload %s: not under the table's data folder %s", u.To, data)
		case !adds[u.To]:
			return fmt.Errorf("upload %s: not one of the files the commit adds", u.To)
		}
		if err := copyTo(w, u, cancel); err != nil {
			return fmt.Errorf("upload %s to %s: %w", u.From, u.To, err)
		}
	}
	return nil
}

func copyTo(w iceio.WriteFileIO, u lake.Upload, abort context.CancelFunc) error {
	in, err := os.Open(u.From)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := w.Create(u.To)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		abort()
		out.Close()
		return err
	}
	// Close is what completes an object's upload: its error is the
	// upload's.
	return out.Close()
}
