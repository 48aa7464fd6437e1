package ice

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	// The s3 scheme's IO, without the other clouds' SDKs.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/lake"
)

// DefaultNamespace is the namespace of Tally's tables (lake.namespace).
const DefaultNamespace = configs.DefaultLakeNamespace

// catalogName is the catalog's name as the SQL catalog records it in its
// tables: every Tally sharing a catalog database must use the same.
const catalogName = "tally"

// Lake is an open catalog. Close it when done.
type Lake struct {
	cat       catalog.Catalog
	db        *sql.DB
	namespace string
	warehouse string
}

// Open opens the catalog (a SQLite file, created when missing, or a
// PostgreSQL database) and the warehouse (a folder, created when missing,
// or on S3), and makes sure the namespace exists.
func Open(ctx context.Context, c lake.Config) (*Lake, error) {
	props, err := warehouseProperties(c)
	if err != nil {
		return nil, err
	}
	var (
		db      *sql.DB
		dialect sqlcat.SupportedDialect
		where   string
	)
	switch {
	case c.Postgres != "" && c.SQLite != "":
		return nil, errors.New("lake: a catalog is SQLite or PostgreSQL, not both")
	case c.Postgres != "":
		db, where, err = openPostgres(c)
		dialect = sqlcat.Postgres
	default:
		db, where, err = openSQLite(c.SQLite)
		dialect = sqlcat.SQLite
	}
	if err != nil {
		return nil, err
	}
	ns := c.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	l := &Lake{db: db, namespace: ns, warehouse: c.Warehouse}
	if err := l.setUp(ctx, dialect, props); err != nil {
		db.Close()
		return nil, fmt.Errorf("lake: open catalog %s: %w", where, err)
	}
	return l, nil
}

// setUp opens the catalog, creating its tables and the namespace when
// missing. On PostgreSQL, processes meeting a new catalog database at once
// would race to create its tables (iceberg-go's CREATE TABLE IF NOT EXISTS
// fails for the loser: "type iceberg_tables already exists"), so they take
// turns under a session advisory lock; SQLite's file lock already does it.
func (l *Lake) setUp(ctx context.Context, dialect sqlcat.SupportedDialect, props iceberg.Properties) error {
	if dialect == sqlcat.Postgres {
		conn, err := l.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", setUpLockKey); err != nil {
			return fmt.Errorf("take the set-up lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", setUpLockKey)
	}
	cat, err := sqlcat.NewCatalog(catalogName, l.db, dialect, props)
	if err != nil {
		return err
	}
	l.cat = cat
	if err := cat.CreateNamespace(ctx, table.Identifier{l.namespace}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		if ok, err2 := cat.CheckNamespaceExists(ctx, table.Identifier{l.namespace}); err2 != nil || !ok {
			return fmt.Errorf("create namespace %s: %w", l.namespace, err)
		}
	}
	return nil
}

// setUpLockKey is the PostgreSQL advisory lock every tally-lake takes
// while it sets the catalog up: any number, the same in every version.
const setUpLockKey int64 = 0x7a11_1ace

// warehouseProperties are the catalog's properties for c's warehouse: a
// local folder's file URI, or an S3 URL with what iceberg-go's S3 IO
// needs to reach it, which the catalog hands every table it loads, so that
// metadata and data files alike go there.
func warehouseProperties(c lake.Config) (iceberg.Properties, error) {
	if !lake.OnS3(c.Warehouse) {
		if !filepath.IsAbs(c.Warehouse) {
			return nil, fmt.Errorf("lake: the warehouse %q must be an absolute path or s3://BUCKET[/PREFIX]", c.Warehouse)
		}
		if err := os.MkdirAll(c.Warehouse, 0o750); err != nil {
			return nil, fmt.Errorf("lake: %w", err)
		}
		return iceberg.Properties{"warehouse": (&url.URL{Scheme: "file", Path: c.Warehouse}).String()}, nil
	}
	s := lake.S3{}
	if c.S3 != nil {
		s = *c.S3
	}
	if (s.AccessKey == "") != (s.SecretKey == "") {
		return nil, errors.New("lake: S3 takes an access key id and a secret key together, or neither (the AWS SDK's chain)")
	}
	props := iceberg.Properties{
		"warehouse": strings.TrimRight(c.Warehouse, "/"),
		// Explicit either way: iceberg-go would take path-style for any
		// endpoint given, which is not what lake.s3.path_style says.
		iceio.S3ForceVirtualAddressing: strconv.FormatBool(!s.PathStyle),
	}
	if s.Region != "" {
		props[iceio.S3Region] = s.Region
	}
	if s.Endpoint != "" {
		props[iceio.S3EndpointURL] = s.Endpoint
	}
	if s.AccessKey != "" {
		props[iceio.S3AccessKeyID], props[iceio.S3SecretAccessKey] = s.AccessKey, s.SecretKey
	}
	return props, nil
}

func openSQLite(path string) (*sql.DB, string, error) {
	if !filepath.IsAbs(path) {
		return nil, "", fmt.Errorf("lake: the catalog file %q must be an absolute path", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, "", fmt.Errorf("lake: %w", err)
	}
	// Every pooled connection waits for another process's write rather
	// than failing at once, and takes its write lock when its
	// transaction begins, so two writers never deadlock upgrading a read
	// lock. WAL lets readers go on beside a writer.
	dsn := (&url.URL{Scheme: "file", Path: path, RawQuery: "_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_txlock=immediate"}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, "", fmt.Errorf("lake: open catalog %s: %w", path, err)
	}
	return db, path, nil
}

// openPostgres connects to the PostgreSQL catalog with pgx. The password
// comes from the request, never the URL, so no error or log line that
// quotes the URL can carry it.
func openPostgres(c lake.Config) (*sql.DB, string, error) {
	where := redactedURL(c.Postgres)
	cfg, err := pgx.ParseConfig(c.Postgres)
	if err != nil {
		return nil, where, fmt.Errorf("lake: the catalog URL %s: %w", where, scrub(err, c.Password))
	}
	if c.Password != "" {
		cfg.Password = c.Password
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 30 * time.Second
	}
	db := stdlib.OpenDB(*cfg)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ConnectTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, where, fmt.Errorf("lake: connect to the catalog %s: %w", where, scrub(err, c.Password))
	}
	return db, where, nil
}

// redactedURL is u without any password it holds, for messages.
func redactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(an unreadable URL)"
	}
	return p.Redacted()
}

// scrub removes the password from err's text: a driver may quote the
// connection string back.
func scrub(err error, password string) error {
	if password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), password, "[redacted]"))
}

// Close closes the catalog's database.
func (l *Lake) Close() error { return l.db.Close() }

// Namespace is the namespace the lake's tables are in.
func (l *Lake) Namespace() string { return l.namespace }

func (l *Lake) ident(name string) table.Identifier { return table.Identifier{l.namespace, name} }

// LoadTable loads one of the lake's tables as the catalog has it now.
func (l *Lake) LoadTable(ctx context.Context, name string) (*table.Table, error) {
	return l.cat.LoadTable(ctx, l.ident(name))
}

// Partition fields of the usage table: a partition is what one
// (organization, month) replacement swaps.
const (
	partOrganization = "organization"
	partMonth        = "date_month"
)

// Schema is the Iceberg schema of cols, each field optional (DuckDB
// writes every Parquet column optional).
func Schema(cols []lake.Column) (*iceberg.Schema, error) {
	fields := make([]iceberg.NestedField, len(cols))
	for i, c := range cols {
		typ, err := icebergType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		fields[i] = iceberg.NestedField{ID: c.ID, Name: c.Name, Type: typ}
	}
	return iceberg.NewSchema(0, fields...), nil
}

func icebergType(name string) (iceberg.Type, error) {
	switch name {
	case "string":
		return iceberg.PrimitiveTypes.String, nil
	case "double":
		return iceberg.PrimitiveTypes.Float64, nil
	case "timestamp":
		return iceberg.PrimitiveTypes.Timestamp, nil
	case lake.CostType:
		return iceberg.DecimalTypeOf(38, 12), nil
	}
	return nil, fmt.Errorf("type %q is not one this version writes (string, double, timestamp, %s)", name, lake.CostType)
}

// usageSpec partitions the usage table by organization and the month of
// date.
func usageSpec(sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
	org, ok := sc.FindFieldByName("organization")
	date, ok2 := sc.FindFieldByName("date")
	if !ok || !ok2 {
		return iceberg.PartitionSpec{}, errors.New("the table's columns lack organization or date, its partition columns")
	}
	return iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{org.ID}, FieldID: 1000, Name: partOrganization, Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{date.ID}, FieldID: 1001, Name: partMonth, Transform: iceberg.MonthTransform{}},
	), nil
}

// EnsureTable loads the table, creating it with cols, partitioned by
// organization and month, when the catalog lacks it. Of two writers
// creating it at once one wins; the other loads the winner's.
func (l *Lake) EnsureTable(ctx context.Context, name string, cols []lake.Column) (*table.Table, error) {
	t, err := l.cat.LoadTable(ctx, l.ident(name))
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, err
	}
	sc, err := Schema(cols)
	if err != nil {
		return nil, err
	}
	spec, err := usageSpec(sc)
	if err != nil {
		return nil, err
	}
	// No retry inside iceberg-go: it would replay an overwrite onto a
	// table another writer changed, keeping files the overwrite should
	// have dropped. Replace redoes a lost commit whole instead.
	t, err = l.cat.CreateTable(ctx, l.ident(name), sc, catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(iceberg.Properties{"format-version": "2", table.CommitNumRetriesKey: "0"}))
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		return l.cat.LoadTable(ctx, l.ident(name))
	}
	return t, err
}

// State is the table (created when missing) and, from its current
// snapshot back through its parents, the latest commit from source and
// the time of the latest change it holds.
func (l *Lake) State(ctx context.Context, name string, cols []lake.Column, source string) (lake.State, error) {
	t, err := l.EnsureTable(ctx, name, cols)
	if err != nil {
		return lake.State{}, fmt.Errorf("load table %s.%s: %w", l.namespace, name, err)
	}
	st := lake.State{Table: l.namespace + "." + name, Location: t.Location()}
	for s := t.CurrentSnapshot(); s != nil; {
		if s.Summary != nil && s.Summary.Properties[lake.SummarySource] == source {
			v := s.Summary.Properties[lake.SummaryChangesThrough]
			at, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return st, fmt.Errorf("table %s, snapshot %d: %s %q: %w", st.Table, s.SnapshotID, lake.SummaryChangesThrough, v, err)
			}
			st.Found, st.ChangesThrough = true, at
			return st, nil
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = t.SnapshotByID(*s.ParentSnapshotID)
	}
	return st, nil
}
