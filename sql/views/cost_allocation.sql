-- cost_allocation: chargeback, line by line: one row per origin charge
-- (allocation_charges: month, currency, project, meter, family, payment
-- method, paid-as) and cost centre receiving part of it. A charge no rule
-- shares goes whole to the cost centre owning its project (method direct),
-- or to Unallocated when no cost centre owns it (method unallocated): the
-- amounts of a month and currency add up to its total. Only months with
-- cost centres (and closed months, see below) have rows.
--
-- Rules (allocation_rules): of each rule, the entry with the latest
-- from_month not after the month is in force; of the rules in force, the
-- first (priority) whose selectors all match a charge shares it among its
-- receivers, by weight: even 1 each; fixed the percent; proportional the
-- receiver's own usage value in the month and currency (its projects'
-- charges no rule shares, negatives counted as 0); driver the receiver's
-- quantity of the driver meter in the month (its projects' rows). A driver
-- nobody used falls back to proportional, and proportional with no own
-- usage to even; method says what was applied and note why.
--
-- Exact to the last stored digit (10^-12): in units of 10^-12, each part is
-- charge × weight ÷ total weight, truncated towards zero, and what the
-- truncation leaves goes to the largest weight (then the first receiver by
-- name), so the parts of a charge add up to it exactly.
--
-- A closed month reads the cost centres and rules its close froze (those
-- rows of the tables carry the close's id); open months read those of the
-- latest run's config (close_id NULL). A month closed without chargeback
-- froze none: once the store has cost centres (configured or frozen by
-- any close), its charges are all Unallocated, whatever the config says
-- since; reopening and closing it again charges it back.
CREATE OR REPLACE VIEW cost_allocation AS
WITH sets AS (
    SELECT p.period, p.month, c.id AS close_id
    FROM (SELECT DISTINCT period, organization, basis, month FROM allocation_charges) p
    LEFT JOIN (
        SELECT organization, month, basis, id
        FROM closed_months
        QUALIFY row_number() OVER (PARTITION BY organization, month, basis ORDER BY acted_at DESC, id DESC) = 1
    ) c ON c.organization = p.organization AND c.month = p.month AND c.basis = p.basis
),
centres AS (
    SELECT s.period, a.cost_centre, a.project
    FROM sets s
    JOIN allocation_cost_centres a ON a.close_id IS NOT DISTINCT FROM s.close_id
),
rules AS (
    SELECT s.period, r.rule, r.version, r.priority, r.projects, r.meters, r.families, r.payment_method,
           r.method, r.driver_meter, r.receiver, r.percent
    FROM sets s
    JOIN allocation_rules r ON r.close_id IS NOT DISTINCT FROM s.close_id AND r.from_month <= s.month
    QUALIFY rank() OVER (PARTITION BY s.period, r.rule ORDER BY r.from_month DESC) = 1
),
heads AS (
    SELECT DISTINCT period, rule, version, priority, projects, meters, families, payment_method, method, driver_meter
    FROM rules
),
charges AS (
    SELECT c.*, o.cost_centre AS owner
    FROM allocation_charges c
    JOIN sets s ON s.period = c.period
    LEFT JOIN centres o ON o.period = c.period AND o.project = c.project
    WHERE c.period IN (SELECT period FROM centres)
       OR (s.close_id IS NOT NULL AND EXISTS (SELECT 1 FROM allocation_cost_centres))
),
matched AS (
    SELECT c.*, h.rule, h.version, h.method AS rule_method, h.driver_meter
    FROM charges c
    LEFT JOIN heads h
      ON h.period = c.period
     AND (h.projects IS NULL OR list_contains(h.projects, c.project))
     AND (h.meters IS NULL OR list_contains(h.meters, c.meter_name))
     AND (h.families IS NULL OR list_contains(h.families, c.family))
     AND (h.payment_method IS NULL OR h.payment_method = c.payment_method)
    QUALIFY row_number() OVER (PARTITION BY c.period, c.currency, c.project, c.meter_name, c.family, c.payment_method, c.paid_as
                               ORDER BY h.priority NULLS LAST) = 1
),
own AS (
    SELECT period, currency, owner AS cost_centre, sum(cost) AS cost
    FROM matched
    WHERE rule IS NULL AND owner IS NOT NULL
    GROUP BY ALL
),
driven AS (
    SELECT period, owner AS cost_centre, meter_name, sum(quantity) AS quantity
    FROM matched
    WHERE owner IS NOT NULL
    GROUP BY ALL
),
parts AS (
    SELECT m.*, r.receiver, r.percent,
           greatest(coalesce(o.cost, 0), 0) AS own_cost,
           greatest(coalesce(q.quantity, 0), 0) AS own_quantity
    FROM matched m
    JOIN rules r ON r.period = m.period AND r.version = m.version
    LEFT JOIN own o ON o.period = m.period AND o.currency = m.currency AND o.cost_centre = r.receiver
    LEFT JOIN driven q ON q.period = m.period AND q.cost_centre = r.receiver AND q.meter_name = m.driver_meter
),
methods AS (
    SELECT *,
           CASE
               WHEN rule_method = 'driver' AND sum(own_quantity) OVER charge > 0 THEN 'driver'
               WHEN rule_method IN ('driver', 'proportional') AND sum(own_cost) OVER charge > 0 THEN 'proportional'
               WHEN rule_method IN ('driver', 'proportional') THEN 'even'
               ELSE rule_method
           END AS method
    FROM parts
    WINDOW charge AS (PARTITION BY period, currency, project, meter_name, family, payment_method, paid_as)
),
weighed AS (
    SELECT *,
           CASE method
               WHEN 'even' THEN CAST(1 AS HUGEINT)
               WHEN 'fixed' THEN CAST(percent * 1000000 AS HUGEINT)
               WHEN 'proportional' THEN CAST(own_cost * 1000000000000 AS HUGEINT)
               WHEN 'driver' THEN CAST(own_quantity * 1000000000000 AS HUGEINT)
           END AS weight,
           CAST(cost * 1000000000000 AS HUGEINT) AS cost_units
    FROM methods
),
split AS (
    SELECT *,
           sum(weight) OVER charge AS total_weight,
           cost_units * weight // sum(weight) OVER charge AS part_units,
           row_number() OVER (PARTITION BY period, currency, project, meter_name, family, payment_method, paid_as
                              ORDER BY weight DESC, receiver) AS place
    FROM weighed
    WINDOW charge AS (PARTITION BY period, currency, project, meter_name, family, payment_method, paid_as)
),
exact AS (
    SELECT *,
           part_units + CASE WHEN place = 1 THEN cost_units - sum(part_units) OVER charge ELSE 0 END AS units
    FROM split
    WINDOW charge AS (PARTITION BY period, currency, project, meter_name, family, payment_method, paid_as)
)
SELECT period.organization AS organization, -- the organization of the origin charge; each organization's shared costs are split by its own usage
       period.basis AS basis, -- usage or reported
       period.month AS month, -- first day of the month, UTC
       currency, -- ISO 4217 code; amounts are never added across currencies
       receiver AS cost_centre, -- the cost centre receiving the amount, or Unallocated
       project AS origin_project, -- the project of the origin charge
       meter_name AS origin_meter, -- the meter of the origin charge
       family AS origin_family, -- the family of the origin charge
       payment_method AS origin_payment_method, -- the payment method id of the origin charge
       paid_as, -- how the origin charge is paid: direct, balance, license or other (usage_rows)
       method, -- the method applied: direct, unallocated, even, fixed, proportional or driver
       CAST(CAST((weight * 1000000000000) // total_weight AS DECIMAL(38, 0)) * CAST(0.000000000001 AS DECIMAL(38, 12)) AS DECIMAL(38, 12)) AS ratio, -- the receiver's weight over the total, to 12 decimals
       CAST(CAST(units AS DECIMAL(38, 0)) * CAST(0.000000000001 AS DECIMAL(38, 12)) AS DECIMAL(38, 12)) AS amount, -- the part received, exact; a charge's parts add up to it
       cost AS origin_cost, -- the whole origin charge
       rule, -- the rule that shared it; NULL for direct and unallocated
       version AS rule_version, -- the rule's entry: rule@YYYY-MM
       CASE
           WHEN method = rule_method THEN NULL
           WHEN rule_method = 'driver' AND method = 'proportional' THEN 'no receiver used driver meter ' || driver_meter || ' in ' || strftime(period.month, '%Y-%m') || '; split proportional to own usage value instead'
           WHEN rule_method = 'driver' THEN 'no receiver used driver meter ' || driver_meter || ' nor had own usage value in ' || currency || ' in ' || strftime(period.month, '%Y-%m') || '; split evenly instead'
           ELSE 'no receiver had own usage value in ' || currency || ' in ' || strftime(period.month, '%Y-%m') || '; split evenly instead'
       END AS note -- what fell back and how, when the rule's method could not apply
FROM exact
UNION ALL
SELECT period.organization,
       period.basis,
       period.month,
       currency,
       coalesce(owner, 'Unallocated'),
       project,
       meter_name,
       family,
       payment_method,
       paid_as,
       CASE WHEN owner IS NULL THEN 'unallocated' ELSE 'direct' END,
       CAST(1 AS DECIMAL(38, 12)),
       cost,
       cost,
       NULL,
       NULL,
       NULL
FROM matched
WHERE rule IS NULL;
