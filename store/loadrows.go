package store

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"

	"github.com/tally-dev/tally"
)

// This file is long (about 770 lines) because loading one window's rows is
// one transaction whose steps (append, number the keys, rewrite the kept
// tables) must be read in the order they run.

// A window's rows reach the usage table through one INSERT … SELECT whose
// source is a table function reading the window's row iterator: DuckDB
// pulls rows chunk by chunk, on its own threads, and its INSERT writes
// row groups to the file as they fill. So memory stays flat however many
// rows a window holds, the commit has little left to write, and loading
// runs at DuckDB's own insert speed. (DuckDB's appender, by contrast, keeps
// a transaction's rows in memory until the commit, and writes them then on
// one thread.)

// writerSettings are the read-write database's settings for loading:
// DuckDB writes an INSERT's row groups as they fill only when it need not
// keep the rows in insertion order (nothing in Tally reads rows in the
// order they were loaded: every query sorts), and a memory limit makes it
// reuse its buffers rather than keep growing (it spills to a temporary
// folder beside the database when a query needs more).
var writerSettings = []string{"preserve_insertion_order=false", "memory_limit=" + writerMemory}

// writerMemory is the writer's memory_limit; loadMemoryMB is its limit
// while a window loads (loadLimit: as much again for each load beside
// it). DuckDB's buffers fill to the limit as a load writes row groups
// (blocks it keeps for reading back, which it can drop at any time), and
// the process uses 100 MB and more beyond it (the Go side, and DuckDB's
// own allocations while the window's daily sums read its rows back, which
// vary from run to run); a load needs no more than the lower limit (its
// daily sums read eight days at a time, grouped on integers).
// At 5,000,000 rows the fetch peaked at 235-300 MB with the writer's
// limit, 200-290 MB at 96MB, and 168-218 MB at this one, in the same CPU
// time.
const (
	writerMemoryMB = 160
	writerMemory   = "160MB"
	loadMemoryMB   = 64
)

// loadThreads runs DuckDB on one thread, at loadMemoryMB for each load
// under way (up to writerMemory) and without the compression methods of
// loadSkipsCompression, while any window loads. DuckDB's threads that fill
// chunks wait on the feeder (and it on the interface), and meanwhile the
// thread that runs the statement finds no task and asks again, at once,
// until they are done: a core spent spinning for the whole insert, a
// third of the fetch's CPU. On one thread the statement's own thread
// fills the chunks, and waits without spinning; decoding still runs
// beside it, on the feeder's goroutines. The sums the load keeps after
// the insert (daily_usage_totals, daily_usage_cost) also cost less CPU on
// one thread: one hash table, none to combine. Concurrent loads each run
// on their own statement's thread. The settings are the database's, so
// the count of loads under way decides them: the first sets them, the
// last puts back the writer's.
// Each load holds its transaction's rows and sums in DuckDB's memory, so
// loads side by side need more of it (four at 64 MB in all ran out): the
// limit grows with the most loads under way at once, and stays until the
// last ends, as lowering it under a load could leave that one short.
type loadThreads struct {
	mu      sync.Mutex
	running int
	most    int   // the most loads under way at once since the first began
	threads int64 // the database's own setting, put back after the loads
}

// loadLimit is DuckDB's memory_limit while n loads are under way.
func loadLimit(n int) string {
	return fmt.Sprintf("%dMB", min(n*loadMemoryMB, writerMemoryMB))
}

// begin sets one thread for a load; end undoes it once no load runs.
func (t *loadThreads) begin(ctx context.Context, db *sql.DB) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running == 0 {
		if t.threads > 1 {
			if _, err := db.ExecContext(ctx, "SET GLOBAL threads = 1"); err != nil {
				return fmt.Errorf("run the load on one thread: %w", err)
			}
		}
		if _, err := db.ExecContext(ctx, "SET GLOBAL disabled_compression_methods = '"+loadSkipsCompression+"'"); err != nil {
			t.restore(db)
			return fmt.Errorf("set the load's compression: %w", err)
		}
	}
	if t.running+1 > t.most {
		if _, err := db.ExecContext(ctx, "SET GLOBAL memory_limit = '"+loadLimit(t.running+1)+"'"); err != nil {
			if t.running == 0 {
				t.restore(db)
			}
			return fmt.Errorf("set the load's memory limit: %w", err)
		}
		t.most = t.running + 1
	}
	t.running++
	return nil
}

func (t *loadThreads) end(db *sql.DB) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running--
	if t.running == 0 {
		t.most = 0
		db.ExecContext(context.Background(), "SET GLOBAL memory_limit = '"+writerMemory+"'")
		t.restore(db)
	}
}

// restore puts back the writer's threads and compression methods, when no
// load is under way or the first could not start. Only a slower query, or
// one with less memory, follows if it fails; the load is done.
func (t *loadThreads) restore(db *sql.DB) {
	if t.threads > 1 {
		db.ExecContext(context.Background(), fmt.Sprintf("SET GLOBAL threads = %d", t.threads))
	}
	db.ExecContext(context.Background(), "RESET GLOBAL disabled_compression_methods")
}

// loadSkipsCompression are the compression methods DuckDB does not try
// while a window loads. For each row group it writes, DuckDB tries every
// method on every text column and keeps the smallest; usage's texts repeat
// a few values a row group, so it keeps a dictionary every time
// (pragma_storage_info), and trying FSST as well (a symbol table built and
// a sample compressed per column) was about 2% of the fetch's CPU.
const loadSkipsCompression = "fsst,dict_fsst"

// oneThread runs the writer's DuckDB on one thread, as loads do (see
// loadThreads), but at the writer's memory limit rather than a load's,
// until the returned func is called: for work that reads stored rows, not
// a window's fresh ones (a kept table's fill, an export's COPY).
func (s *Store) oneThread(ctx context.Context) (func(), error) {
	if err := s.loads.begin(ctx, s.db); err != nil {
		return nil, err
	}
	if _, err := s.db.ExecContext(ctx, "SET GLOBAL memory_limit = '"+writerMemory+"'"); err != nil {
		s.loads.end(s.db)
		return nil, err
	}
	return func() { s.loads.end(s.db) }, nil
}

// windowRowsFunction is the table function; it reads the rowSource the
// INSERT's context carries.
const windowRowsFunction = "tally_window_rows"

// insertWindowRows is the INSERT of one statement of a window's rows; the
// parameters are the columns every row of the window shares, then each
// listed text column's texts (see textShape).
const insertWindowRows = `INSERT INTO usage (organization, organization_id, granularity, basis, run_id, fetched_at, %s)
SELECT ?, ?, ?, ?, ?::UUID, ?, %s FROM ` + windowRowsFunction + `()`

// insertColumns are the columns of usage a window's INSERT writes besides
// the shared ones, in the order of its SELECT; sourceText's col is a text
// column's place here.
var insertColumns = []string{"date", "date_processed", "meter_name", "meter_sku", "family", "solution", "unit", "quantity", "price", "cost",
	"currency", "entitlement", "entitlement_type", "payment_method", "payment_method_name", "project", "key_id"}

// Most of a window's rows repeat a few texts (meters, projects, payment
// methods), and handing DuckDB a text costs a call into C and a copy per
// value, the largest part of filling a chunk. So a text column goes in as
// the text's number in the column's list of texts, and the INSERT looks it
// up in that list, a parameter of the statement: DuckDB then copies no
// text, and Go hands it small integers (packed: textShape). The lists
// must be known when the statement starts, and the rows come later: a
// chunk that holds a text the statement's lists lack ends the statement,
// and the next one starts with the longer lists. A column with more than
// maxListTexts texts, and every column once the lists grew maxListGrowths
// times, goes in as text for the rest of the window, so a window of ever
// new texts costs a few statements, not one a chunk.
const (
	maxListTexts   = 4096
	maxListGrowths = 16
)

// textShape is how a statement takes the text columns: each column either
// as text (listed false) or as numbers into texts. The numbers of the
// listed columns go in packed, four to a BIGINT (listWords), so that a row
// costs Go three calls into the driver for them, not eleven: those calls,
// not DuckDB's work, were most of handing it a number.
type textShape struct {
	listed [len(sourceText)]bool
	texts  [len(sourceText)][]string
	slot   [len(sourceText)]int // a listed column's place among the packed numbers
	words  int                  // the BIGINTs the numbers take
	col    [len(sourceText)]int // the table function's column of a column that goes in as text
}

// listWords is the table function's column of the packed numbers' first
// word; each word holds four 16-bit numbers (maxListTexts fits 16 bits, so
// the word stays positive), the first in the lowest bits.
const listWords = colKey + 1

// newTextShape is the shape of statements that take the columns listed
// as numbers into their texts, and the others as text.
func newTextShape(texts [len(sourceText)][]string, listed [len(sourceText)]bool) textShape {
	s := textShape{listed: listed, texts: texts}
	n := 0
	for k := range sourceText {
		if listed[k] {
			s.slot[k] = n
			n++
		}
	}
	s.words = (n + 3) / 4
	c := listWords + s.words
	for k := range sourceText {
		if !listed[k] {
			s.col[k] = c
			c++
		}
	}
	return s
}

// fits says whether the statement of shape s can take chunk c.
func (s *textShape) fits(c *chunkRows) bool {
	for k := range sourceText {
		if s.listed[k] != c.shape.listed[k] || len(s.texts[k]) < len(c.shape.texts[k]) {
			return false
		}
	}
	return true
}

// sql is the statement's INSERT, and its parameters after the shared ones;
// keyed: the store has usage keys (a store an older migration set made, in
// tests, has not).
func (s *textShape) sql(keyed bool) (string, []any) {
	names, cols := slices.Clone(insertColumns), slices.Clone(insertColumns)
	if !keyed {
		names, cols = names[:len(names)-1], cols[:len(cols)-1]
	}
	// The dates go in as microseconds since 1970 (fixedColumns): the
	// driver converts a time.Time with a call into C a value.
	for i, c := range cols {
		if c == "date" || c == "date_processed" {
			cols[i] = "make_timestamp(" + c + ")"
		}
	}
	var args []any
	for k, t := range sourceText {
		if s.listed[k] {
			// A list is numbered from 1; number 0 is NULL (an empty text
			// of a column that keeps it as NULL).
			cols[t.col] = fmt.Sprintf("(?::VARCHAR[])[(w%d >> %d) & 65535]", s.slot[k]/4, 16*(s.slot[k]%4))
			args = append(args, s.texts[k])
		}
	}
	return fmt.Sprintf(insertWindowRows, strings.Join(names, ", "), strings.Join(cols, ", ")), args
}

// columns are the table function's columns for shape s: fixedColumns,
// the packed numbers' words, then the columns that go in as text.
func (s *textShape) columns() []duckdb.ColumnInfo {
	cols := slices.Clone(fixedColumns)
	for w := range s.words {
		cols = append(cols, duckdb.ColumnInfo{Name: fmt.Sprintf("w%d", w), T: typ(duckdb.TYPE_BIGINT)})
	}
	for k, t := range sourceText {
		if !s.listed[k] {
			cols = append(cols, duckdb.ColumnInfo{Name: t.name, T: typ(duckdb.TYPE_VARCHAR)})
		}
	}
	return cols
}

// pack packs the listed columns' numbers of a row as s.columns has them.
func (s *textShape) pack(num *[len(sourceText)]uint16) (w [(len(sourceText) + 3) / 4]int64) {
	for k := range sourceText {
		if s.listed[k] {
			w[s.slot[k]/4] |= int64(num[k]) << (16 * (s.slot[k] % 4))
		}
	}
	return w
}

// textLists numbers the texts of each text column of a window's rows, in
// the order they first appear, from 1.
type textLists struct {
	growths int
	cols    [len(sourceText)]textList
}

type textList struct {
	unlisted bool // more texts than maxListTexts: the column goes in as text
	number   map[string]uint16
	texts    []string // append only: statements hold prefixes of it
	last     string   // the last text numbered, and its number
	lastN    uint16
}

// numbers sets num to md's texts' numbers (0 for an empty text kept as
// NULL) and reports whether a list grew.
func (l *textLists) numbers(md *tally.MeterData, num *[len(sourceText)]uint16) (grew bool) {
	for k := range sourceText {
		col := &l.cols[k]
		if col.unlisted {
			continue
		}
		v := sourceText[k].field(md)
		switch {
		case v == "" && sourceText[k].nullable:
			num[k] = 0
		case v == col.last && col.lastN != 0:
			num[k] = col.lastN
		default:
			n, ok := col.number[v]
			if !ok {
				if len(col.texts) == maxListTexts {
					col.unlisted = true
					continue
				}
				if col.number == nil {
					col.number = map[string]uint16{}
				}
				col.texts = append(col.texts, v)
				n = uint16(len(col.texts))
				col.number[v] = n
				grew = true
			}
			col.last, col.lastN = v, n
			num[k] = n
		}
	}
	return grew
}

// shape is the lists as they stand, for a chunk completed now.
func (l *textLists) shape() textShape {
	var (
		texts  [len(sourceText)][]string
		listed [len(sourceText)]bool
	)
	for k := range l.cols {
		if !l.cols[k].unlisted {
			listed[k] = true
			texts[k] = l.cols[k].texts
		}
	}
	return newTextShape(texts, listed)
}

// fixedColumns are the table function's columns every statement has.
var fixedColumns = func() []duckdb.ColumnInfo {
	cost, err := duckdb.NewDecimalInfo(costWidth, costScale)
	if err != nil {
		panic(err)
	}
	return []duckdb.ColumnInfo{
		{Name: "date", T: typ(duckdb.TYPE_BIGINT)},
		{Name: "date_processed", T: typ(duckdb.TYPE_BIGINT)},
		{Name: "quantity", T: typ(duckdb.TYPE_DOUBLE)},
		{Name: "price", T: typ(duckdb.TYPE_DOUBLE)},
		{Name: "cost", T: cost},
		{Name: "key_id", T: typ(duckdb.TYPE_INTEGER)},
	}
}()

func typ(t duckdb.Type) duckdb.TypeInfo {
	ti, err := duckdb.NewTypeInfo(t)
	if err != nil {
		panic(err)
	}
	return ti
}

// Column positions of fixedColumns.
const (
	colDate, colDateProcessed = 0, 1
	colQuantity, colPrice     = 2, 3
	colCost                   = 4
	colKey                    = 5
)

// sourceText are the text columns: name, place in insertColumns, field,
// and whether "" is NULL (meter_name and currency are required, and kept
// as sent).
var sourceText = [...]textSource{
	{"meter_name", 2, func(md *tally.MeterData) string { return md.MeterName }, false},
	{"meter_sku", 3, func(md *tally.MeterData) string { return md.MeterSku }, true},
	{"family", 4, func(md *tally.MeterData) string { return md.Family }, true},
	{"solution", 5, func(md *tally.MeterData) string { return md.Solution }, true},
	{"unit", 6, func(md *tally.MeterData) string { return md.Unit }, true},
	{"currency", 10, func(md *tally.MeterData) string { return md.Currency }, false},
	{"entitlement", 11, func(md *tally.MeterData) string { return md.Entitlement }, true},
	{"entitlement_type", 12, func(md *tally.MeterData) string { return md.EntitlementType }, true},
	{"payment_method", 13, func(md *tally.MeterData) string { return md.PaymentMethod }, true},
	{"payment_method_name", 14, func(md *tally.MeterData) string { return md.PaymentMethodName }, true},
	{"project", 15, func(md *tally.MeterData) string { return md.Project }, true},
}

// textSource is a text column of the table function and the MeterData
// field it comes from.
type textSource struct {
	name     string
	col      int
	field    func(*tally.MeterData) string
	nullable bool
}

type rowSourceKey struct{}

// registerWindowRows makes the table function known to the database.
func registerWindowRows(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return duckdb.RegisterTableUDF(conn, windowRowsFunction, duckdb.ParallelChunkTableFunction{
		BindArgumentsContext: func(ctx context.Context, _ map[string]any, _ ...any) (duckdb.ParallelChunkTableSource, error) {
			src, ok := ctx.Value(rowSourceKey{}).(*rowSource)
			if !ok {
				return nil, fmt.Errorf("%s is only for loading a window (store.LoadWindow)", windowRowsFunction)
			}
			return src, nil
		},
	})
}

// insertRows inserts rows, checked as LoadWindow says, on conn (inside the
// window's transaction) and returns how many it inserted; keys numbers
// them (nil: the store has no usage keys).
func insertRows(ctx context.Context, conn *sql.Conn, q tally.UsageQuery, runID uuid.UUID, fetchedAt time.Time, rows iter.Seq2[tally.MeterData, error], keys *windowKeys) (int64, error) {
	f := &feeder{chunks: make(chan *chunkRows, 2), free: make(chan *chunkRows, 4), stop: make(chan struct{}), keys: keys}
	fed := make(chan int64, 1)
	go func() {
		n, err := f.feed(ctx, q, rows)
		f.end(err)
		fed <- n
	}()
	// One statement per shape of the text lists (see textShape), each
	// starting with the chunk the statement before could not take.
	var err error
	next := <-f.chunks
	for next != nil && err == nil {
		src := &rowSource{feeder: f, shape: next.shape, first: next}
		query, lists := src.shape.sql(keys != nil)
		args := append([]any{q.Organization, textOrNull(q.OrganizationID), string(q.Window.Granularity), string(q.Basis()), runID.String(), fetchedAt}, lists...)
		_, err = conn.ExecContext(context.WithValue(ctx, rowSourceKey{}, src), query, args...)
		next = src.next
	}
	// Stop the feeder (it may still be reading when the INSERT failed) and
	// wait for it: the rows iterator ends before LoadWindow returns.
	close(f.stop)
	n := <-fed
	// The feeder's own error says what went wrong; DuckDB's only wraps its
	// text.
	if ferr := f.failure(); ferr != nil {
		return 0, ferr
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, cerr
		}
		return 0, err
	}
	return n, nil
}

// feeder reads the window's rows iterator on a goroutine of its own,
// checks each row in order and hands them on a chunk at a time.
type feeder struct {
	chunks chan *chunkRows // checked rows, a chunk's worth at a time
	free   chan *chunkRows // chunks filled, for reuse
	stop   chan struct{}   // closed when the INSERTs are over
	keys   *windowKeys     // numbers each row's key; nil: none

	mu  sync.Mutex
	err error // the first failure
}

// rowSource hands one statement's chunks to DuckDB: from first on, until
// the feeder's chunks end or one does not fit the statement's shape; that
// one is left in next, for the next statement. DuckDB may fill chunks on
// several threads, each taking the next chunk.
type rowSource struct {
	*feeder
	shape textShape

	mu    sync.Mutex
	first *chunkRows // the statement's first chunk, until taken
	next  *chunkRows // the chunk that ended the statement
	over  bool       // no more chunks for this statement
}

// chunkRows is one chunk's worth of checked rows.
type chunkRows struct {
	rows  []tally.MeterData
	cost  []costCell
	num   [][len(sourceText)]uint16 // each row's texts' numbers (textLists)
	key   []int32                   // each row's usage key (windowKeys)
	shape textShape                 // the lists as the chunk was completed
}

// costCell is a row's cost as the DECIMAL(38, 12) column takes it: the
// unscaled integer, an int64 when it fits.
type costCell struct {
	small int64
	big   *duckdb.Decimal // when it does not fit an int64
}

// fillState is what one DuckDB thread keeps between chunks: each text
// column's last text as bytes, for a column that goes in as text. The
// driver hands text to DuckDB as bytes, and would convert a string for
// every value; rows mostly repeat the row before's meter, project or
// payment method.
type fillState struct {
	text [len(sourceText)]textCache
}

type textCache struct {
	s string
	b []byte
}

func (c *textCache) bytes(s string) []byte {
	if c.b == nil || s != c.s {
		c.s, c.b = s, []byte(s)
	}
	return c.b
}

// feed reads rows into chunks until the rows end, a row fails its checks,
// or the INSERTs are over; it returns the rows handed over.
func (f *feeder) feed(ctx context.Context, q tally.UsageQuery, rows iter.Seq2[tally.MeterData, error]) (int64, error) {
	defer close(f.chunks)
	scope, reported := newScopeCheck(q), q.Basis() == tally.BasisReported
	var (
		n     int64
		cur   *chunkRows
		lists textLists
		grew  bool // a list grew since the last chunk was sent
	)
	send := func() bool {
		if grew {
			grew = false
			if lists.growths++; lists.growths > maxListGrowths {
				for k := range lists.cols {
					lists.cols[k].unlisted = true
				}
			}
		}
		cur.shape = lists.shape()
		select {
		case f.chunks <- cur:
			cur = nil
			return true
		case <-f.stop:
			return false
		}
	}
	for md, rerr := range rows {
		if rerr != nil {
			return n, fmt.Errorf("after %d rows: %w", n, rerr)
		}
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		cost, err := checkLoadRow(q.Window, reported, scope, md)
		if err != nil {
			return n, fmt.Errorf("%s: %w", rowLabel(n+1, md), err)
		}
		if cur == nil {
			select {
			case cur = <-f.free:
				cur.rows, cur.cost, cur.num, cur.key = cur.rows[:0], cur.cost[:0], cur.num[:0], cur.key[:0]
			default:
				cur = &chunkRows{}
			}
		}
		cur.rows = append(cur.rows, md)
		cur.cost = append(cur.cost, cost)
		cur.num = append(cur.num, [len(sourceText)]uint16{})
		row, num := &cur.rows[len(cur.rows)-1], &cur.num[len(cur.num)-1]
		if lists.numbers(row, num) {
			grew = true
		}
		var key int32
		if f.keys != nil {
			if key, err = f.keys.number(row, num, &lists); err != nil {
				return n, err
			}
		}
		cur.key = append(cur.key, key)
		n++
		if len(cur.rows) == duckdb.GetDataChunkCapacity() && !send() {
			return n, nil
		}
	}
	if cur != nil && !send() {
		return n, nil
	}
	return n, nil
}

// end records the feeder's failure, which ends the INSERT.
func (f *feeder) end(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *feeder) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (s *rowSource) ColumnInfos() []duckdb.ColumnInfo { return s.shape.columns() }

func (s *rowSource) Cardinality() *duckdb.CardinalityInfo { return nil }

// Init lets DuckDB fill chunks on as many threads as it runs (one while
// loading, see loadThreads).
func (s *rowSource) Init() duckdb.ParallelTableSourceInfo { return duckdb.ParallelTableSourceInfo{} }

func (s *rowSource) NewLocalState() any { return &fillState{} }

// take is the statement's next chunk, nil when it has no more.
func (s *rowSource) take() *chunkRows {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over {
		return nil
	}
	c := s.first
	s.first = nil
	if c == nil {
		var ok bool
		if c, ok = <-s.chunks; !ok {
			s.over = true
			return nil
		}
	}
	if !s.shape.fits(c) {
		s.next, s.over = c, true
		return nil
	}
	return c
}

// FillChunk fills DuckDB's chunk with the next chunk of rows; an empty
// chunk ends the statement.
func (s *rowSource) FillChunk(local any, chunk duckdb.DataChunk) error {
	text := &local.(*fillState).text
	c := s.take()
	if c == nil {
		if err := s.failure(); err != nil {
			return err
		}
		return chunk.SetSize(0)
	}
	for i := range c.rows {
		if err := fillRow(chunk, i, &c.rows[i], c.cost[i], &c.num[i], &s.shape, text, s.keys != nil, c.key[i]); err != nil {
			err = fmt.Errorf("hand a row to DuckDB: %w", err)
			s.end(err)
			return err
		}
	}
	if err := chunk.SetSize(len(c.rows)); err != nil {
		return err
	}
	select {
	case s.free <- c:
	default:
	}
	return nil
}

func fillRow(chunk duckdb.DataChunk, i int, md *tally.MeterData, cc costCell, num *[len(sourceText)]uint16, shape *textShape, text *[len(sourceText)]textCache, keyed bool, key int32) error {
	if err := duckdb.SetChunkValue(chunk, colDate, i, md.Date.UnixMicro()); err != nil {
		return err
	}
	if keyed {
		if err := duckdb.SetChunkValue(chunk, colKey, i, key); err != nil {
			return err
		}
	}
	var err error
	if md.DateProcessed != nil {
		err = duckdb.SetChunkValue(chunk, colDateProcessed, i, md.DateProcessed.UnixMicro())
	} else {
		err = chunk.SetValue(colDateProcessed, i, nil)
	}
	if err != nil {
		return err
	}
	if err := duckdb.SetChunkValue(chunk, colQuantity, i, md.Quantity); err != nil {
		return err
	}
	if md.Price != nil {
		err = duckdb.SetChunkValue(chunk, colPrice, i, *md.Price)
	} else {
		err = chunk.SetValue(colPrice, i, nil)
	}
	if err != nil {
		return err
	}
	if cc.big != nil {
		err = chunk.SetValue(colCost, i, *cc.big)
	} else {
		err = duckdb.SetChunkValue(chunk, colCost, i, cc.small)
	}
	if err != nil {
		return err
	}
	words := shape.pack(num)
	for w, v := range words[:shape.words] {
		if err := duckdb.SetChunkValue(chunk, listWords+w, i, v); err != nil {
			return err
		}
	}
	for k, t := range sourceText {
		if shape.listed[k] {
			continue
		}
		if v := t.field(md); v == "" && t.nullable {
			err = chunk.SetValue(shape.col[k], i, nil)
		} else {
			err = duckdb.SetChunkValue(chunk, shape.col[k], i, text[k].bytes(v))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkLoadRow refuses a row outside the window or the scope, and a cost
// the column cannot hold exactly; it returns the cost as the column takes
// it.
func checkLoadRow(w tally.Window, reported bool, scope scopeCheck, md tally.MeterData) (costCell, error) {
	if err := checkRow(w, reported, md); err != nil {
		return costCell{}, err
	}
	if err := scope.check(md); err != nil {
		return costCell{}, err
	}
	if v, ok := md.Cost.ScaledInt64(costScale); ok {
		return costCell{small: v}, nil
	}
	v, err := md.Cost.Scaled(costScale)
	if err == nil && v.CmpAbs(maxCost) > 0 {
		err = fmt.Errorf("%s does not fit DECIMAL(%d, %d)", md.Cost, costWidth, costScale)
	}
	if err != nil {
		return costCell{}, fmt.Errorf("cost: %w", err)
	}
	return costCell{big: &duckdb.Decimal{Width: costWidth, Scale: costScale, Value: v}}, nil
}
