package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"

	"github.com/tally-dev/tally"
)

// Reference is the billing reference data of one fetch. A nil part was not
// fetched and is not snapshotted; the views keep showing its previous
// snapshot.
type Reference struct {
	// OrgName is Tally's name for the organization whose token read it
	// (organizations.name): every row is stored with it.
	OrgName        string
	Organization   *tally.Organization
	PaymentMethods []tally.PaymentMethod
	RateCards      []tally.RateCard
	Projects       []tally.Project
	Locations      []tally.Location
}

// SaveSnapshot appends one snapshot, dated at, of each non-nil part of ref,
// all in one transaction. A snapshot is every row of a table with one
// snapshot_at; the views show the latest. An empty (non-nil) part adds no
// rows, so it cannot hide an earlier snapshot.
func (s *Store) SaveSnapshot(ctx context.Context, runID uuid.UUID, at time.Time, ref Reference) error {
	if err := s.writable("save snapshot"); err != nil {
		return err
	}
	// TIMESTAMP holds microseconds; truncating here keeps the value the
	// caller passed equal to the one stored.
	at = at.UTC().Truncate(time.Microsecond)
	run := duckdb.UUID(runID)
	err := s.inTx(ctx, func(conn *sql.Conn) error {
		return conn.Raw(func(dc any) error {
			if o := ref.Organization; o != nil {
				if err := appendOrgRows(ref.OrgName, dc, "organization_snapshots",
					[]string{"snapshot_at", "run_id", "id", "name", "raw"}, 1,
					func(int) ([]driver.Value, error) {
						return []driver.Value{at, run, textOrNull(o.ID), textOrNull(o.Name), jsonOrNull(o.Raw)}, nil
					}); err != nil {
					return err
				}
			}
			if ref.PaymentMethods != nil {
				if err := appendOrgRows(ref.OrgName, dc, "payment_method_snapshots", []string{
					"snapshot_at", "run_id", "id", "organization_id", "display_name", "created", "type",
					"auto_purchase_stream_licenses", "start_date", "end_date", "product_publication_name",
					"sales_order_number", "notes", "projects", "is_active", "terms_and_conditions_accepted",
					"spec", "raw"}, len(ref.PaymentMethods),
					func(i int) ([]driver.Value, error) {
						pm := ref.PaymentMethods[i]
						projects := pm.Projects
						if projects == nil {
							projects = []string{}
						}
						return []driver.Value{at, run, pm.ID, textOrNull(pm.OrganizationID), textOrNull(pm.DisplayName),
							timeOrNull(pm.Created), pm.Type, pm.AutoPurchaseStreamLicenses, timeOrNull(pm.StartDate),
							timeOrNull(pm.EndDate), textOrNull(pm.ProductPublicationName), textOrNull(pm.SalesOrderNumber),
							textOrNull(pm.Notes), projects, pm.IsActive, pm.TermsAndConditionsAccepted,
							jsonOrNull(pm.Spec), jsonOrNull(pm.Raw)}, nil
					}); err != nil {
					return err
				}
			}
			if ref.RateCards != nil {
				rows, err := rateCardRows(at, run, ref.RateCards)
				if err != nil {
					return err
				}
				if err := appendOrgRows(ref.OrgName, dc, "rate_card_price_snapshots", []string{
					"snapshot_at", "run_id", "payment_method_id", "product_publication_id",
					"product_publication_name", "is_private_offer", "currency", "family", "solution",
					"name", "display_name", "sku", "unit", "location_group", "price"}, len(rows),
					func(i int) ([]driver.Value, error) { return rows[i], nil }); err != nil {
					return err
				}
			}
			if ref.Projects != nil {
				if err := appendOrgRows(ref.OrgName, dc, "project_snapshots", []string{
					"snapshot_at", "run_id", "id", "name", "display_name", "is_active", "location_id",
					"location_name", "assigned_payment_method_id", "raw"}, len(ref.Projects),
					func(i int) ([]driver.Value, error) {
						p := ref.Projects[i]
						return []driver.Value{at, run, textOrNull(p.ID), p.Name, textOrNull(p.DisplayName), p.IsActive,
							textOrNull(p.LocationID), textOrNull(p.LocationName), textOrNull(p.AssignedPaymentMethodID),
							jsonOrNull(p.Raw)}, nil
					}); err != nil {
					return err
				}
			}
			if ref.Locations != nil {
				if err := appendOrgRows(ref.OrgName, dc, "location_snapshots", []string{
					"snapshot_at", "run_id", "id", "name", "display_name", "type", "cloud_name",
					"region_name", "raw"}, len(ref.Locations),
					func(i int) ([]driver.Value, error) {
						l := ref.Locations[i]
						return []driver.Value{at, run, textOrNull(l.ID), l.Name, textOrNull(l.DisplayName), textOrNull(l.Type),
							textOrNull(l.CloudName), textOrNull(l.RegionName), jsonOrNull(l.Raw)}, nil
					}); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("save snapshot %s: %w", at.Format(time.RFC3339), err)
	}
	return nil
}

// rateCardRows flattens rate cards into rows: one per price, then one per
// location price with location_group set. A location price without its own
// sku carries its price's sku, so joins on sku find it.
func rateCardRows(at time.Time, run duckdb.UUID, cards []tally.RateCard) ([][]driver.Value, error) {
	var rows [][]driver.Value
	for _, c := range cards {
		for _, e := range c.Entries {
			for _, p := range e.Prices {
				add := func(group, sku string, price tally.Decimal) error {
					v, err := price.Scaled(costScale)
					if err == nil && v.CmpAbs(maxCost) > 0 {
						err = fmt.Errorf("%s does not fit DECIMAL(%d, %d)", price, costWidth, costScale)
					}
					if err != nil {
						return fmt.Errorf("rate card of payment method %s, price %q (sku %q, location group %q): %w", c.PaymentMethodID, p.Name, sku, group, err)
					}
					rows = append(rows, []driver.Value{at, run, c.PaymentMethodID, textOrNull(c.ProductPublicationID),
						textOrNull(c.ProductPublicationName), c.IsPrivateOffer, textOrNull(c.Currency),
						textOrNull(e.Family), textOrNull(e.Solution), textOrNull(p.Name), textOrNull(p.DisplayName),
						textOrNull(sku), textOrNull(p.Unit), textOrNull(group),
						duckdb.Decimal{Width: costWidth, Scale: costScale, Value: v}})
					return nil
				}
				if err := add("", p.Sku, p.Price); err != nil {
					return nil, err
				}
				for _, lp := range p.LocationPrices {
					sku := lp.Sku
					if sku == "" {
						sku = p.Sku
					}
					if err := add(lp.LocationGroup, sku, lp.Price); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return rows, nil
}

// appendRows appends n rows, built by row, to table through DuckDB's
// appender.
// appendOrgRows is appendRows with the organization column set to org on
// every row.
func appendOrgRows(org string, dc any, table string, cols []string, n int, row func(i int) ([]driver.Value, error)) error {
	return appendRows(dc, table, append(append([]string(nil), cols...), "organization"), n, func(i int) ([]driver.Value, error) {
		vals, err := row(i)
		return append(vals, org), err
	})
}

func appendRows(dc any, table string, cols []string, n int, row func(i int) ([]driver.Value, error)) (err error) {
	conn, ok := dc.(driver.Conn)
	if !ok {
		return fmt.Errorf("append %s: unexpected driver connection %T", table, dc)
	}
	app, err := duckdb.NewAppenderWithColumns(conn, "", "", table, cols)
	if err != nil {
		return fmt.Errorf("append %s: %w", table, err)
	}
	defer func() {
		if cerr := app.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("append %s: %w", table, cerr)
		}
	}()
	for i := range n {
		vals, err := row(i)
		if err != nil {
			return fmt.Errorf("append %s: %w", table, err)
		}
		if err := app.AppendRow(vals...); err != nil {
			return fmt.Errorf("append %s row %d: %w", table, i+1, err)
		}
	}
	return nil
}

// jsonOrNull hands a raw JSON document to a JSON column: as
// json.RawMessage, because the driver marshals what it is given and would
// turn a []byte into a base64 string.
func jsonOrNull(raw json.RawMessage) driver.Value {
	if len(raw) == 0 {
		return nil
	}
	return raw
}
