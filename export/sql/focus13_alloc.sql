-- tally_focus_alloc: the shared charges of the export's basis ($1)
-- (cost_allocation's rows a rule split), keyed by tally_focus_alloc_key,
-- each to its receivers' parts in order: the first takes the rounding
-- remainder (the largest ratio, then the cost centre by name, as
-- cost_allocation does), and its ratio is 1 less the others' so the ratios
-- of a charge sum to 1 exactly (cost_allocation truncates them to 12
-- decimals). A driver part carries the receiver's quantity of the driver
-- meter that month and its unit. See focus13Lookups.
SET VARIABLE tally_focus_alloc = (
WITH ca AS (
    SELECT *,
           row_number() OVER charge AS place,
           sum(ratio) OVER (PARTITION BY organization, month, currency, origin_project, origin_meter, origin_family, origin_payment_method, paid_as) AS ratios
    FROM cost_allocation
    WHERE basis = $1 AND rule IS NOT NULL
    WINDOW charge AS (PARTITION BY organization, month, currency, origin_project, origin_meter, origin_family, origin_payment_method, paid_as
                      ORDER BY ratio DESC, cost_centre)
),
closes AS (
    -- the close whose cost centres a closed month reads, as cost_allocation
    SELECT organization, month, id
    FROM closed_months
    WHERE basis = $1
    QUALIFY row_number() OVER (PARTITION BY organization, month ORDER BY acted_at DESC, id DESC) = 1
),
drivers AS (
    SELECT DISTINCT ca.organization, ca.month, ca.cost_centre, ca.rule_version, r.driver_meter
    FROM ca
    LEFT JOIN closes c ON c.organization = ca.organization AND c.month = ca.month
    JOIN allocation_rules r ON r.version = ca.rule_version AND r.close_id IS NOT DISTINCT FROM c.id
    WHERE ca.method = 'driver'
),
driven AS (
    SELECT d.organization, d.month, d.cost_centre, d.rule_version,
           sum(ac.quantity) AS quantity,
           (SELECT min(nullif(unit, '')) FROM usage WHERE meter_name = d.driver_meter) AS unit
    FROM drivers d
    LEFT JOIN closes c ON c.organization = d.organization AND c.month = d.month
    JOIN allocation_cost_centres cc ON cc.cost_centre = d.cost_centre AND cc.close_id IS NOT DISTINCT FROM c.id
    JOIN allocation_charges ac ON ac.organization = d.organization AND ac.basis = $1 AND ac.month = d.month
                              AND ac.project = cc.project AND ac.meter_name = d.driver_meter
    GROUP BY ALL
)
SELECT map_from_entries(coalesce(list((key, parts)), []))
FROM (
    SELECT tally_focus_alloc_key(ca.organization, strftime(ca.month, '%Y-%m'), ca.currency, ca.origin_project, ca.origin_meter,
                                 ca.origin_family, ca.origin_payment_method, ca.paid_as) AS key,
           list({'cost_centre': ca.cost_centre,
                 'ratio': CAST(CASE WHEN ca.place = 1 THEN 1 - (ca.ratios - ca.ratio) ELSE ca.ratio END AS DECIMAL(38, 12)),
                 'method': ca.method, 'version': ca.rule_version,
                 'quantity': CAST(d.quantity AS DECIMAL(38, 12)), 'unit': d.unit} ORDER BY ca.place) AS parts
    FROM ca
    LEFT JOIN driven d ON d.organization = ca.organization AND d.month = ca.month AND d.cost_centre = ca.cost_centre
                      AND d.rule_version = ca.rule_version AND ca.method = 'driver'
    GROUP BY ALL
))
