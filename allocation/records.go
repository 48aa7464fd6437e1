package allocation

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/store"
)

// Every run that writes starts by putting its config's allocation in
// place for the open months. A close records its month's chargeback (the
// cost centres and the rules in force) in its own transaction, through
// the store; the rows are this package's, so it is what writes them.
func init() {
	job.RegisterStart("allocation", func(ctx context.Context, env *job.Env) error {
		return Set(ctx, env.Store, env.Config.Allocation)
	})
	store.FreezeAllocation = func(ctx context.Context, conn *sql.Conn, closeID uuid.UUID, a tally.Allocation) error {
		return insert(ctx, conn, &closeID, a)
	}
}

// Set replaces, in one transaction, the allocation open months are
// charged back by (the rows of allocation_cost_centres and
// allocation_rules whose close_id is NULL) with a: every run that writes
// calls it with its config's, so the analysts' views follow the config.
// The rows closes froze are left as they are.
func Set(ctx context.Context, st *store.Store, a tally.Allocation) error {
	return st.InTx(ctx, "set the chargeback allocation", func(conn *sql.Conn) error {
		for _, t := range []string{"allocation_cost_centres", "allocation_rules"} {
			if _, err := conn.ExecContext(ctx, `DELETE FROM `+t+` WHERE close_id IS NULL`); err != nil {
				return fmt.Errorf("replace %s: %w", t, err)
			}
		}
		return insert(ctx, conn, nil, a)
	})
}

// insert writes a's cost centres and rules under closeID (nil: the open
// months' allocation).
func insert(ctx context.Context, conn *sql.Conn, closeID *uuid.UUID, a tally.Allocation) error {
	var id any
	if closeID != nil {
		id = closeID.String()
	}
	centres, rules := rowsJSON(a)
	for _, t := range []struct{ table, rows string }{{"allocation_cost_centres", centres}, {"allocation_rules", rules}} {
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+t.table+` `+fromJSON(t.table, "$1", "$2"), id, t.rows); err != nil {
			return fmt.Errorf("record %s: %w", t.table, err)
		}
	}
	return nil
}

type centreRow struct {
	Position   int     `json:"position"`
	CostCentre string  `json:"cost_centre"`
	Owner      *string `json:"owner"`
	Project    *string `json:"project"`
}

type ruleRow struct {
	Rule          string   `json:"rule"`
	Version       string   `json:"version"`
	Priority      int      `json:"priority"`
	FromMonth     string   `json:"from_month"`
	Projects      []string `json:"projects"`
	Meters        []string `json:"meters"`
	Families      []string `json:"families"`
	PaymentMethod *string  `json:"payment_method"`
	Method        string   `json:"method"`
	DriverMeter   *string  `json:"driver_meter"`
	Receiver      string   `json:"receiver"`
	Percent       *string  `json:"percent"`
}

// rowsJSON renders a as the rows of allocation_cost_centres and of
// allocation_rules (close_id aside), each a JSON array, for fromJSON:
// Set and a close write them so, and a month's chargeback read from the
// analysts' copy (Lines) reads its config's allocation so, in place of
// the one the copy holds.
func rowsJSON(a tally.Allocation) (centres, rules string) {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	cs := []centreRow{}
	for i, c := range a.CostCentres {
		if len(c.Projects) == 0 {
			cs = append(cs, centreRow{i, c.Name, opt(c.Owner), nil})
		}
		for _, p := range c.Projects {
			cs = append(cs, centreRow{i, c.Name, opt(c.Owner), opt(p)})
		}
	}
	rs := []ruleRow{}
	for i, r := range a.Rules {
		for j, to := range r.Receivers {
			row := ruleRow{Rule: r.Name, Version: r.Version(), Priority: i, FromMonth: r.From.Format("2006-01-02"),
				Projects: r.Projects, Meters: r.Meters, Families: r.Families, PaymentMethod: opt(r.PaymentMethod),
				Method: r.Method, DriverMeter: opt(r.Driver), Receiver: to}
			if j < len(r.Percent) {
				row.Percent = opt(r.Percent[j].String())
			}
			rs = append(rs, row)
		}
	}
	b1, _ := json.Marshal(cs)
	b2, _ := json.Marshal(rs)
	return string(b1), string(b2)
}

// fromJSON is a SELECT of table's columns (allocation_cost_centres or
// allocation_rules) from the JSON rows of rowsJSON in the parameter
// rowsParam, with close_id the parameter (or SQL) closeID.
func fromJSON(table, closeID, rowsParam string) string {
	if table == "allocation_cost_centres" {
		return `SELECT CAST(` + closeID + ` AS UUID) AS close_id, r.position, r.cost_centre, r.owner, r.project
FROM (SELECT unnest(from_json(CAST(` + rowsParam + ` AS VARCHAR), '[{"position":"INTEGER","cost_centre":"VARCHAR","owner":"VARCHAR","project":"VARCHAR"}]')) AS r)`
	}
	return `SELECT CAST(` + closeID + ` AS UUID) AS close_id, r.rule, r.version, r.priority, CAST(r.from_month AS DATE) AS from_month,
       r.projects, r.meters, r.families, r.payment_method, r.method, r.driver_meter, r.receiver, CAST(r.percent AS DECIMAL(9, 6)) AS percent
FROM (SELECT unnest(from_json(CAST(` + rowsParam + ` AS VARCHAR), '[{"rule":"VARCHAR","version":"VARCHAR","priority":"INTEGER","from_month":"VARCHAR","projects":["VARCHAR"],"meters":["VARCHAR"],"families":["VARCHAR"],"payment_method":"VARCHAR","method":"VARCHAR","driver_meter":"VARCHAR","receiver":"VARCHAR","percent":"VARCHAR"}]')) AS r)`
}
