-- rate_card_expected: what quantity costs at the rate card price
-- card_price, rounded to 12 decimals (DECIMAL(38,12): it must stay below
-- 10^14 in the card's currency); NULL where rate_card_problem gives a
-- problem. rate_card_variance and the workbook's Rate card check compare
-- the usage value with it.
CREATE OR REPLACE MACRO rate_card_expected(quantity, card_price, problem) AS
    CASE WHEN problem IS NULL THEN CAST(quantity * card_price AS DECIMAL(38, 12)) END;
