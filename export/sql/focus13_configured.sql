-- tally_focus_configured: the config's commitments (commitments:), one row
-- each, as setFOCUS13Commitments inserts them: what was bought under an
-- entitlement, which the interface never states. The Contract Commitment
-- query (focus13_contract_commitment.sql) takes a commitment's amount and
-- period from the row naming its entitlement for the day of its last
-- charge; the config refuses two rows of one entitlement that overlap.
CREATE OR REPLACE TEMP TABLE tally_focus_configured (
    entitlement VARCHAR NOT NULL,
    path VARCHAR NOT NULL,      -- where the config names it: commitments[0]
    name VARCHAR,
    category VARCHAR NOT NULL,  -- Spend (type spend) or Usage (type usage)
    amount DECIMAL(38, 12),     -- Spend: in currency
    currency VARCHAR,
    quantity DECIMAL(38, 12),   -- Usage: in unit
    unit VARCHAR,
    first_day DATE NOT NULL,
    last_day DATE NOT NULL      -- inclusive, as the config states it
)
