package export

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/store"
)

// FOCUS versions the export writes.
const (
	FOCUS12 = "1.2" // the Cost and Usage rows of the focus view, as they were before 1.3
	FOCUS13 = "1.3" // the default: Cost and Usage at 1.3, a Contract Commitment dataset and FOCUS metadata
)

// FOCUSMetadataName is the FOCUS 1.3 metadata file at the top of a FOCUS
// export: data generator, dataset instances, schema (FOCUS version) and
// recency with time sectors. Its leading underscore keeps Spark, Hive and
// Trino from reading it as data.
const FOCUSMetadataName = "_focus_metadata.json"

// focusCommitmentsDataset is the Contract Commitment dataset's folder.
const focusCommitmentsDataset = "focus_contract_commitment"

// focusCommitmentsCSVDataset is its CSV's folder (with CSV).
const focusCommitmentsCSVDataset = focusCommitmentsDataset + "_csv"

// focus13Nulls say, for the export's manifest, why a column FOCUS 1.3
// defines is null (or not what a reader might expect) in Tally's export.
var focus13Nulls = map[string]string{
	"ContractCommitmentCost":        "the amount of the config's spend commitment (commitments:) naming the entitlement, in the row's currency, for the day of its last charge; else null, as the interface gives no entitlement amount (what was bought): x_CommitmentSource says, per commitment, which entry or why none (so does this manifest's commitments section); x_AppliedCost holds what the usage drew from it so far",
	"ContractCommitmentQuantity":    "the quantity of the config's usage commitment (commitments:) naming the entitlement for the day of its last charge; else null, as the interface gives no entitlement quantity (x_CommitmentSource says why); x_AppliedQuantity holds what the usage drew from it so far",
	"ContractCommitmentUnit":        "the config's unit with ContractCommitmentQuantity; null when it is",
	"ContractCommitmentPeriodStart": "the config's start where it names the commitment; else, the entitlement's own dates not being in the interface, its payment method's period (ContractPeriodStart)",
	"ContractCommitmentPeriodEnd":   "the day after the config's end where it names the commitment; else, the entitlement's own dates not being in the interface, its payment method's period (ContractPeriodEnd)",
	"ContractPeriodStart":           "the payment method's startDate; when it has none (no lower bound), the day it was created, else the first charge under it (x_ContractPeriodOpenStart true)",
	"ContractPeriodEnd":             "the payment method's endDate (exclusive); when it has none (it never expires), the end of the last billing period with a charge under it (x_ContractPeriodOpenEnd true)",
	"AllocatedMethodId":             "the rule's entry (rule@YYYY-MM) and the method applied (even, fixed, proportional, driver); null on a charge no rule shares (x_AllocationOriginId null too)",
	"AllocatedMethodDetails":        "one element per allocated charge: its AllocatedRatio (the ratios of an origin charge sum to 1), for a driver the receiver's UsageQuantity of the driver meter in the month and its UsageUnit, x_Method and x_Rule; null on a charge no rule shares",
	"AllocatedResourceId":           "the receiving cost centre (allocation.cost_centres); null on a charge no rule shares",
	"AllocatedResourceName":         "the receiving cost centre; null on a charge no rule shares",
	"AllocatedTags":                 "{\"tally/cost-centre\": the receiving cost centre}; null on a charge no rule shares",
	"x_AllocationOriginId":          "on an allocated charge: the origin row it was split from (the origin row itself is not in the export; its parts replace it and sum to it: BilledCost, EffectiveCost, x_Cost and quantities exactly, ListCost and ContractedCost, unit price × the part's quantity, within 10^-12 a part). A closed month's frozen rows and Corrections are not split (they carry no family or paid-as to match a charge)",
	"ContractApplied":               "null on rows without an entitlement of a known type (license, quantity, cash, pre-commitment); an unknown type is not claimed as a commitment (x_EntitlementId keeps it)",
	"CommitmentDiscountName":        "null: the interface gives entitlements no display name",
	"BillingAccountId":              "the organization the charge is of (its id as its latest snapshot gives it; x_Organization is Tally's name for it); the payment method is x_PaymentMethodId",
}

// focus13Lookups set the session variables the FOCUS 1.3 queries read
// (export/sql/focus13_*.sql): each organization's id and name, the
// contract of each commitment and the parts of each shared charge, each a
// map small enough to hold (an entry per organization, a few per
// entitlement, one per charge a rule splits). The queries look them up per
// row rather than join them: joined, DuckDB's join order could make the
// rows of a ranged export the side it holds, and ran out of memory at the
// writer's memory_limit. The parameters are the export's granularity and
// basis.
var focus13Lookups = []struct {
	file string
	args func(Options) []any
}{
	{"focus13_org.sql", nil},
	{"focus13_contracts.sql", func(o Options) []any { return []any{string(o.Granularity), string(o.Basis)} }},
	{"focus13_alloc.sql", func(o Options) []any { return []any{string(o.Basis)} }},
}

// setFOCUS13Lookups creates the FOCUS 1.3 queries' macros
// (focus13_macros.sql) on conn and sets focus13Lookups and the config's
// commitments there.
func setFOCUS13Lookups(ctx context.Context, conn *sql.Conn, o Options) error {
	if _, err := conn.ExecContext(ctx, sqlText("focus13_macros.sql")); err != nil {
		return fmt.Errorf("FOCUS 1.3 macros: %w", err)
	}
	if err := setFOCUS13Commitments(ctx, conn, o.Commitments); err != nil {
		return err
	}
	for _, l := range focus13Lookups {
		var args []any
		if l.args != nil {
			args = l.args(o)
		}
		if _, err := conn.ExecContext(ctx, sqlText(l.file), args...); err != nil {
			return fmt.Errorf("FOCUS 1.3 lookups: %w", err)
		}
	}
	return nil
}

// setFOCUS13Commitments puts the config's commitments in the temporary
// table the Contract Commitment query reads (focus13_configured.sql).
func setFOCUS13Commitments(ctx context.Context, conn *sql.Conn, cs []configs.Commitment) error {
	if _, err := conn.ExecContext(ctx, sqlText("focus13_configured.sql")); err != nil {
		return fmt.Errorf("FOCUS 1.3 commitments: %w", err)
	}
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	for _, c := range cs {
		category, amount, quantity := "Spend", any(c.Amount.String()), any(nil)
		if c.Type == configs.CommitmentUsage {
			category, amount, quantity = "Usage", nil, c.Quantity.String()
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO tally_focus_configured VALUES (?, ?, ?, ?, CAST(? AS DECIMAL(38, 12)), ?, CAST(? AS DECIMAL(38, 12)), ?, CAST(? AS DATE), CAST(? AS DATE))`,
			c.Entitlement, c.Path, orNull(c.Name), category, amount, orNull(c.Currency), quantity, orNull(c.Unit),
			c.Start.Format(tally.DateLayout), c.End.Format(tally.DateLayout)); err != nil {
			return fmt.Errorf("FOCUS 1.3 commitments: %s: %w", c.Path, err)
		}
	}
	return nil
}

// focus13Queries return the FOCUS 1.3 Cost and Usage and Contract
// Commitment queries (focus13_cost_and_usage.sql,
// focus13_contract_commitment.sql) over the 1.2 rows base selects (the
// focus view's rows of one granularity and basis, its two parameters), the
// relation f they read. Both read the macros and the contracts of
// setFOCUS13Lookups, which must be set, so every ContractApplied element
// names a commitment of the Contract Commitment dataset, with its
// contract.
func focus13Queries(base string) (cu, cc string) {
	over := func(file string) string {
		return "WITH f AS (" + base + ")\nSELECT * FROM (\n" + sqlText(file) + ")"
	}
	return over("focus13_cost_and_usage.sql"), over("focus13_contract_commitment.sql")
}

// focusMetadata is FOCUS 1.3's metadata for one export: who generated it,
// the dataset instances, their schema's FOCUS version, and their recency.
type focusMetadata struct {
	DataGenerator    focusDataGenerator     `json:"DataGenerator"`
	DatasetInstances []focusDatasetInstance `json:"DatasetInstances"`
	Schemas          []focusSchema          `json:"Schemas"`
	Recency          []focusRecency         `json:"Recency"`
	// x_BillingPeriods: per billing period of Cost and Usage, whether it
	// is complete (closed) and when it last changed; x_Notes: why columns
	// are null (the manifest's focus section says the same).
	BillingPeriods []focusBillingPeriod `json:"x_BillingPeriods"`
	Notes          map[string]string    `json:"x_Notes"`
	// x_Commitments: where each commitment's amount comes from, as the
	// manifest's commitments section.
	Commitments *commitmentNotes `json:"x_Commitments,omitempty"`
}

// commitmentNotes say where the Contract Commitment amounts come from: the
// config names what was bought, the interface never does.
type commitmentNotes struct {
	// Sources are, per ContractCommitmentId, its x_CommitmentSource: the
	// config's entry its amount comes from ("config: commitments[0] …"),
	// or why it has none ("none: config names no commitment for
	// entitlement …").
	Sources map[string]string `json:"sources"`
	// Unmatched are the config's commitments whose entitlement no
	// commitment of the export draws on: a typo, or an entitlement not
	// (yet) in the loaded usage of the export's granularity and basis.
	Unmatched []string `json:"config_unmatched,omitempty"`
}

// readCommitmentNotes reads, after the Contract Commitment dataset is
// written, each commitment's source from its files (held, the months the
// manifest records for it) and the config's commitments no commitment of
// the export draws on.
func readCommitmentNotes(ctx context.Context, conn *sql.Conn, dir string, held map[string]monthManifest, o Options) (*commitmentNotes, error) {
	notes := &commitmentNotes{Sources: map[string]string{}}
	var files []string
	for _, m := range sortedKeys(held) {
		for _, f := range held[m].Files {
			files = append(files, store.QuoteString(filepath.Join(dir, focusCommitmentsDataset, "start_month="+m, f)))
		}
	}
	if len(files) > 0 {
		rows, err := conn.QueryContext(ctx, `SELECT ContractCommitmentId, x_CommitmentSource FROM read_parquet([`+strings.Join(files, ", ")+`])`)
		if err != nil {
			return nil, fmt.Errorf("read the commitments' sources: %w", err)
		}
		for rows.Next() {
			var id, src string
			if err := rows.Scan(&id, &src); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read the commitments' sources: %w", err)
			}
			notes.Sources[id] = src
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read the commitments' sources: %w", err)
		}
	}
	rows, err := conn.QueryContext(ctx, `SELECT path, entitlement FROM tally_focus_configured
WHERE map_extract_value(getvariable('tally_focus_contracts'), entitlement) IS NULL ORDER BY path`)
	if err != nil {
		return nil, fmt.Errorf("read the config's commitments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var path, ent string
		if err := rows.Scan(&path, &ent); err != nil {
			return nil, fmt.Errorf("read the config's commitments: %w", err)
		}
		notes.Unmatched = append(notes.Unmatched, fmt.Sprintf("%s: entitlement %q is on no charge of a known entitlement type in the loaded usage (granularity %s, basis %s): no Contract Commitment takes its amount",
			path, ent, o.Granularity, o.Basis))
	}
	return notes, rows.Err()
}

type focusDataGenerator struct {
	DataGenerator string `json:"DataGenerator"`
}

type focusDatasetInstance struct {
	DatasetInstanceID   string `json:"DatasetInstanceId"`
	DatasetInstanceName string `json:"DatasetInstanceName"`
	FocusDatasetID      string `json:"FocusDatasetId"`
}

type focusSchema struct {
	SchemaID          string `json:"SchemaId"`
	FocusVersion      string `json:"FocusVersion"`
	CreationDate      string `json:"CreationDate"`
	DatasetInstanceID string `json:"DatasetInstanceId"`
}

type focusRecency struct {
	DatasetInstanceID          string            `json:"DatasetInstanceId"`
	RecencyLastUpdated         string            `json:"RecencyLastUpdated"`
	DatasetInstanceLastUpdated *string           `json:"DatasetInstanceLastUpdated,omitempty"`
	DatasetInstanceComplete    *bool             `json:"DatasetInstanceComplete,omitempty"`
	TimeSectors                []focusTimeSector `json:"TimeSectors,omitempty"`
}

type focusTimeSector struct {
	TimeSectorStart       string `json:"TimeSectorStart"`
	TimeSectorEnd         string `json:"TimeSectorEnd"`
	TimeSectorComplete    bool   `json:"TimeSectorComplete"`
	TimeSectorLastUpdated string `json:"TimeSectorLastUpdated"`
}

type focusBillingPeriod struct {
	BillingPeriodStart string `json:"BillingPeriodStart"`
	BillingPeriodEnd   string `json:"BillingPeriodEnd"`
	Complete           bool   `json:"Complete"`
	LastUpdated        string `json:"LastUpdated"`
}

const focusTimeLayout = "2006-01-02T15:04:05Z"

// sectorStep is one time sector at the export's granularity. Week and
// year are refused for FOCUS before this (billing periods are months).
func sectorStep(g tally.Granularity) func(time.Time) time.Time {
	switch g {
	case tally.Hour:
		return func(t time.Time) time.Time { return t.Add(time.Hour) }
	case tally.Month:
		return func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }
	}
	return func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }
}

// buildFOCUSMetadata reads, over the Cost and Usage query, each billing
// period's completeness (a month closed for the export's basis and
// granularity is complete; any other is not) and when each time sector of
// it last changed: the latest load of its rows, or for a closed month the
// close.
//
// Only the billing periods in the folder (held, the months the manifest
// records) are described: a ranged export may hold some months only. cu
// is a query of the rows' periods, charge periods and x_FetchedAt.
func buildFOCUSMetadata(ctx context.Context, conn *sql.Conn, cu string, args []any, o Options, held map[string]monthManifest, now time.Time) (focusMetadata, error) {
	name := fmt.Sprintf("%s, %s", o.Granularity, o.Basis)
	cuID := fmt.Sprintf("tally-cost-and-usage-%s-%s", o.Granularity, o.Basis)
	ccID := fmt.Sprintf("tally-contract-commitment-%s-%s", o.Granularity, o.Basis)
	stamp := now.UTC().Format(focusTimeLayout)
	md := focusMetadata{
		DataGenerator: focusDataGenerator{DataGenerator: "Tally"},
		DatasetInstances: []focusDatasetInstance{
			{cuID, "Cost and Usage (" + name + ")", "CostAndUsage"},
			{ccID, "Contract Commitment (" + name + ")", "ContractCommitment"},
		},
		Schemas: []focusSchema{
			{cuID + "-" + FOCUS13, FOCUS13, stamp, cuID},
			{ccID + "-" + FOCUS13, FOCUS13, stamp, ccID},
		},
		Notes: focus13Nulls,
	}
	// One pass over the rows: the latest load per billing period and
	// charge sector; then which months are closed, and when. The rows are
	// grouped on their periods as they are, and only the groups are put
	// in UTC and cut to sectors: ICU's time zone functions on every row
	// were 12 of the pass's 15 s at 24M rows.
	trunc := map[tally.Granularity]string{tally.Hour: "hour", tally.Month: "month"}[o.Granularity]
	if trunc == "" {
		trunc = "day"
	}
	rows, err := conn.QueryContext(ctx, `WITH cu AS (`+cu+`)
SELECT timezone('UTC', period_start), timezone('UTC', period_end),
       date_trunc('`+trunc+`', timezone('UTC', charge_start)), max(fetched_at)
FROM (SELECT BillingPeriodStart AS period_start, BillingPeriodEnd AS period_end,
             ChargePeriodStart AS charge_start, max(x_FetchedAt) AS fetched_at
      FROM cu GROUP BY ALL)
GROUP BY ALL`, args...)
	if err != nil {
		return md, fmt.Errorf("FOCUS metadata: %w", err)
	}
	type period struct {
		start, end time.Time
		complete   bool
		last       time.Time
	}
	byStart := map[time.Time]*period{}
	latest := map[time.Time]time.Time{}
	for rows.Next() {
		var start, end, sector time.Time
		var last sql.NullTime
		if err := rows.Scan(&start, &end, &sector, &last); err != nil {
			rows.Close()
			return md, fmt.Errorf("FOCUS metadata: %w", err)
		}
		p := byStart[start.UTC()]
		if p == nil {
			p = &period{start: start.UTC(), end: end.UTC()}
			byStart[p.start] = p
		}
		if last.Valid {
			if last.Time.After(p.last) {
				p.last = last.Time
			}
			if last.Time.After(latest[sector.UTC()]) {
				latest[sector.UTC()] = last.Time
			}
		}
	}
	if err := rows.Close(); err != nil {
		return md, fmt.Errorf("FOCUS metadata: %w", err)
	}
	closes, err := conn.QueryContext(ctx, `SELECT CAST(month AS TIMESTAMP), acted_at FROM closed_months WHERE basis = ? AND granularity = ?`,
		string(o.Basis), string(o.Granularity))
	if err != nil {
		return md, fmt.Errorf("FOCUS metadata: %w", err)
	}
	for closes.Next() {
		var month, at time.Time
		if err := closes.Scan(&month, &at); err != nil {
			closes.Close()
			return md, fmt.Errorf("FOCUS metadata: %w", err)
		}
		if p := byStart[month.UTC()]; p != nil {
			p.complete = true
			if at.After(p.last) {
				p.last = at
			}
		}
	}
	if err := closes.Close(); err != nil {
		return md, fmt.Errorf("FOCUS metadata: %w", err)
	}
	var periods []period
	for _, p := range byStart {
		if _, ok := held[p.start.Format("2006-01")]; !ok {
			continue
		}
		if p.last.IsZero() {
			p.last = now
		}
		periods = append(periods, *p)
	}
	slices.SortFunc(periods, func(a, b period) int { return a.start.Compare(b.start) })
	step := sectorStep(o.Granularity)
	cuRecency := focusRecency{DatasetInstanceID: cuID, RecencyLastUpdated: stamp, TimeSectors: []focusTimeSector{}}
	lastAll := time.Time{}
	allComplete := len(periods) > 0
	for _, p := range periods {
		md.BillingPeriods = append(md.BillingPeriods, focusBillingPeriod{
			BillingPeriodStart: p.start.UTC().Format(focusTimeLayout), BillingPeriodEnd: p.end.UTC().Format(focusTimeLayout),
			Complete: p.complete, LastUpdated: p.last.UTC().Format(focusTimeLayout)})
		for s := p.start.UTC(); s.Before(p.end); s = step(s) {
			l, ok := latest[s]
			if !ok || p.complete {
				l = p.last
			}
			cuRecency.TimeSectors = append(cuRecency.TimeSectors, focusTimeSector{
				TimeSectorStart: s.Format(focusTimeLayout), TimeSectorEnd: step(s).Format(focusTimeLayout),
				TimeSectorComplete: p.complete, TimeSectorLastUpdated: l.UTC().Format(focusTimeLayout)})
		}
		if p.last.After(lastAll) {
			lastAll = p.last
		}
		allComplete = allComplete && p.complete
	}
	if lastAll.IsZero() {
		lastAll = now
	}
	// Contract Commitment is not a time series: one last-updated and one
	// completeness for the whole dataset. It is complete when every billing
	// period it is drawn from is.
	ccLast := lastAll.UTC().Format(focusTimeLayout)
	md.Recency = []focusRecency{cuRecency,
		{DatasetInstanceID: ccID, RecencyLastUpdated: stamp, DatasetInstanceLastUpdated: &ccLast, DatasetInstanceComplete: &allComplete}}
	return md, nil
}

// finishFOCUS writes, after a FOCUS export's datasets, the FOCUS 1.3
// metadata and the manifest's focus section. A 1.2 export removes what a
// 1.3 export left in the folder (the Contract Commitment dataset, the
// metadata), so the folder holds one version.
func finishFOCUS(ctx context.Context, conn *sql.Conn, dir string, o Options, man *manifest, now time.Time, copying func(context.Context) (func(), error)) error {
	version := o.FOCUSVersion
	if version == "" {
		version = FOCUS13
	}
	if version == FOCUS12 {
		for _, name := range []string{focusCommitmentsDataset, focusCommitmentsCSVDataset} {
			if _, ok := man.Datasets[name]; !ok {
				continue
			}
			empty := dataset{name: name, partition: "start_month",
				query:    `SELECT CAST(NULL AS VARCHAR) AS start_month, CAST(NULL AS DECIMAL(38, 12)) AS x_AppliedCost, CAST(NULL AS TIMESTAMPTZ) AS x_LastChargePeriodEnd WHERE false`,
				costExpr: "x_AppliedCost", timeExpr: "x_LastChargePeriodEnd"}
			if _, err := exportDataset(ctx, conn, dir, empty, o, man, now, copying); err != nil {
				return err
			}
			delete(man.Datasets, name)
		}
		if err := os.Remove(filepath.Join(dir, FOCUSMetadataName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		man.FOCUS = &focusManifest{Version: FOCUS12}
		return writeJSON(dir, ManifestName, "manifest", man)
	}
	body, err := FOCUSQuery(ctx, conn)
	if err != nil {
		return err
	}
	// The periods, charge sectors and loads are read from the focus view's
	// rows, not the Cost and Usage rows: splitting a charge among cost
	// centres copies them to each part, so both give the same, and the
	// view's rows need no split of every row of the history.
	rows := `SELECT * FROM (` + body + `) WHERE x_Granularity = ? AND x_Basis = ?`
	args := []any{string(o.Granularity), string(o.Basis)}
	md, err := buildFOCUSMetadata(ctx, conn, rows, args, o, man.Datasets["focus"], now)
	if err != nil {
		return err
	}
	notes, err := readCommitmentNotes(ctx, conn, dir, man.Datasets[focusCommitmentsDataset], o)
	if err != nil {
		return err
	}
	md.Commitments = notes
	if err := writeJSON(dir, FOCUSMetadataName, "FOCUS metadata", md); err != nil {
		return err
	}
	man.FOCUS = &focusManifest{Version: FOCUS13, Metadata: FOCUSMetadataName, Nulls: focus13Nulls, Commitments: notes}
	return writeJSON(dir, ManifestName, "manifest", man)
}
