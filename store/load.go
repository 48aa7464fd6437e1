package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"iter"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/secret"
)

// costScale and costWidth are usage.cost's DECIMAL(38, 12).
const (
	costScale = 12
	costWidth = 38
)

// maxCost bounds the unscaled value DECIMAL(38, 12) holds: 10^38 - 1.
var maxCost = new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(costWidth), nil), big.NewInt(1))

// LoadResult says what one LoadWindow did.
type LoadResult struct {
	Rows     int64         // rows inserted
	Replaced int64         // rows of the window and scope deleted first
	Duration time.Duration // from the call to the commit, fetching included
}

// LoadWindow replaces, in one transaction, every usage row of q's window,
// granularity, basis and scope with rows, and records the window in the
// ledger (fetch_windows). Ledger entries of the same granularity, basis and
// scope that lie wholly inside the window are replaced; one that overlaps it
// in part is cut back to the days outside it, with those days' row count,
// so the ledger never holds a day twice and its row counts add up to the
// table's. The sums kept from the rows (daily_usage_cost, daily_usage_totals)
// are rewritten for the days the window changes in the same transaction.
//
// The scope's rows are those q's filters select: with no filter every row
// of the granularity and basis in the window, otherwise the rows of the
// listed projects, payment methods and meters. The window applies to
// `date` for basis usage and to `date_processed` for basis reported.
//
// Rows stream into DuckDB as rows yields them, through one INSERT that
// writes row groups as they fill (see insertRows); memory does not grow
// with their number. When rows yields an error, a row falls outside
// the window or the scope, a cost has more than 12 decimals or does not fit
// DECIMAL(38, 12), or ctx is cancelled, the transaction is rolled back and
// the window stays as it was. Concurrent calls each use their own
// connection and transaction.
//
// The ledger records q.Stats as it stands at commit; a Stats shared by
// several windows gives their running total, so give each window its own
// for per-window numbers.
func (s *Store) LoadWindow(ctx context.Context, q tally.UsageQuery, runID uuid.UUID, rows iter.Seq2[tally.MeterData, error]) (LoadResult, error) {
	began := time.Now()
	w := q.Window
	label := fmt.Sprintf("load window %s (%s, %s, %s)", w, w.Granularity, q.Basis(), q.Scope())
	if q.Organization != "" {
		label = fmt.Sprintf("load window %s of organization %q (%s, %s, %s)", w, q.Organization, w.Granularity, q.Basis(), q.Scope())
	}
	if err := s.writable(label); err != nil {
		return LoadResult{}, err
	}
	if err := checkWindow(w); err != nil {
		return LoadResult{}, fmt.Errorf("%s: %w", label, err)
	}
	// A window that cuts back an older ledger entry loads alone among those
	// that do: two windows overlapping one entry would each delete it, and
	// DuckDB fails the second transaction ("Conflict on tuple deletion").
	// Windows that overlap no entry in part (a backfill) still load side
	// by side, and the ledger changes with the rows, in one transaction.
	cuts, err := s.cutsBack(ctx, q)
	if err != nil {
		return LoadResult{}, fmt.Errorf("%s: read ledger: %w", label, err)
	}
	// The daily costs the load keeps (daily_usage_cost) change on the
	// window's days; for an hour or day window they change on its whole
	// months when a month window covers them too, as the month's hour and
	// day rows may count from now on (usage_coverage). Such a window
	// rewrites days other windows of the month also rewrite, so it loads
	// alone, like one that cuts the ledger back.
	costFrom, costTo, wide, err := s.dayCostSpan(ctx, q)
	if err != nil {
		return LoadResult{}, fmt.Errorf("%s: read ledger: %w", label, err)
	}
	if cuts || wide {
		s.ledgerMu.Lock()
		defer s.ledgerMu.Unlock()
	}
	// A window whose rows may count in a closed month may rewrite what
	// the close keeps of its keys (month_close_keys): such windows load
	// one at a time.
	closing, err := s.mayKeyClosedMonth(ctx, q.Organization, q.Basis(), w.Granularity, w.Start)
	if err != nil {
		return LoadResult{}, fmt.Errorf("%s: %w", label, err)
	}
	if closing {
		s.closeKeysMu.Lock()
		defer s.closeKeysMu.Unlock()
	}
	if err := s.loads.begin(ctx, s.db); err != nil {
		return LoadResult{}, fmt.Errorf("%s: %w", label, err)
	}
	defer s.loads.end(s.db)
	var res LoadResult
	err = s.inTx(ctx, func(conn *sql.Conn) error {
		// The partitions (months of date) the window changes: those of the
		// rows it replaces and of those it writes. Every row's date is in
		// the window (checkRow), so they are the months the window
		// overlaps, found without reading the rows; a month with none is
		// noted too, and the export writes it again as it is. For basis
		// reported the window is on date_processed, and the rows' dates
		// may be in any month: the rows are read, before and after.
		reported := q.Basis() == tally.BasisReported
		changed := windowMonths(w)
		if reported {
			clear(changed)
			if err := scopeMonths(ctx, conn, q, changed); err != nil {
				return err
			}
		}
		del, args := scopeDelete(q)
		r, err := conn.ExecContext(ctx, del, args...)
		if err != nil {
			return fmt.Errorf("delete old rows: %w", err)
		}
		if res.Replaced, err = r.RowsAffected(); err != nil {
			return err
		}
		fetchedAt := time.Now().UTC()
		var keys *windowKeys
		if s.keyed {
			if keys, err = s.windowKeys(ctx, conn, q); err != nil {
				return err
			}
		}
		if res.Rows, err = insertRows(ctx, conn, q, runID, fetchedAt, rows, keys); err != nil {
			return err
		}
		if keys != nil {
			if err := keys.addFresh(ctx, conn); err != nil {
				return err
			}
			if closing && len(keys.ids) > 0 {
				lo, hi := int64(slices.Min(keys.ids))-1, int64(slices.Max(keys.ids))
				if err := s.keysInClosedMonths(ctx, conn, lo, hi); err != nil {
					return err
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var requests, retries, bytes int64
		if q.Stats != nil {
			requests, retries, bytes = q.Stats.Requests.Load(), q.Stats.Retries.Load(), q.Stats.Bytes.Load()
		}
		g, basis, scope := string(w.Granularity), string(q.Basis()), q.Scope()
		if err := trimLedger(ctx, conn, q); err != nil {
			return fmt.Errorf("update ledger: %w", err)
		}
		res.Duration = time.Since(began)
		if _, err := conn.ExecContext(ctx, `INSERT INTO fetch_windows
(organization, granularity, basis, scope, start, "end", rows, run_id, fetched_at, requests, retries, bytes, duration_ms)
VALUES (?, ?, ?, ?, ?::DATE, ?::DATE, ?, ?::UUID, ?, ?, ?, ?, ?)`,
			q.Organization, g, basis, scope, w.Start, w.End, res.Rows, runID.String(), fetchedAt,
			requests, retries, bytes, res.Duration.Milliseconds()); err != nil {
			return fmt.Errorf("update ledger: %w", err)
		}
		if reported {
			if err := scopeMonths(ctx, conn, q, changed); err != nil {
				return err
			}
		}
		if err := refreshDayTotals(ctx, conn, q.Organization, w.Granularity, basis, w.Start.UTC(), w.End.UTC(), keys != nil); err != nil {
			return err
		}
		if costTo.After(costFrom) {
			if err := refreshDayCost(ctx, conn, q.Organization, costFrom, costTo); err != nil {
				return err
			}
		}
		return noteChanges(ctx, conn, q.Organization, changed)
	})
	if err != nil {
		return LoadResult{}, fmt.Errorf("%s: %w", label, err)
	}
	s.stampChanges(ctx)
	if costTo.After(costFrom) {
		// The load is committed: it succeeded, whatever happens next. Its
		// days stay listed in baseline_dirty until a rewrite succeeds, so
		// one that is cut short or fails here is done by the next load or
		// by the next writer to open the store. A cancel does not stop it:
		// it is short, and the ledger already says the window is in.
		_ = s.settleBaselines(context.WithoutCancel(ctx))
	}
	res.Duration = time.Since(began)
	return res, nil
}

// checkWindow accepts any non-empty window of whole UTC days: the ledger
// stores dates, and a window the interface would refuse is the fetcher's
// concern, not the store's.
func checkWindow(w tally.Window) error {
	if !w.Granularity.Valid() {
		return fmt.Errorf("granularity %q is not one of hour, day, week, month, year", w.Granularity)
	}
	for _, t := range []time.Time{w.Start, w.End} {
		if u := t.UTC(); !u.Equal(time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)) {
			return fmt.Errorf("window edge %s is not midnight UTC", t.Format(time.RFC3339))
		}
	}
	if !w.End.After(w.Start) {
		return errors.New("end must be after start")
	}
	return nil
}

// cutsBack reports whether q's window overlaps a ledger entry of its
// granularity, basis and scope that does not lie wholly inside it: one that
// loading the window cuts back. Entries wholly inside a window cannot
// overlap another window of the same run, as those never overlap.
func (s *Store) cutsBack(ctx context.Context, q tally.UsageQuery) (bool, error) {
	w := q.Window
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM fetch_windows
WHERE organization = ? AND granularity = ? AND basis = ? AND scope = ? AND start < ?::DATE AND "end" > ?::DATE
  AND (start < ?::DATE OR "end" > ?::DATE)`,
		q.Organization, string(w.Granularity), string(q.Basis()), q.Scope(), w.End, w.Start, w.Start, w.End).Scan(&n)
	return n > 0, err
}

// trimLedger removes the ledger entries of q's granularity, basis and scope
// that overlap q's window and puts back, for one that reaches outside it,
// the part before and the part after, each with the rows the usage table
// holds for those days. The parts keep the run, fetch time and costs of the
// fetch that loaded them.
func trimLedger(ctx context.Context, conn *sql.Conn, q tally.UsageQuery) error {
	w := q.Window
	g, basis, scope := string(w.Granularity), string(q.Basis()), q.Scope()
	const overlapping = `organization = ? AND granularity = ? AND basis = ? AND scope = ? AND start < ?::DATE AND "end" > ?::DATE`
	type entry struct {
		start, end, fetchedAt           time.Time
		runID                           string
		requests, retries, bytes, durMS int64
	}
	rows, err := conn.QueryContext(ctx, `SELECT start, "end", run_id::VARCHAR, fetched_at, requests, retries, bytes, duration_ms
FROM fetch_windows WHERE `+overlapping, q.Organization, g, basis, scope, w.End, w.Start)
	if err != nil {
		return err
	}
	var cut []entry
	for rows.Next() {
		var e entry
		if err := rows.Scan(&e.start, &e.end, &e.runID, &e.fetchedAt, &e.requests, &e.retries, &e.bytes, &e.durMS); err != nil {
			rows.Close()
			return err
		}
		cut = append(cut, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM fetch_windows WHERE `+overlapping, q.Organization, g, basis, scope, w.End, w.Start); err != nil {
		return err
	}
	for _, e := range cut {
		for _, part := range [][2]time.Time{{e.start, w.Start}, {w.End, e.end}} {
			if !part[0].Before(part[1]) {
				continue
			}
			pq := q
			pq.Window.Start, pq.Window.End = part[0], part[1]
			where, args := scopeWhere(pq)
			var n int64
			if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM usage WHERE "+where, args...).Scan(&n); err != nil {
				return err
			}
			if _, err := conn.ExecContext(ctx, `INSERT INTO fetch_windows
(organization, granularity, basis, scope, start, "end", rows, run_id, fetched_at, requests, retries, bytes, duration_ms)
VALUES (?, ?, ?, ?, ?::DATE, ?::DATE, ?, ?::UUID, ?, ?, ?, ?, ?)`,
				q.Organization, g, basis, scope, part[0], part[1], n, e.runID, e.fetchedAt, e.requests, e.retries, e.bytes, e.durMS); err != nil {
				return err
			}
		}
	}
	return nil
}

// scopeDelete builds the DELETE of the rows q's window and scope own.
func scopeDelete(q tally.UsageQuery) (string, []any) {
	where, args := scopeWhere(q)
	return "DELETE FROM usage WHERE " + where, args
}

// scopeWhere builds the condition selecting the usage rows of q's window and
// scope. Only placeholders are built; the values travel as parameters.
func scopeWhere(q tally.UsageQuery) (string, []any) {
	dateCol := "date"
	if q.Basis() == tally.BasisReported {
		dateCol = "date_processed"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "organization = ? AND granularity = ? AND basis = ? AND %s >= ? AND %s < ?", dateCol, dateCol)
	args := []any{q.Organization, string(q.Window.Granularity), string(q.Basis()), q.Window.Start, q.Window.End}
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		fmt.Fprintf(&b, " AND %s IN (%s)", col, strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", "))
		for _, v := range vals {
			args = append(args, v)
		}
	}
	in("project", q.ProjectNames)
	in("payment_method", q.PaymentMethodIDs)
	in("meter_name", q.MeterNames)
	return b.String(), args
}

func rowLabel(i int64, md tally.MeterData) string {
	return fmt.Sprintf("row %d (meter %q, project %q, date %s)", i, md.MeterName, md.Project, md.Date.UTC().Format(time.RFC3339))
}

// checkRow refuses a row the query could not have returned: one whose
// filtered date lies outside the window. Loading it would put a row where
// no later load of its own window replaces it.
func checkRow(w tally.Window, reported bool, md tally.MeterData) error {
	if reported {
		if md.DateProcessed == nil {
			return fmt.Errorf("date_processed is null, but the window filters on the reported date %s", w)
		}
		if !w.Contains(*md.DateProcessed) {
			return fmt.Errorf("date_processed %s is outside the window %s", md.DateProcessed.UTC().Format(time.RFC3339), w)
		}
		return nil
	}
	if !w.Contains(md.Date) {
		return fmt.Errorf("date is outside the window %s", w)
	}
	return nil
}

// scopeCheck refuses a row the query's filters exclude, for the same reason
// checkRow refuses one outside the window: a later load of the same scope
// would not replace it, and it would be counted twice.
type scopeCheck struct {
	projects, paymentMethods, meters map[string]bool
	q                                tally.UsageQuery
}

func newScopeCheck(q tally.UsageQuery) scopeCheck {
	set := func(vals []string) map[string]bool {
		if len(vals) == 0 {
			return nil
		}
		m := make(map[string]bool, len(vals))
		for _, v := range vals {
			m[v] = true
		}
		return m
	}
	return scopeCheck{set(q.ProjectNames), set(q.PaymentMethodIDs), set(q.MeterNames), q}
}

func (c scopeCheck) check(md tally.MeterData) error {
	switch {
	case c.projects != nil && !c.projects[md.Project]:
		return fmt.Errorf("project %q is not one of the query's projects (%s)", md.Project, strings.Join(c.q.ProjectNames, ", "))
	case c.paymentMethods != nil && !c.paymentMethods[md.PaymentMethod]:
		return fmt.Errorf("payment method %q is not one of the query's payment methods (%s)", md.PaymentMethod, strings.Join(c.q.PaymentMethodIDs, ", "))
	case c.meters != nil && !c.meters[md.MeterName]:
		return fmt.Errorf("meter %q is not one of the query's meters (%s)", md.MeterName, strings.Join(c.q.MeterNames, ", "))
	}
	return nil
}

// message is text a run or an alert stores about what went wrong: it passes
// the one redaction step, since it may quote what a peer answered, and a
// peer may echo a secret (the SMTP password in a 535, a webhook's path in
// a 400). It is stored here and copied into the analysts' copy from here.
func message(s string) driver.Value { return textOrNull(secret.Redact(s)) }

func textOrNull(s string) driver.Value {
	if s == "" {
		return nil
	}
	return s
}

func timeOrNull(t *time.Time) driver.Value {
	if t == nil {
		return nil
	}
	return *t
}

// Ledger returns the windows loaded for an organization, granularity,
// basis and scope, ordered by start (then end).
func (s *Store) Ledger(ctx context.Context, org string, g tally.Granularity, basis tally.Basis, scope string) ([]tally.LoadedWindow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT start, "end", fetched_at FROM fetch_windows
WHERE organization = ? AND granularity = ? AND basis = ? AND scope = ?
ORDER BY start, "end"`, org, string(g), string(basis), scope)
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	defer rows.Close()
	var out []tally.LoadedWindow
	for rows.Next() {
		var lw tally.LoadedWindow
		if err := rows.Scan(&lw.Start, &lw.End, &lw.FetchedAt); err != nil {
			return nil, fmt.Errorf("read ledger: %w", err)
		}
		lw.Granularity = g
		lw.Start, lw.End, lw.FetchedAt = lw.Start.UTC(), lw.End.UTC(), lw.FetchedAt.UTC()
		out = append(out, lw)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return out, nil
}

// UsageChange is one partition of the usage table, an organization's
// month, that a load changed.
type UsageChange struct {
	Organization string
	Month        time.Time // its first day, UTC
	ChangedAt    time.Time // UTC
}

// windowMonths are the months w overlaps, each its first day, UTC.
func windowMonths(w tally.Window) map[time.Time]bool {
	out := map[time.Time]bool{}
	for m := tally.Month.Truncate(w.Start.UTC()); m.Before(w.End.UTC()); m = m.AddDate(0, 1, 0) {
		out[m] = true
	}
	return out
}

// scopeMonths returns the months (of date) of the usage rows q's window
// and scope own: before a load replaces them, and after, the partitions it
// changes.
func scopeMonths(ctx context.Context, conn *sql.Conn, q tally.UsageQuery, into map[time.Time]bool) error {
	where, args := scopeWhere(q)
	rows, err := conn.QueryContext(ctx, "SELECT DISTINCT CAST(date_trunc('month', date) AS DATE) FROM usage WHERE "+where, args...)
	if err != nil {
		return fmt.Errorf("read the months changed: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m time.Time
		if err := rows.Scan(&m); err != nil {
			return fmt.Errorf("read the months changed: %w", err)
		}
		into[m.UTC()] = true
	}
	return rows.Err()
}

// noteChanges records, in the transaction that changed them, that org's
// usage rows changed in months (usage_changes), with no time yet: the
// load stamps it once committed (stampChanges). The export commits the
// changes after the time its last commit holds, so a time must never be
// taken before the change it stamps is visible: a load that took its time
// and then committed after another load's later time would be skipped for
// good by an export that read between the two commits. An unstamped
// change is taken by every export, so one a kill left unstamped, or one
// committed but not yet stamped when an export reads, is never skipped.
func noteChanges(ctx context.Context, conn *sql.Conn, org string, months map[time.Time]bool) error {
	for m := range months {
		if _, err := conn.ExecContext(ctx, `INSERT INTO usage_changes (organization, month, changed_at) VALUES (?, ?::DATE, NULL)`, org, m); err != nil {
			return fmt.Errorf("note the months changed: %w", err)
		}
	}
	return nil
}

// stampChanges gives every committed change without a time one, after
// every time recorded (a clock set back, or two loads in the same
// microsecond, never gives an earlier one): loads call it once they
// committed, opening the store does for a load a kill cut short. Stamps
// are taken one at a time, so a stamp is after every stamp any reader
// has seen. It fails quietly: an unstamped change is exported by every
// export until a later stamp, which costs a partition written again, not
// a change lost.
func (s *Store) stampChanges(ctx context.Context) {
	s.changesMu.Lock()
	defer s.changesMu.Unlock()
	now := time.Now().UTC().Truncate(time.Microsecond)
	_, _ = s.db.ExecContext(context.WithoutCancel(ctx), `UPDATE usage_changes
SET changed_at = (SELECT greatest(CAST(? AS TIMESTAMP), coalesce(max(changed_at) + INTERVAL 1 MICROSECOND, CAST(? AS TIMESTAMP))) FROM usage_changes)
WHERE changed_at IS NULL`, now, now)
}

// ErrNoUsageChanges says a database was written by a Tally older than
// migration 0019 and has no record of the partitions its loads changed:
// a read-only copy not yet published by this version.
var ErrNoUsageChanges = errors.New("the database records no usage changes (usage_changes): it was last written by an older Tally; a run of this version records them")

// UsageChanges returns, from q's database, the partitions of the usage
// table changed after after (every one recorded when after is zero), each
// once with its latest change, ordered by organization and month, and the
// latest change time among them. Loads in one process commit one after
// another in the order of their times as far as an export can tell: the
// export step runs once the run's loads are done, tally export reads the
// copy a finished run published.
func UsageChanges(ctx context.Context, q Querier, after time.Time) ([]UsageChange, time.Time, error) {
	var n int64
	if err := ScanOne(ctx, q, `SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = 'usage_changes'`, nil, &n); err != nil {
		return nil, time.Time{}, fmt.Errorf("read usage changes: %w", err)
	}
	if n == 0 {
		return nil, time.Time{}, ErrNoUsageChanges
	}
	// Unstamped changes (changed_at NULL) are taken whatever after is:
	// see noteChanges.
	rows, err := q.QueryContext(ctx, `SELECT organization, month, coalesce(max(changed_at), TIMESTAMP '0001-01-01') FROM usage_changes
WHERE changed_at > ? OR changed_at IS NULL GROUP BY organization, month ORDER BY organization, month`, after.UTC())
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read usage changes: %w", err)
	}
	defer rows.Close()
	var out []UsageChange
	var latest time.Time
	for rows.Next() {
		var c UsageChange
		if err := rows.Scan(&c.Organization, &c.Month, &c.ChangedAt); err != nil {
			return nil, time.Time{}, fmt.Errorf("read usage changes: %w", err)
		}
		c.Month, c.ChangedAt = c.Month.UTC(), c.ChangedAt.UTC()
		if c.ChangedAt.After(latest) {
			latest = c.ChangedAt
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, fmt.Errorf("read usage changes: %w", err)
	}
	return out, latest, nil
}
