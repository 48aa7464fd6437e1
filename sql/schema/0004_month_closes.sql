-- 0004: closing a month. A close freezes a month's figures for finance:
-- the final workbook is written once and never again, and late charges
-- loaded afterwards show as adjustments (closed_month_adjustments) rather
-- than restating the closed month. Rows are only ever added: a reopen is
-- its own row, so the history of a month's closes is never lost.

-- month_closes: one row per close or reopen of a month; a month is closed
-- while its latest row for the basis and granularity says close.
CREATE TABLE month_closes (
    id             UUID PRIMARY KEY, -- the run that closed or reopened it (runs.id)
    month          DATE NOT NULL, -- first day of the month, UTC
    basis          VARCHAR NOT NULL, -- usage or reported: which date put a row in the month
    granularity    VARCHAR NOT NULL, -- the usage rows closed: the config's usage.granularity
    action         VARCHAR NOT NULL, -- close or reopen
    acted_at       TIMESTAMP NOT NULL, -- when it was closed or reopened, UTC
    who            VARCHAR NOT NULL, -- the user ($USER) who ran tally close, or the job whose close step did it
    reason         VARCHAR, -- why, as given; required to reopen
    rows           BIGINT, -- fingerprint: usage rows in the month at close; NULL on a reopen
    cost           MAP(VARCHAR, DECIMAL(38, 12)), -- fingerprint: usage value per currency at close, exact; NULL on a reopen
    content_hash   VARCHAR, -- fingerprint: sha256 over the month's rows as the workbook reads them (run id and fetch time left out); NULL on a reopen
    final_workbook VARCHAR -- the final workbook written at close; NULL on a reopen
);

-- month_close_figures: a closed month's usage value per project, meter,
-- payment method and currency as it stood at close: what
-- closed_month_adjustments compares today's figures with, and what the
-- focus view shows for the closed month. The payment method is kept (finer
-- than finance asks) because FOCUS needs a billing account on every row.
CREATE TABLE month_close_figures (
    close_id       UUID NOT NULL, -- the close (month_closes.id)
    project        VARCHAR, -- project name, as usage.project
    meter_name     VARCHAR NOT NULL, -- the meter, as usage.meter_name
    payment_method VARCHAR, -- payment method id, as usage.payment_method
    currency       VARCHAR NOT NULL, -- ISO 4217 code; never added to another currency
    rows           BIGINT NOT NULL, -- usage rows behind the figure at close
    cost           DECIMAL(38, 12) NOT NULL, -- usage value at close, exact (FOCUS x_Cost, ListCost)
    billed         DECIMAL(38, 12) NOT NULL, -- of which invoiced: not covered by a license nor drawn from a prepaid balance (FOCUS BilledCost)
    effective      DECIMAL(38, 12) NOT NULL, -- of which not covered by a license (FOCUS EffectiveCost)
    quantity       DECIMAL(38, 12) NOT NULL, -- units accrued at close (FOCUS ConsumedQuantity, PricingQuantity)
    unit           VARCHAR -- the usage unit, as usage.unit
);
