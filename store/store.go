package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	tallysql "github.com/tally-dev/tally/sql"
)

// This file is long (about 750 lines) because opening the store is one
// sequence (options, create whole, migrate, views, comments, refills) whose
// order is what makes an open safe after a kill.

// Store is an open DuckDB database. Its methods are safe for concurrent use.
type Store struct {
	db       *sql.DB
	path     string
	readOnly bool
	notice   string // see Notice
	cleanup  func() // after Close: removes a private copy (Shared)
	// queryMemory is the memory limit of a sandboxed store (Query), 0 otherwise.
	queryMemory int64

	publishMu sync.Mutex
	ledgerMu  sync.Mutex // windows that cut back older ledger entries load one at a time
	// baselineMu: the anomaly baselines are rewritten one at a time
	// (settleBaselines).
	baselineMu sync.Mutex
	loads      loadThreads
	filled     func(FillProgress) // see Notify; nil: nobody listens
	// keyed: the schema has usage keys (usagekeys.go); keySeq is the last
	// key handed out.
	keyed  bool
	keySeq atomic.Int64
	// closeKeyed: the schema has month_close_keys (api_close.go);
	// closeKeysMu: loads that may rewrite its rows run one at a time.
	closeKeyed  bool
	closeKeysMu sync.Mutex
	// changesMu: changes are stamped one at a time (stampChanges).
	changesMu sync.Mutex
}

// options are the seams tests use to open a database as an older Tally
// would have left it.
type options struct {
	migrations fs.FS // NNNN_name.sql files at the root
	views      fs.FS // *.sql files at the root
	// filled hears of each month a fill of a kept table commits (Notify).
	filled func(FillProgress)
	// readOnly opens an existing database read-only (ReadOnly); query
	// also sandboxes it for analysts' SQL (Query), with lim.
	readOnly, query bool
	lim             QueryLimits
	// shared reads a private snapshot when another process holds the
	// file for writing (Shared).
	shared bool
}

// Option is how Open opens a database; none is the one writer's
// read-write open that migrates.
type Option func(*options)

// Notify calls filled after each month Open fills of a table the load
// keeps: after an upgrade whose migration reshapes one, a store of years
// of history takes minutes to open (about four at 100M usage rows), and
// the operator should see it work rather than a silent process.
func Notify(filled func(FillProgress)) Option {
	return func(o *options) { o.filled = filled }
}

// ReadOnly opens an existing database read-only (DuckDB's access_mode
// READ_ONLY): every write fails, and any number of read-only handles may
// be open at once. It neither migrates nor creates views.
//
// Its memory_limit is DefaultQueryMemory, a quarter of what the machine or
// container allows, as for analysts' SQL: under DuckDB's default (80 % of
// the machine) a reader keeps every block it reads, and tally export of
// 93.6M rows grew to 2.5 GB where 512 MB did the same work, faster.
func ReadOnly() Option {
	return func(o *options) { o.readOnly = true }
}

// Query opens an existing database for analysts' SQL (tally query):
// read-only, and cut off from everything beyond the database. Statements
// can read no other file, write none (COPY … TO), attach no database (not
// even read-write in a folder DuckDB would otherwise allow), install or
// load no extension (so they reach no network), and cannot change these
// settings back. DuckDB adds its spill folder (<db>.tmp) to the folders a
// sandboxed query may use, so spilling is off: a query gets lim's memory
// and fails with an error beyond it, it never writes a file.
func Query(lim QueryLimits) Option {
	return func(o *options) { o.readOnly, o.query, o.lim = true, true, lim }
}

// Shared is for readers (with ReadOnly or Query): a missing file is a
// *NoCopyError, and when another process holds the file for writing the
// reader opens a private snapshot of it instead and says so in Notice.
//
// DuckDB lets a file be open read-write by one process or read-only by
// many, never both, and an analyst who opens the published copy the DuckDB
// way (Python's duckdb.connect(path), the CLI without -readonly) takes the
// write lock. Tally's readers must still answer then.
func Shared() Option {
	return func(o *options) { o.shared = true }
}

func defaultOptions() options {
	return options{migrations: mustSub(tallysql.Schema, "schema"), views: mustSub(tallysql.Views, "views")}
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// Open opens the database at path. With no option it opens it read-write
// as the one writer, creating it when it does not exist, applies the
// migrations it lacks and (re)creates the views when what they are made
// from changed (makeViews); ReadOnly, Query and
// Shared open it for readers instead.
//
// A new database is created whole or not at all (see create), with mode
// 0600. DuckDB creates its write-ahead log and
// spill files beside the database with the process umask, and those hold
// the same data, so Open also narrows the process umask to deny group and
// world access for the rest of the process.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.shared:
		return openReading(ctx, path, func(ctx context.Context, path string) (*Store, error) { return openReader(ctx, path, o) })
	case o.readOnly:
		return openReader(ctx, path, o)
	}
	return openWith(ctx, path, o)
}

// openReader opens an existing database read-only, sandboxed for
// analysts' SQL when o.query.
func openReader(ctx context.Context, path string, o options) (*Store, error) {
	if o.query {
		return openQuery(ctx, path, o.lim)
	}
	return openReadOnly(ctx, path)
}

func openWith(ctx context.Context, path string, o options) (*Store, error) {
	if err := ensureFolder(path); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	created, err := checkPath(path, false)
	if err != nil {
		return nil, err
	}
	restrictUmask()
	if created {
		if err := create(ctx, path, o); err != nil {
			return nil, fmt.Errorf("open store %s: create the database: %w", path, err)
		}
	}
	db, err := connect(ctx, path, "READ_WRITE", writerSettings...)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, filled: o.filled}
	if err := db.QueryRowContext(ctx, "SELECT CAST(current_setting('threads') AS BIGINT)").Scan(&s.loads.threads); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: read the threads setting: %w", path, err)
	}
	if err := s.migrate(ctx, o.migrations); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.makeViews(ctx, o); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := registerWindowRows(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// Baselines a kill left to rewrite after their load committed, after
	// the tables a migration (or a kill during its fill) left to fill, and
	// the usage rows to number.
	if s.writable("") == nil {
		if err := s.readKeyed(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
		if err := s.finishRefills(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
		if s.keyed {
			if err := s.keyUsage(ctx); err != nil {
				db.Close()
				return nil, fmt.Errorf("open store %s: %w", path, err)
			}
		}
		if err := s.keepMissingCloseKeys(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
		if err := s.settleBaselines(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
		// Changes a kill left unstamped after their load committed.
		s.stampChanges(ctx)
	}
	return s, nil
}

// create makes a new database at path whole or not at all: it is created
// and migrated under a temporary name beside path, closed (which
// checkpoints it into that one file) and renamed into place. A run killed
// while DuckDB creates a file can leave it empty, which DuckDB refuses from
// then on; here it leaves only a temporary file, which the next creation
// removes.
func create(ctx context.Context, path string, o options) (err error) {
	if stale, err := filepath.Glob(globEscape(path) + ".creating-*"); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	tmp := path + ".creating-" + hex.EncodeToString(b[:])
	defer func() {
		if err != nil {
			os.Remove(tmp)
			os.Remove(tmp + ".wal")
		}
	}()
	db, err := connect(ctx, tmp, "READ_WRITE")
	if err != nil {
		return err
	}
	err = (&Store{db: db, path: tmp}).migrate(ctx, o.migrations)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

func openReadOnly(ctx context.Context, path string) (*Store, error) {
	if _, err := checkPath(path, true); err != nil {
		return nil, err
	}
	db, err := connect(ctx, path, "READ_ONLY", fmt.Sprintf("memory_limit=%dKiB", max(DefaultQueryMemory()>>10, 1)))
	if err != nil {
		return nil, err
	}
	return &Store{db: db, path: path, readOnly: true}, nil
}

func openQuery(ctx context.Context, path string, lim QueryLimits) (*Store, error) {
	if _, err := checkPath(path, true); err != nil {
		return nil, err
	}
	mem := lim.MemoryBytes
	if mem <= 0 {
		mem = DefaultQueryMemory()
	}
	db, err := connect(ctx, path, "READ_ONLY", fmt.Sprintf("memory_limit=%dKiB", max(mem>>10, 1)))
	if err != nil {
		return nil, err
	}
	// In this order: the spill folder is dropped before external access
	// is turned off (which would allow it), and everything is locked
	// after connect has set the time zone, which it could not be once
	// locked.
	for _, set := range []string{
		"SET GLOBAL temp_directory = ''",
		"SET GLOBAL enable_external_access = false",
		"SET GLOBAL lock_configuration = true",
	} {
		if _, err := db.ExecContext(ctx, set); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %s: %w", path, set, err)
		}
	}
	var dirs string
	if err := db.QueryRowContext(ctx, "SELECT CAST(current_setting('allowed_directories') AS VARCHAR)").Scan(&dirs); err != nil || dirs != "[]" {
		db.Close()
		return nil, fmt.Errorf("open store %s: the query sandbox still allows the folders %s (%v): refused", path, dirs, err)
	}
	return &Store{db: db, path: path, readOnly: true, queryMemory: mem}, nil
}

// Close closes the database. DuckDB checkpoints a read-write database as
// it closes, so the file is complete without its write-ahead log.
func (s *Store) Close() error {
	if s.cleanup != nil {
		defer s.cleanup()
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// DB is the database handle, for read queries (reports). Writes go through
// the Store's methods.
func (s *Store) DB() *sql.DB { return s.db }

// Path is the database file the store was opened with.
func (s *Store) Path() string { return s.path }

// duckDBMagic sits at byte 8 of every DuckDB database file.
var duckDBMagic = []byte("DUCK")

// ensureFolder creates the folder the database at path lives in when that
// folder is missing but its own parent exists (data/ beside the config, as
// the example config has it). A path missing more than its last folder is
// refused by checkPath: more likely a typo than a place for the database.
func ensureFolder(path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Dir(dir)); err != nil {
		return nil // checkPath names it
	}
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create the database's folder %s: %w", dir, err)
	}
	return nil
}

// CheckPath reports what is wrong with path as a database for Open, opening
// and creating nothing: an empty path, a folder that does not exist (the
// database's own folder may be missing while its parent exists: the writer
// creates it when it takes the lock), a
// folder where the file should be, or a file that is not DuckDB. A command
// checks it first, to tell bad configuration from a run that failed.
func CheckPath(path string) error {
	_, err := checkPath(path, false)
	return err
}

// checkPath refuses, before DuckDB sees it, a path DuckDB would misread or
// fail on with a less helpful message. It reports whether the file is yet
// to be created.
func checkPath(path string, mustExist bool) (create bool, err error) {
	if path == "" {
		return false, errors.New("open store: the database path is empty; set store.path")
	}
	if strings.ContainsRune(path, '?') {
		// The driver reads everything after '?' as connection options.
		return false, fmt.Errorf("open store %s: the database path must not contain '?'", path)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, perr := os.Stat(filepath.Dir(dir)); perr == nil && !mustExist {
				return true, nil // the writer makes the last folder (ensureFolder)
			}
			return false, fmt.Errorf("open store %s: folder %s does not exist; create it (mkdir -p %s) or point store.path elsewhere", path, dir, dir)
		}
		return false, fmt.Errorf("open store %s: %w", path, err)
	} else if !fi.IsDir() {
		return false, fmt.Errorf("open store %s: %s is not a folder", path, dir)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if mustExist {
			return false, fmt.Errorf("open store %s: no such database file", path)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("open store %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return false, fmt.Errorf("open store %s: is a folder, not a database file", path)
	}
	head := make([]byte, 12)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("open store %s: %w", path, err)
	}
	if n < len(head) || !bytes.Equal(head[8:12], duckDBMagic) {
		return false, fmt.Errorf("open store %s: the file exists but is not a DuckDB database; it was left untouched: point store.path at a DuckDB file or at a name that does not exist yet", path)
	}
	return false, nil
}

var umaskOnce sync.Once

func restrictUmask() {
	umaskOnce.Do(func() {
		old := syscall.Umask(0o077)
		syscall.Umask(old | 0o077)
	})
}

// connect opens path in access mode (READ_WRITE or READ_ONLY), with
// further DuckDB settings given as name=value, and the time zone UTC.
//
// Every time in the database is UTC, in TIMESTAMP columns. DuckDB reads a
// Go time.Time parameter as TIMESTAMP WITH TIME ZONE, and compares or casts
// the two in the session's time zone, which defaults to the machine's: on
// a machine not on UTC, a month's bounds in a query would move by the
// machine's offset and rows would land in the wrong month.
func connect(ctx context.Context, path, mode string, settings ...string) (*sql.DB, error) {
	dsn := path + "?access_mode=" + mode
	for _, s := range settings {
		dsn += "&" + s
	}
	// Every connection of the pool defines the macros for itself
	// (defineMacros), when the pool opens it: long after ctx, maybe.
	c, err := duckdb.NewConnector(dsn, func(conn driver.ExecerContext) error { return defineMacros(context.Background(), conn) })
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db := sql.OpenDB(c)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, "SET GLOBAL TimeZone = 'UTC'"); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: set the time zone: %w", path, err)
	}
	return db, nil
}

// migration is one file of sql/schema: NNNN_name.sql.
type migration struct {
	version int
	name    string
	text    string
}

func readMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, name := range names {
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || rest == "" {
			return nil, fmt.Errorf("migration file %s: name must be NNNN_name.sql with NNNN a positive number", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migration files %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, text: string(text)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       VARCHAR NOT NULL,
    applied_at TIMESTAMP NOT NULL
)`

// migrate applies, in version order and each in its own transaction, the
// migrations the database has not recorded in schema_migrations.
func (s *Store) migrate(ctx context.Context, fsys fs.FS) error {
	ms, err := readMigrations(fsys)
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	// Their comments are written with the SQL files' (comment), only when
	// the catalog lacks them: an open that writes nothing leaves nothing to
	// checkpoint at close.
	if _, err := s.db.ExecContext(ctx, createRefillsTable); err != nil {
		return fmt.Errorf("create kept_refills: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, createViewsMadeTable); err != nil {
		return fmt.Errorf("create views_made: %w", err)
	}
	applied := map[int]bool{}
	maxApplied := 0
	rows, err := s.db.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		applied[v] = true
		maxApplied = max(maxApplied, v)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	known := 0
	if len(ms) > 0 {
		known = ms[len(ms)-1].version
	}
	if maxApplied > known {
		return fmt.Errorf("the database is at schema version %d, newer than this tally knows (%d); run a newer tally", maxApplied, known)
	}
	var pending []migration
	for _, m := range ms {
		if !applied[m.version] {
			pending = append(pending, m)
		}
	}
	for _, m := range pending {
		if err := s.inTx(ctx, func(conn *sql.Conn) error {
			text := m.text
			if m.version == organizationsVersion {
				var err error
				if text, err = withStoreOrganization(ctx, conn, text); err != nil {
					return err
				}
			}
			if _, err := conn.ExecContext(ctx, text); err != nil {
				return err
			}
			// The tables the load keeps that this migration makes or
			// reshapes are filled from the usage already loaded once every
			// migration is applied, a month at a time (finishRefills):
			// listed here, in its transaction, so that a kill before the
			// fill ends leaves them listed.
			var kept []string
			switch m.version {
			case dailyCostVersion, organizationsVersion:
				kept = []string{keptDayCost}
			case dayTotalsDetailVersion:
				kept = []string{keptTotals}
			case anomalyBaselinesVersion:
				kept = []string{keptBaselines}
			}
			for _, k := range kept {
				if err := markRefill(ctx, conn, k); err != nil {
					return err
				}
			}
			_, err := conn.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, strings.TrimSuffix(m.name, ".sql"), time.Now().UTC())
			return err
		}); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.name, err)
		}
	}
	return nil
}

// keptViews are the views whose rows a table the load keeps holds: once
// the migration that creates the table has run, the database defines the
// view as query, over the table, rather than as its file does.
var keptViews = []struct{ view, table, query string }{
	{"usage_day_cost", "daily_usage_cost", dayCostView},
	{"usage_day_totals", "daily_usage_totals", dayTotalsView},
	{"meter_months", "daily_usage_totals", meterMonthsView},
	{"meter_skus", "daily_usage_totals", meterSkusView},
	{"allocation_charges", "daily_usage_totals", allocationChargesView},
	{"anomaly_baselines", "daily_baselines", baselinesView},
}

// keptDefs are the kept views (keptViews) whose table the database on q
// has, each to its query (for tallysql.InlineDefined).
func keptDefs(ctx context.Context, q Querier) (map[string]string, error) {
	kept := map[string]string{}
	for _, k := range keptViews {
		var n int
		if err := ScanOne(ctx, q, `SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ?`, []any{k.table}, &n); err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		kept[k.view] = k.query
	}
	return kept, nil
}

// createViews (re)creates every view of sql/views in one transaction, in
// tallysql.ViewOrder: a view after the views it reads.
func (s *Store) createViews(ctx context.Context, fsys fs.FS) error {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return fmt.Errorf("read views: %w", err)
	}
	texts := make(map[string]string, len(names))
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("read view %s: %w", name, err)
		}
		texts[strings.TrimSuffix(path.Base(name), ".sql")] = string(b)
	}
	return s.inTx(ctx, func(conn *sql.Conn) error {
		// The macros first: a view is bound, macros and all, when it is
		// created.
		if err := createMacros(ctx, conn); err != nil {
			return err
		}
		kept, err := keptDefs(ctx, conn)
		if err != nil {
			return err
		}
		// Ordered as the database defines them: a kept view may read
		// other views than its file's definition (allocation_charges).
		for v, k := range kept {
			if _, ok := texts[v]; !ok {
				continue
			}
			texts[v] = "CREATE OR REPLACE VIEW " + v + " AS\n" + k
		}
		order, err := tallysql.ViewOrder(texts)
		if err != nil {
			return err
		}
		for _, v := range order {
			if _, err := conn.ExecContext(ctx, texts[v]); err != nil {
				return fmt.Errorf("create view %s: %w", v, err)
			}
		}
		return nil
	})
}

// inTx runs fn on one connection inside BEGIN … COMMIT, rolling back when fn
// fails. It does not use database/sql's Tx so that fn may reach the driver
// connection (conn.Raw) for DuckDB's appender inside the transaction.
func (s *Store) inTx(ctx context.Context, fn func(conn *sql.Conn) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return err
	}
	if err := fn(conn); err != nil {
		return rollback(conn, err)
	}
	if err := ctx.Err(); err != nil {
		return rollback(conn, err)
	}
	// From here the outcome is decided. A cancel landing during COMMIT
	// interrupts the call but may not stop the commit, and the caller would
	// be told that work which is in the database failed.
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), "COMMIT"); err != nil {
		return rollback(conn, err)
	}
	return nil
}

// rollback undoes the open transaction on conn, even when the context that
// failed it is cancelled, and returns cause.
func rollback(conn *sql.Conn, cause error) error {
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		// The connection's state is unknown: keep it out of the pool.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		return errors.Join(cause, fmt.Errorf("roll back: %w", err))
	}
	return cause
}

var errReadOnly = errors.New("the store is open read-only")

func (s *Store) writable(what string) error {
	if s.readOnly {
		return fmt.Errorf("%s: %w", what, errReadOnly)
	}
	return nil
}

// DuckDBVersion is the version of the DuckDB library Tally is linked with,
// as DuckDB reports it ("v1.5.5 (source id)"), from an in-memory database.
func DuckDBVersion() (string, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v, src string
	if err := db.QueryRow("SELECT library_version, source_id FROM pragma_version()").Scan(&v, &src); err != nil {
		return "", err
	}
	return v + " (" + src + ")", nil
}

// organizationsVersion is the migration that makes the organization a
// column; {{organization}} and {{organization_id}} in its text stand for
// the single organization an existing store holds.
const organizationsVersion = 10

// withStoreOrganization fills the organization placeholders of migration
// 0010's text with the store's own organization, as SQL literals: the
// latest organization snapshot's name and id, else 'default' (a store whose
// token could not read the organization) and NULL.
func withStoreOrganization(ctx context.Context, conn *sql.Conn, text string) (string, error) {
	var name, id sql.NullString
	err := conn.QueryRowContext(ctx, `SELECT nullif(trim(name), ''), nullif(trim(id), '') FROM organization_snapshots
ORDER BY snapshot_at DESC LIMIT 1`).Scan(&name, &id)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read the store's organization: %w", err)
	}
	org := DefaultOrganization
	if name.Valid {
		org = name.String
	}
	return tallysql.SchemaText(text, org, id.String), nil
}

// DefaultOrganization names the organization of a store whose token could
// never read the organization resource.
const DefaultOrganization = "default"
