package lake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/tally-dev/tally/store"
)

// Keys of a Tally snapshot's summary. RunID and Version say which Tally
// run committed it; Source and ChangesThrough say whose changes it holds
// up to when, so the next export of that database commits only the ones
// after.
const (
	SummaryRunID          = "tally.run-id"
	SummaryVersion        = "tally.version"
	SummarySource         = "tally.source"
	SummaryChangesThrough = "tally.changes-through"
	SummaryPartitions     = "tally.partitions"
)

// ExportOptions say which lake an export writes and who writes it.
type ExportOptions struct {
	Config
	// Source names the database the changes come from (the store's path):
	// the export commits the changes after those its last commit from the
	// same source holds.
	Source  string
	RunID   string
	Version string
}

// ExportResult is what one Export did.
type ExportResult struct {
	Table      string      // namespace.table
	Full       bool        // no earlier commit from the source was found: every partition was written
	Partitions []Partition // the partitions committed; none when nothing changed
	Commit     Commit
	Duration   time.Duration
}

// Export commits to the lake's usage table the partitions of st's usage
// that changed since the table's last commit from o.Source: each an
// overwrite of the whole partition by the rows st holds, all in one
// snapshot; nothing when none changed. With no such commit (a new table,
// another catalog) it writes every partition st has. It reads one
// consistent state of the database, and works on a read-only store.
func Export(ctx context.Context, st *store.Store, o ExportOptions, log zerolog.Logger) (ExportResult, error) {
	began := time.Now()
	l, err := Open(ctx, o.Config)
	if err != nil {
		return ExportResult{}, err
	}
	defer l.Close()
	res := ExportResult{Table: l.namespace + "." + UsageTable}
	sc := usageSchema()
	t, err := l.ensureTable(ctx, UsageTable, sc, usageSpec(sc))
	if err != nil {
		return res, fmt.Errorf("lake: load table %s: %w", res.Table, err)
	}
	through, found, err := changesThrough(t, o.Source)
	if err != nil {
		return res, fmt.Errorf("lake: table %s: %w", res.Table, err)
	}
	res.Full = !found

	conn, err := st.DB().Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("lake: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return res, fmt.Errorf("lake: %w", err)
	}
	defer store.Rollback(conn, nil)

	changes, latest, err := store.UsageChanges(ctx, conn, through)
	// A copy from before the changes were recorded can still be written
	// whole; only what changed after a commit needs them.
	if err != nil && !(res.Full && errors.Is(err, store.ErrNoUsageChanges)) {
		return res, fmt.Errorf("lake: %w", err)
	}
	parts := make([]Partition, 0, len(changes))
	seen := map[Partition]bool{}
	for _, c := range changes {
		p := Partition{Organization: c.Organization, Month: c.Month}
		parts, seen[p] = append(parts, p), true
	}
	if res.Full {
		// Rows loaded before the load recorded its changes are in no
		// change: every partition the table holds is written.
		all, err := allPartitions(ctx, conn)
		if err != nil {
			return res, fmt.Errorf("lake: %w", err)
		}
		for _, p := range all {
			if !seen[p] {
				parts = append(parts, p)
			}
		}
	}
	if len(parts) == 0 {
		log.Info().Str("table", res.Table).Msg("lake: no usage changed since the last commit; nothing committed")
		res.Duration = time.Since(began)
		return res, nil
	}
	if latest.Before(through) {
		latest = through
	}
	props := iceberg.Properties{
		SummaryRunID:          o.RunID,
		SummaryVersion:        o.Version,
		SummarySource:         o.Source,
		SummaryChangesThrough: latest.UTC().Format(time.RFC3339Nano),
		SummaryPartitions:     strconv.Itoa(len(parts)),
	}
	read := func(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
		return conn.QueryContext(ctx, q, args...)
	}
	retried := func(attempt int, err error) {
		log.Warn().Str("table", res.Table).Int("attempt", attempt).Int("max_attempts", MaxAttempts).Err(err).
			Msg("lake: another writer committed first; reloading the table and redoing the commit")
	}
	res.Commit, err = l.ReplaceUsage(ctx, parts, read, props, retried)
	if err != nil {
		return res, fmt.Errorf("lake: commit %d partition(s) to %s: %w", len(parts), res.Table, err)
	}
	res.Partitions = parts
	res.Duration = time.Since(began)
	log.Info().Str("table", res.Table).Int("partitions", len(parts)).Bool("full", res.Full).Int64("rows", res.Commit.Rows).
		Int64("snapshot", res.Commit.SnapshotID).Int("attempts", res.Commit.Attempts).Dur("duration", res.Duration.Round(time.Millisecond)).
		Msg("lake: committed")
	return res, nil
}

// changesThrough finds, from the current snapshot back through its
// parents, the latest commit from source, and the time of the latest
// change it holds.
func changesThrough(t *table.Table, source string) (time.Time, bool, error) {
	for s := t.CurrentSnapshot(); s != nil; {
		if s.Summary != nil && s.Summary.Properties[SummarySource] == source {
			v := s.Summary.Properties[SummaryChangesThrough]
			at, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return time.Time{}, false, fmt.Errorf("snapshot %d: %s %q: %w", s.SnapshotID, SummaryChangesThrough, v, err)
			}
			return at, true, nil
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = t.SnapshotByID(*s.ParentSnapshotID)
	}
	return time.Time{}, false, nil
}

// allPartitions are the partitions of every usage row.
func allPartitions(ctx context.Context, conn *sql.Conn) ([]Partition, error) {
	rows, err := conn.QueryContext(ctx, `SELECT DISTINCT organization, CAST(date_trunc('month', date) AS DATE) AS month FROM usage ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("read usage partitions: %w", err)
	}
	defer rows.Close()
	var out []Partition
	for rows.Next() {
		var p Partition
		if err := rows.Scan(&p.Organization, &p.Month); err != nil {
			return nil, fmt.Errorf("read usage partitions: %w", err)
		}
		p.Month = p.Month.UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}
