package focuscheck

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
)

// ClosedRows counts, in a FOCUS export's Cost and Usage rows, the rows of
// a closed month: Frozen as closed, LateCharges its Correction rows of late
// charges, Corrections every Correction row among those two kinds;
// Unnamed the rows of a payment method without a BillingAccountName;
// Compared the pairs of a closed month's row with another row of its
// payment method, project, meter and currency, and Differ those that carry
// the account, sku, service, region or labels otherwise.
type ClosedRows struct {
	Frozen, LateCharges, Corrections, Unnamed, Compared, Differ int64
}

// Export checks the FOCUS export of version ("1.2" or "1.3") that Tally
// wrote to folder dir: its violations (Violations for 1.2, ExportViolations
// for 1.3) and its closed month's rows.
func Export(ctx context.Context, db *sql.DB, dir, version string) ([]string, ClosedRows, error) {
	var c ClosedRows
	cu := `read_parquet('` + strings.ReplaceAll(filepath.Join(dir, "focus", "*", "*.parquet"), "'", "''") + `', hive_partitioning = true)`
	var v []string
	var err error
	account := "BillingAccountId"
	if version == "1.3" {
		v, err = ExportViolations(ctx, db, dir)
		account = "x_PaymentMethodId"
	} else {
		v, err = Violations(ctx, db, cu)
	}
	if err != nil {
		return nil, c, err
	}
	pair := `SELECT count(*) FROM f c JOIN f o ON NOT o.closed AND o.` + account + ` IS NOT DISTINCT FROM c.` + account + ` AND o.SubAccountId IS NOT DISTINCT FROM c.SubAccountId AND o.SkuMeter = c.SkuMeter AND o.BillingCurrency = c.BillingCurrency
        WHERE c.closed`
	err = db.QueryRowContext(ctx, `WITH f AS (SELECT *, ChargeDescription LIKE '%(as closed %' OR ChargeDescription LIKE '%(late charges for closed %' AS closed FROM `+cu+`)
SELECT count(*) FILTER (WHERE ChargeDescription LIKE '%(as closed %'),
       count(*) FILTER (WHERE ChargeDescription LIKE '%(late charges for closed %'),
       count(*) FILTER (WHERE closed AND ChargeClass = 'Correction'),
       count(*) FILTER (WHERE BillingAccountName IS NULL AND nullif(`+account+`, 'unassigned') IS NOT NULL),
       (`+pair+`),
       (`+pair+` AND (c.BillingAccountName, c.SkuId, c.ServiceName, c.ServiceCategory, c.SubAccountName, c.RegionId, c.RegionName, c.x_Family, c.x_Solution, c.x_Unit)
              IS DISTINCT FROM (o.BillingAccountName, o.SkuId, o.ServiceName, o.ServiceCategory, o.SubAccountName, o.RegionId, o.RegionName, o.x_Family, o.x_Solution, o.x_Unit))
FROM f`).Scan(&c.Frozen, &c.LateCharges, &c.Corrections, &c.Unnamed, &c.Compared, &c.Differ)
	return v, c, err
}
