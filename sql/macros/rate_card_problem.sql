-- rate_card_problem: why a meter's usage, in currency, cannot be valued at
-- its rate card price, given the best match rate_card_matches gives it
-- (match_rule, card_price and card_currency its rule, price and currency;
-- all NULL without a match): 'no price' (no rule matches the meter),
-- 'several prices' (the best rule matches prices or currencies that
-- differ), 'currency differs' (the card's currency is not the usage's);
-- NULL when it can be. rate_card_variance and the workbook's Rate card
-- check judge their meters with it.
CREATE OR REPLACE MACRO rate_card_problem(match_rule, card_price, card_currency, currency) AS
    CASE
        WHEN match_rule IS NULL THEN 'no price'
        WHEN card_price IS NULL THEN 'several prices'
        WHEN card_currency IS NOT NULL AND card_currency <> currency THEN 'currency differs'
    END;
