package lake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/tally-dev/tally/configs"
)

// DefaultNamespace is the namespace of Tally's tables (lake.namespace).
const DefaultNamespace = configs.DefaultLakeNamespace

// UsageTable is the usage table's name in the namespace.
const UsageTable = "usage"

// catalogName is the catalog's name as the SQL catalog records it in its
// tables: every Tally sharing a catalog database must use the same.
const catalogName = "tally"

// Config says where the lake is.
type Config struct {
	// SQLite is the SQLite catalog's file (lake.catalog sqlite:PATH),
	// absolute; created when missing.
	SQLite string
	// Warehouse is the local folder the tables' data and metadata files
	// go under, absolute; created when missing.
	Warehouse string
	// Namespace holds the tables; "" is DefaultNamespace.
	Namespace string
}

// Lake is an open catalog. Close it when done.
type Lake struct {
	cat       catalog.Catalog
	db        *sql.DB
	namespace string
	warehouse string
}

// Open opens (and creates when missing) the catalog and the warehouse
// folder, and makes sure the namespace exists.
func Open(ctx context.Context, c Config) (*Lake, error) {
	path := c.SQLite
	if !filepath.IsAbs(path) || !filepath.IsAbs(c.Warehouse) {
		return nil, fmt.Errorf("lake: the catalog file %q and the warehouse %q must be absolute paths", path, c.Warehouse)
	}
	for _, dir := range []string{filepath.Dir(path), c.Warehouse} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("lake: %w", err)
		}
	}
	// Every pooled connection waits for another process's write rather
	// than failing at once, and takes its write lock when its
	// transaction begins, so two writers never deadlock upgrading a read
	// lock. WAL lets readers go on beside a writer.
	dsn := (&url.URL{Scheme: "file", Path: path, RawQuery: "_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_txlock=immediate"}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("lake: open catalog %s: %w", path, err)
	}
	cat, err := sqlcat.NewCatalog(catalogName, db, sqlcat.SQLite, iceberg.Properties{
		"warehouse": (&url.URL{Scheme: "file", Path: c.Warehouse}).String(),
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("lake: open catalog %s: %w", path, err)
	}
	ns := c.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	l := &Lake{cat: cat, db: db, namespace: ns, warehouse: c.Warehouse}
	if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		l.Close()
		return nil, fmt.Errorf("lake: create namespace %s: %w", ns, err)
	}
	return l, nil
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

// ensureTable loads the table, creating it with schema and spec when the
// catalog lacks it. Of two writers creating it at once one wins; the
// other loads the winner's.
func (l *Lake) ensureTable(ctx context.Context, name string, schema *iceberg.Schema, spec iceberg.PartitionSpec) (*table.Table, error) {
	t, err := l.cat.LoadTable(ctx, l.ident(name))
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, err
	}
	// No retry inside iceberg-go: it would replay an overwrite onto a
	// table another writer changed, keeping files the overwrite should
	// have dropped. ReplaceUsage redoes a lost commit whole instead.
	t, err = l.cat.CreateTable(ctx, l.ident(name), schema, catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(iceberg.Properties{"format-version": "2", table.CommitNumRetriesKey: "0"}))
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		return l.cat.LoadTable(ctx, l.ident(name))
	}
	return t, err
}
