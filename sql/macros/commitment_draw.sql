-- commitment_draw: what a usage row of commitment category (as
-- commitment_category gives it) draws from its commitment: its quantity
-- for a Usage commitment (units), its cost for a Spend one (money); NULL
-- when it draws on none. focus's CommitmentDiscountQuantity (which FOCUS
-- 1.3's Contract Commitment sums as x_AppliedQuantity) and the workbook's
-- Commitments sheet both take it, so the two never disagree.
CREATE OR REPLACE MACRO commitment_draw(category, cost, quantity) AS
    CASE category
        WHEN 'Usage' THEN CAST(quantity AS DECIMAL(38, 12))
        WHEN 'Spend' THEN CAST(cost AS DECIMAL(38, 12))
    END;
