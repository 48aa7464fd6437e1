package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tally-dev/tally"
)

// A usage row's key (usage_keys, usage.key_id) numbers its organization,
// basis, granularity, month of date, month of period_at and every text
// (payment method, meter, sku, project, family, unit, currency and the
// rest): what the focus view joins it to its month's rate card price,
// payment method and project snapshot by, and tells a closed month's rows
// by, and what the load's daily sums group its rows by. The view works
// those out once per key and joins each row to its key on one integer; on
// the row's texts and dates they were most of a count over the history.
// The load sums its rows per key and day, and joins the texts to the sums
// (dayTotalsByKey). So both need every row numbered:
// the load numbers its rows as it writes them (windowKeys), the estimate
// numbers its rows in its transaction, and the writer numbers any row left
// without a key (a store from before keys, rows written by other means)
// when it opens the store, before anything reads them (keyUsage).
//
// Keys are never removed or renumbered, so a row's key stays right for as
// long as the row does. Two loads side by side may each number the same
// texts (neither sees the other's uncommitted key): two keys then stand for
// the same texts, which is harmless, as each row names one. A load uses
// only the keys its own transaction sees (read when it begins): a key
// another load committed since is not in that transaction's usage_keys,
// and its daily sums, which join the window's rows to their keys there,
// would lose the rows that named it.

// usageKeysVersion is the migration that makes usage_keys and usage.key_id
// as they are now (0016: every text; 0015 made them of four).
const usageKeysVersion = 16

// usageKey is what a key numbers within one window's organization, basis
// and granularity: its months, and its texts in sourceText's order, where
// "" stands for the NULL a row keeps for an empty text of a nullable
// column.
type usageKey struct {
	month     int64 // the month of date's first instant, Unix seconds (UTC)
	period    int64 // the same of period_at's month, if hasPeriod
	hasPeriod bool
	texts     [len(sourceText)]string
}

// listedKey is a usageKey with its texts as their numbers in the window's
// lists (textLists): a lookup hashes a few integers, not eleven texts,
// some of them long (a payment method is a UUID).
type listedKey struct {
	month, period int64
	hasPeriod     bool
	num           [len(sourceText)]uint16
}

// keyColumns lists the key's text columns (sourceText's, which usage and
// usage_keys name alike) for SQL, each as column gives it, joined by sep.
func keyColumns(sep string, column func(t textSource) string) string {
	parts := make([]string, len(sourceText))
	for i, t := range sourceText {
		parts[i] = column(t)
	}
	return strings.Join(parts, sep)
}

// windowKeys numbers the rows of one window of organization org: the keys
// of the months its rows can be of are read in its transaction before its
// rows come (keyMonthsBefore), and texts no key of those numbers get a new
// key from the store's counter, kept in fresh until the window's rows are
// in (addFresh).
type windowKeys struct {
	s                       *Store
	ctx                     context.Context
	org, basis, granularity string
	reported                bool // period_at is date_processed
	known                   map[usageKey]int32
	listed                  map[listedKey]int32 // known's keys by the texts' numbers in the window's lists
	fresh                   []usageKey
	ids                     []int32 // fresh's keys

	// the last row's months and key: rows mostly repeat the row before's
	date, processed monthCache
	last            usageKey
	lastID          int32
}

// monthCache is the month of the last time asked, kept for the next.
type monthCache struct {
	from, to time.Time
}

// of is t's month's first instant, as Unix seconds (UTC).
func (m *monthCache) of(t time.Time) int64 {
	if t.Before(m.from) || !t.Before(m.to) {
		u := t.UTC()
		m.from = time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC)
		m.to = m.from.AddDate(0, 1, 0)
	}
	return m.from.Unix()
}

// keyMonthsBefore is how many months before its window's a load of basis
// reported reads keys of: its rows are charged in the window and may have
// happened earlier. A row older than that gets a key of its own.
const keyMonthsBefore = 3

// windowKeys starts numbering the rows of q's window, reading the keys of
// the months its rows can be of on conn, inside the window's transaction.
func (s *Store) windowKeys(ctx context.Context, conn *sql.Conn, q tally.UsageQuery) (*windowKeys, error) {
	k := &windowKeys{s: s, ctx: ctx, org: q.Organization, basis: string(q.Basis()), granularity: string(q.Window.Granularity),
		reported: q.Basis() == tally.BasisReported, known: map[usageKey]int32{}, listed: map[listedKey]int32{}}
	start := q.Window.Start.UTC()
	from := time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC)
	if k.reported {
		from = from.AddDate(0, -keyMonthsBefore, 0)
	}
	if err := k.readMonths(conn, from, q.Window.End.UTC()); err != nil {
		return nil, err
	}
	return k, nil
}

// number is md's key; num are its texts' numbers in the window's lists,
// lists the lists (textLists.numbers).
func (k *windowKeys) number(md *tally.MeterData, num *[len(sourceText)]uint16, lists *textLists) (int32, error) {
	lk := listedKey{month: k.date.of(md.Date)}
	switch {
	case !k.reported:
		lk.period, lk.hasPeriod = lk.month, true
	case md.DateProcessed != nil:
		lk.period, lk.hasPeriod = k.processed.of(*md.DateProcessed), true
	}
	// A number stands for one text for the whole window (the lists only
	// grow), unless its column went in as text: then the texts decide.
	byNumber := true
	for c := range lists.cols {
		if lists.cols[c].unlisted {
			byNumber = false
			break
		}
	}
	if byNumber {
		lk.num = *num
		if id, ok := k.listed[lk]; ok {
			return id, nil
		}
	}
	id, err := k.byTexts(md, lk)
	if err == nil && byNumber {
		k.listed[lk] = id
	}
	return id, err
}

// byTexts is md's key found by its texts; lk holds its months.
func (k *windowKeys) byTexts(md *tally.MeterData, lk listedKey) (int32, error) {
	key := usageKey{month: lk.month, period: lk.period, hasPeriod: lk.hasPeriod}
	for i, t := range sourceText {
		key.texts[i] = t.field(md)
	}
	if k.lastID != 0 && key == k.last {
		return k.lastID, nil
	}
	id, ok := k.known[key]
	if !ok {
		n := k.s.keySeq.Add(1)
		if n > math.MaxInt32 {
			return 0, fmt.Errorf("number usage keys: more than %d", math.MaxInt32)
		}
		id = int32(n)
		k.known[key] = id
		k.fresh = append(k.fresh, key)
		k.ids = append(k.ids, id)
	}
	k.last, k.lastID = key, id
	return id, nil
}

// readKeys reads the keys of the months [$4, $5) for readMonths: each
// text as the load has it (NULL as ""), leaving out a key with an empty
// text where the load keeps NULL (rows written by other means), which
// numbers no row a load writes.
var readKeys = `SELECT id, month, period_month, ` + keyColumns(", ", func(t textSource) string { return "coalesce(" + t.name + ", '')" }) + `
FROM usage_keys
WHERE organization = ? AND basis = ? AND granularity = ? AND month >= ? AND month < ?` + keyColumns("", func(t textSource) string {
	if !t.nullable {
		return ""
	}
	return "\n  AND (" + t.name + " IS NULL OR " + t.name + " <> '')"
})

// readMonths adds the keys of the months [from, to) that conn's
// transaction sees to known.
func (k *windowKeys) readMonths(conn *sql.Conn, from, to time.Time) error {
	rows, err := conn.QueryContext(k.ctx, readKeys, k.org, k.basis, k.granularity, from, to)
	if err != nil {
		return fmt.Errorf("read usage keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int32
		var month time.Time
		var period sql.NullTime
		var key usageKey
		dest := []any{&id, &month, &period}
		for i := range key.texts {
			dest = append(dest, &key.texts[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read usage keys: %w", err)
		}
		key.month = month.Unix()
		if period.Valid {
			key.period, key.hasPeriod = period.Time.Unix(), true
		}
		if _, dup := k.known[key]; !dup {
			k.known[key] = id
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read usage keys: %w", err)
	}
	return nil
}

// addKeys inserts a window's new keys, a list of each column; "" is NULL
// where the load keeps an empty text so.
var addKeys = `INSERT INTO usage_keys (id, organization, basis, granularity, month, period_month, ` + keyColumns(", ", func(t textSource) string { return t.name }) + `)
SELECT unnest(?::INTEGER[]), ?, ?, ?, CAST(unnest(?::VARCHAR[]) AS TIMESTAMP), CAST(nullif(unnest(?::VARCHAR[]), '') AS TIMESTAMP),
       ` + keyColumns(", ", func(t textSource) string {
	if t.nullable {
		return "nullif(unnest(?::VARCHAR[]), '')"
	}
	return "unnest(?::VARCHAR[])"
})

// addFresh writes the window's new keys, on conn inside its transaction.
func (k *windowKeys) addFresh(ctx context.Context, conn *sql.Conn) error {
	if len(k.fresh) == 0 {
		return nil
	}
	n := len(k.fresh)
	months, periods := make([]string, n), make([]string, n)
	var texts [len(sourceText)][]string
	for c := range texts {
		texts[c] = make([]string, n)
	}
	for i, key := range k.fresh {
		months[i] = time.Unix(key.month, 0).UTC().Format(time.DateTime)
		if key.hasPeriod {
			periods[i] = time.Unix(key.period, 0).UTC().Format(time.DateTime)
		}
		for c, v := range key.texts {
			texts[c][i] = v
		}
	}
	args := []any{k.ids, k.org, k.basis, k.granularity, months, periods}
	for _, t := range texts {
		args = append(args, t)
	}
	_, err := conn.ExecContext(ctx, addKeys, args...)
	if err != nil {
		return fmt.Errorf("add usage keys: %w", err)
	}
	return nil
}

// readKeyed notes whether the writer's schema has usage keys and sets the
// key counter past every key the store holds.
func (s *Store) readKeyed(ctx context.Context) error {
	var schema int
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&schema); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	s.closeKeyed = schema >= monthCloseKeysVersion
	if s.keyed = schema >= usageKeysVersion; !s.keyed {
		return nil
	}
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM usage_keys`).Scan(&n); err != nil {
		return fmt.Errorf("read usage keys: %w", err)
	}
	s.keySeq.Store(n)
	return nil
}

// keyMonth numbers the rows of organization org's month (its first day,
// UTC) that have no key yet, on conn inside the caller's transaction: keys
// for the texts no key of the month numbers, then each row's key.
func (s *Store) keyMonth(ctx context.Context, conn *sql.Conn, org string, month time.Time) error {
	next := month.AddDate(0, 1, 0)
	var n int64
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM (`+missingKeys+`)`, org, month, next).Scan(&n); err != nil {
		return fmt.Errorf("number usage of %s: %w", month.Format("2006-01"), err)
	}
	if n > 0 {
		last := s.keySeq.Add(n)
		if last > math.MaxInt32 {
			return fmt.Errorf("number usage keys: more than %d", math.MaxInt32)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO usage_keys (id, organization, basis, granularity, month, period_month, `+keyTextList+`)
SELECT CAST($4 + row_number() OVER () AS INTEGER), $1, basis, granularity, $2, period_month, `+keyTextList+`
FROM (`+missingKeys+`)`, org, month, next, last-n); err != nil {
			return fmt.Errorf("number usage of %s: %w", month.Format("2006-01"), err)
		}
		if err := s.keysInClosedMonths(ctx, conn, last-n, last); err != nil {
			return err
		}
	}
	if _, err := conn.ExecContext(ctx, `UPDATE usage SET key_id = k.id
FROM (SELECT min(id) AS id, basis, granularity, period_month, `+keyTextList+`
      FROM usage_keys WHERE organization = $1 AND month = $2 GROUP BY ALL) k
WHERE usage.key_id IS NULL AND usage.organization = $1 AND usage.date >= $2 AND usage.date < $3
  AND k.basis = usage.basis AND k.granularity = usage.granularity
  AND k.period_month IS NOT DISTINCT FROM date_trunc('month', CASE WHEN usage.basis = 'reported' THEN usage.date_processed ELSE usage.date END)
  AND `+keyTextsMatch("k", "usage"), org, month, next); err != nil {
		return fmt.Errorf("number usage of %s: %w", month.Format("2006-01"), err)
	}
	return nil
}

// keyTextList is the key's text columns, as a list.
var keyTextList = keyColumns(", ", func(t textSource) string { return t.name })

// keyTextsMatch is the condition that the texts of a and b (a key, a usage
// row) are the same, NULL matching NULL.
func keyTextsMatch(a, b string) string {
	return keyColumns("\n  AND ", func(t textSource) string {
		if t.nullable {
			return a + "." + t.name + " IS NOT DISTINCT FROM " + b + "." + t.name
		}
		return a + "." + t.name + " = " + b + "." + t.name
	})
}

// missingKeys are the texts of the rows of organization $1's month $2 (up
// to $3) without a key that no key of the month numbers.
var missingKeys = `SELECT DISTINCT u.basis, u.granularity, u.period_month, ` + keyColumns(", ", func(t textSource) string { return "u." + t.name }) + `
FROM (SELECT *, date_trunc('month', CASE WHEN basis = 'reported' THEN date_processed ELSE date END) AS period_month
      FROM usage WHERE key_id IS NULL AND organization = $1 AND date >= $2 AND date < $3) u
WHERE NOT EXISTS (SELECT 1 FROM usage_keys k
                  WHERE k.organization = $1 AND k.month = $2 AND k.basis = u.basis AND k.granularity = u.granularity
                    AND k.period_month IS NOT DISTINCT FROM u.period_month
                    AND ` + keyTextsMatch("k", "u") + `)`

// keyUsage numbers every usage row without a key, a month and
// organization at a time, each in its own transaction: after the upgrade
// that made keys, a store of years numbers its history once (about a
// second a month of 1,000,000 rows), and a kill leaves the months not
// reached without keys for the next writer. Told to s.filled as the
// table usage.
func (s *Store) keyUsage(ctx context.Context) error {
	type orgMonth struct {
		org   string
		month time.Time
	}
	var todo []orgMonth
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT organization, date_trunc('month', date) AS m
FROM usage WHERE key_id IS NULL AND organization IS NOT NULL AND date IS NOT NULL ORDER BY m, organization`)
	if err != nil {
		return fmt.Errorf("find usage without keys: %w", err)
	}
	for rows.Next() {
		var om orgMonth
		if err := rows.Scan(&om.org, &om.month); err != nil {
			rows.Close()
			return fmt.Errorf("find usage without keys: %w", err)
		}
		om.month = om.month.UTC()
		todo = append(todo, om)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("find usage without keys: %w", err)
	}
	if len(todo) == 0 {
		return nil
	}
	end, err := s.oneThread(ctx)
	if err != nil {
		return err
	}
	defer end()
	for i, om := range todo {
		began := time.Now()
		if err := s.inTx(ctx, func(conn *sql.Conn) error { return s.keyMonth(ctx, conn, om.org, om.month) }); err != nil {
			return err
		}
		if s.filled != nil {
			s.filled(FillProgress{Table: "usage", Month: om.month, Done: i + 1, Months: len(todo), Took: time.Since(began)})
		}
	}
	return nil
}

// KeyUsage numbers the usage rows written by other means than a load
// (benchtool's copied history), as the writer does when it opens a store.
func (s *Store) KeyUsage(ctx context.Context) error {
	if err := s.writable("number usage rows"); err != nil {
		return err
	}
	if !s.keyed {
		return nil
	}
	return s.keyUsage(ctx)
}

// MisnumberedUsage counts what would make focus or the daily sums wrong:
// usage rows whose key does not stand for their own organization, basis,
// granularity, months of date and period_at and texts (also rows without a
// key, when its one parameter is true), and key ids that stand for more
// than one key. It is 0 in every store Tally wrote; tests check stores
// with it from outside.
var MisnumberedUsage = `SELECT
  (SELECT count(*) FROM usage u LEFT JOIN usage_keys k ON k.id = u.key_id
   WHERE (u.key_id IS NOT NULL OR ?)
     AND (k.id IS NULL OR k.organization <> u.organization OR k.month <> date_trunc('month', u.date)
          OR k.basis <> u.basis OR k.granularity <> u.granularity
          OR k.period_month IS DISTINCT FROM date_trunc('month', CASE WHEN u.basis = 'reported' THEN u.date_processed ELSE u.date END)
          OR NOT (` + keyTextsMatch("k", "u") + `)))
+ (SELECT count(*) FROM (SELECT id FROM usage_keys GROUP BY id HAVING count(*) > 1))`
