-- is_effective: whether a row paid as paid_as (usage_rows' paid_as,
-- paid_as_of's) costs its buyer anything once what licenses cover is
-- taken out: every way but a license. What FOCUS calls EffectiveCost. The
-- one place this rule lives: the close figures and adjustments call this.
CREATE OR REPLACE MACRO is_effective(paid_as) AS
    paid_as <> 'license';
