package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/lake"
	"github.com/tally-dev/tally/store"
)

// lakePart is one (organization, month) partition a fetch of usage.source
// lake loads: its files in the lake's current snapshot, none when the
// lake no longer holds it.
type lakePart struct {
	org   string
	month time.Time
	files []string
}

func (p lakePart) key() string { return p.org + " " + p.month.Format("2006-01") }

// fetchLake is the fetch of usage.source lake: a group job reading every
// shard's usage from the lake's usage table instead of the interface. It
// asks tally-lake for the current snapshot's files by partition, and
// loads again exactly the partitions of the config's organizations whose
// files changed since their last load here (lake_loads), from usage.start
// (or --from) to this month: each month of an organization replaced whole,
// one month window per granularity, with the rows its files hold. A
// partition the lake no longer holds is emptied. A partition that fails is
// the run's partial failure, and the next run loads it again.
func fetchLake(ctx context.Context, env *job.Env, runID uuid.UUID, opts FetchOptions) (FetchSummary, error) {
	start := time.Now()
	sum := FetchSummary{Lake: true}
	cfg := env.Config
	lc, err := lake.ConfigFor(cfg, cfg.Export.Dir)
	if err != nil {
		return sum, err
	}
	helper, err := lake.FindHelper()
	if err != nil {
		return sum, err
	}
	var files lake.Files
	if err := lake.Call(ctx, helper, lake.Request{Op: "files", Catalog: lc, Table: lake.UsageTable}, &files, env.Log); err != nil {
		return sum, fmt.Errorf("usage.source lake: %w", err)
	}
	if !files.Found {
		return sum, fmt.Errorf("usage.source lake: the lake has no table %s.%s yet: the shards' exports (export.format iceberg) into the same lake.catalog create it", lc.Namespace, lake.UsageTable)
	}
	from, to := tally.Month.Truncate(cfg.Usage.Start), tally.Month.Truncate(env.Today())
	if !opts.From.IsZero() {
		from = tally.Month.Truncate(opts.From)
	}
	if !opts.To.IsZero() {
		to = tally.Month.Truncate(opts.To.AddDate(0, 0, -1))
	}
	orgs := map[string]bool{}
	for _, o := range cfg.Organizations {
		orgs[o.Name] = true
	}
	loaded, err := lakeLoads(ctx, env.Store)
	if err != nil {
		return sum, err
	}
	var due []lakePart
	inLake := map[string]bool{}
	for _, p := range files.Partitions {
		if !orgs[p.Organization] || p.Month.Before(from) || p.Month.After(to) {
			continue
		}
		lp := lakePart{org: p.Organization, month: p.Month, files: p.Files}
		inLake[lp.key()] = true
		if loaded[lp.key()] != strings.Join(lp.files, "\n") {
			due = append(due, lp)
		}
	}
	for k := range loaded {
		org, m, _ := strings.Cut(k, " ")
		month, err := time.Parse("2006-01", m)
		if err != nil || !orgs[org] || inLake[k] || month.Before(from) || month.After(to) {
			continue
		}
		due = append(due, lakePart{org: org, month: month})
	}
	slices.SortFunc(due, func(a, b lakePart) int { return strings.Compare(a.key(), b.key()) })
	sum.Planned = len(due)
	env.Log.Info().Str("table", files.Table).Int64("snapshot", files.SnapshotID).Int("partitions", len(due)).
		Msg("usage.source lake: loading the partitions whose files changed")
	for i, p := range due {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		rows, err := loadLakePart(ctx, env, runID, p, files.SnapshotID, func(uris []string) ([]string, func(), error) {
			return localFiles(ctx, env, helper, lc, uris)
		})
		if err != nil {
			env.Log.Error().Str("organization", p.org).Str("month", p.month.Format("2006-01")).Err(err).Msg("usage.source lake: partition not loaded")
			sum.Failed = append(sum.Failed, WindowFailure{Organization: p.org, Err: err,
				Window: tally.Window{Start: p.month, End: p.month.AddDate(0, 1, 0), Granularity: cfg.Usage.Granularity}})
			continue
		}
		sum.Loaded++
		sum.Rows += rows
		env.Log.Info().Str("organization", p.org).Str("month", p.month.Format("2006-01")).Int("files", len(p.files)).
			Int64("rows", rows).Str("progress", fmt.Sprintf("%d/%d", i+1, len(due))).Msg("partition loaded from the lake")
	}
	sum.Duration = time.Since(start)
	if len(due) > 0 && sum.Loaded == 0 {
		return sum, fmt.Errorf("usage.source lake: none of the %d partitions due loaded; the first: %w", len(due), sum.Failed[0].Err)
	}
	return finishFetch(ctx, env, sum, nil)
}

// localFiles are the lake's files uris as paths DuckDB reads: a folder's
// as they are, those on S3 (which DuckDB, as tally links it, cannot read)
// downloaded by tally-lake into a temporary folder, which done removes.
func localFiles(ctx context.Context, env *job.Env, helper string, lc lake.Config, uris []string) (paths []string, done func(), err error) {
	done = func() {}
	onS3 := false
	for _, f := range uris {
		if lake.OnS3(f) {
			onS3 = true
			continue
		}
		u, err := url.Parse(f)
		if err != nil || u.Scheme != "file" && u.Scheme != "" {
			return nil, done, fmt.Errorf("the lake's file %s is neither in a folder nor on S3, which usage.source lake reads", f)
		}
		paths = append(paths, u.Path)
	}
	if !onS3 {
		return paths, done, nil
	}
	dir, err := os.MkdirTemp("", "tally-lake-read-")
	if err != nil {
		return nil, done, err
	}
	done = func() { os.RemoveAll(dir) }
	var got lake.Downloaded
	if err := lake.Call(ctx, helper, lake.Request{Op: "download", Catalog: lc, Table: lake.UsageTable, Files: uris, Dir: dir}, &got, env.Log); err != nil {
		return nil, done, err
	}
	paths = paths[:0]
	for _, f := range uris {
		p, ok := got.Files[f]
		if !ok {
			return nil, done, fmt.Errorf("tally-lake did not download %s", f)
		}
		paths = append(paths, p)
	}
	return paths, done, nil
}

// lakeLoads are the partitions loaded from the lake so far, with the
// files each was loaded from.
func lakeLoads(ctx context.Context, st *store.Store) (map[string]string, error) {
	rows, err := st.DB().QueryContext(ctx, `SELECT organization, strftime(month, '%Y-%m'), files FROM lake_loads`)
	if err != nil {
		return nil, fmt.Errorf("read lake_loads: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var org, month, files string
		if err := rows.Scan(&org, &month, &files); err != nil {
			return nil, err
		}
		out[org+" "+month] = files
	}
	return out, rows.Err()
}

// loadLakePart replaces the store's usage of p's organization and month
// with the rows of p's files: one month window per granularity the files
// or the store hold (a granularity the lake no longer has is emptied),
// then records the files loaded. A kill between the windows and the
// record loads the partition again on the next run, to the same rows.
func loadLakePart(ctx context.Context, env *job.Env, runID uuid.UUID, p lakePart, snapshot int64,
	local func([]string) ([]string, func(), error)) (int64, error) {
	paths, done, err := local(p.files)
	if err != nil {
		return 0, err
	}
	defer done()
	db := env.Store.DB()
	next := p.month.AddDate(0, 1, 0)
	grans := map[tally.Granularity]bool{}
	orgID := ""
	if len(paths) > 0 {
		rows, err := db.QueryContext(ctx, `SELECT granularity, basis, any_value(organization_id), count(*) FROM read_parquet(?)
WHERE organization = ? GROUP BY ALL`, paths, p.org)
		if err != nil {
			return 0, fmt.Errorf("read the lake's files: %w", err)
		}
		for rows.Next() {
			var g, basis string
			var id sql.NullString
			var n int64
			if err := rows.Scan(&g, &basis, &id, &n); err != nil {
				rows.Close()
				return 0, err
			}
			if tally.Basis(basis) != tally.BasisUsage {
				rows.Close()
				return 0, fmt.Errorf("the lake holds %d rows of basis %s for %q in %s: usage.source lake reads basis usage (shards fetching the organization's usage report by usage date)", n, basis, p.org, p.month.Format("2006-01"))
			}
			switch gr := tally.Granularity(g); gr {
			case tally.Hour, tally.Day, tally.Month:
				grans[gr] = true
			default:
				rows.Close()
				return 0, fmt.Errorf("the lake holds %d rows of granularity %s for %q in %s: usage.source lake loads hour, day and month rows (a month window holds their buckets whole)", n, g, p.org, p.month.Format("2006-01"))
			}
			orgID = id.String
		}
		if err := rows.Close(); err != nil {
			return 0, err
		}
	}
	held, err := db.QueryContext(ctx, `SELECT DISTINCT granularity FROM usage
WHERE organization = ? AND basis = 'usage' AND date >= ? AND date < ?`, p.org, p.month, next)
	if err != nil {
		return 0, err
	}
	for held.Next() {
		var g string
		if err := held.Scan(&g); err != nil {
			held.Close()
			return 0, err
		}
		grans[tally.Granularity(g)] = true
	}
	if err := held.Close(); err != nil {
		return 0, err
	}
	var total int64
	for _, g := range []tally.Granularity{tally.Hour, tally.Day, tally.Month} {
		if !grans[g] {
			continue
		}
		q := tally.UsageQuery{Window: tally.Window{Start: p.month, End: next, Granularity: g}, Organization: p.org, OrganizationID: orgID}
		res, err := env.Store.LoadWindow(ctx, q, runID, lakeRows(ctx, db, paths, p.org, g))
		if err != nil {
			return total, err
		}
		total += res.Rows
	}
	err = env.Store.InTx(ctx, "record the partition loaded from the lake", func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, `DELETE FROM lake_loads WHERE organization = ? AND month = ?::DATE`, p.org, p.month); err != nil {
			return err
		}
		if len(p.files) == 0 {
			return nil
		}
		_, err := conn.ExecContext(ctx, `INSERT INTO lake_loads (organization, month, files, snapshot_id, loaded_at) VALUES (?, ?::DATE, ?, ?, ?)`,
			p.org, p.month, strings.Join(p.files, "\n"), snapshot, time.Now().UTC())
		return err
	})
	return total, err
}

// lakeRows streams the rows of org and granularity g in the lake's files
// at paths, as the interface's would arrive. The cost is read as text, so
// it arrives exact.
func lakeRows(ctx context.Context, db *sql.DB, paths []string, org string, g tally.Granularity) iter.Seq2[tally.MeterData, error] {
	return func(yield func(tally.MeterData, error) bool) {
		if len(paths) == 0 {
			return
		}
		rows, err := db.QueryContext(ctx, `SELECT date, date_processed, meter_name, meter_sku, family, solution, unit,
  quantity, price, CAST(cost AS VARCHAR), currency, entitlement, entitlement_type, payment_method,
  payment_method_name, project
FROM read_parquet(?) WHERE organization = ? AND granularity = ? AND basis = 'usage' ORDER BY date`, paths, org, string(g))
		if err != nil {
			yield(tally.MeterData{}, fmt.Errorf("read the lake's files: %w", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var (
				m                                                              tally.MeterData
				processed                                                      sql.NullTime
				sku, family, solution, unit, ent, entType, pm, pmName, project sql.NullString
				price                                                          sql.NullFloat64
				cost                                                           string
			)
			if err := rows.Scan(&m.Date, &processed, &m.MeterName, &sku, &family, &solution, &unit,
				&m.Quantity, &price, &cost, &m.Currency, &ent, &entType, &pm, &pmName, &project); err != nil {
				yield(m, err)
				return
			}
			m.Date = m.Date.UTC()
			if processed.Valid {
				t := processed.Time.UTC()
				m.DateProcessed = &t
			}
			if price.Valid {
				m.Price = &price.Float64
			}
			m.MeterSku, m.Family, m.Solution, m.Unit = sku.String, family.String, solution.String, unit.String
			m.Entitlement, m.EntitlementType, m.PaymentMethod, m.PaymentMethodName, m.Project = ent.String, entType.String, pm.String, pmName.String, project.String
			d, err := tally.ParseDecimal(cost)
			if err != nil {
				yield(m, fmt.Errorf("the lake's cost %q: %w", cost, err))
				return
			}
			m.Cost = d
			if !yield(m, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(tally.MeterData{}, err)
		}
	}
}
