-- 0012: chargeback. The config's allocation (cost centres, and the rules
-- that share costs across them) is kept here, so that the analysts' views
-- cost_allocation and cost_centre_monthly_cost compute from the same rules
-- as the workbook. Every run that writes replaces the rows whose close_id
-- is NULL with its config's; a close copies the cost centres and the rules
-- in force for its month under its own id, so a closed month keeps the
-- rules it closed under, whatever the config says later.

-- allocation_cost_centres: one row per cost centre and project it owns.
CREATE TABLE allocation_cost_centres (
    close_id    UUID, -- NULL: the config of the latest run that wrote, for open months; else the close (month_closes.id) that froze it
    position    INTEGER NOT NULL, -- the cost centre's place in allocation.cost_centres
    cost_centre VARCHAR NOT NULL, -- the cost centre's name
    owner       VARCHAR, -- its owner's e-mail address, who receives its statement; NULL for none
    project     VARCHAR -- a project it owns, whose cost is its direct cost; NULL for a cost centre that owns none
);

-- allocation_rules: one row per rule entry and receiver.
CREATE TABLE allocation_rules (
    close_id       UUID, -- as allocation_cost_centres.close_id
    rule           VARCHAR NOT NULL, -- the rule's name
    version        VARCHAR NOT NULL, -- the entry: rule@YYYY-MM, the month it takes effect
    priority       INTEGER NOT NULL, -- the entry's place in allocation.rules: of the rules in force, the first that selects a charge takes it
    from_month     DATE NOT NULL, -- first month the entry applies to; a later entry of the same rule replaces it from that entry's from_month
    projects       VARCHAR[], -- selects charges of these projects; NULL: of any project
    meters         VARCHAR[], -- of these meters; NULL: of any meter
    families       VARCHAR[], -- of these families; NULL: of any family
    payment_method VARCHAR, -- charged to this payment method id; NULL: to any
    method         VARCHAR NOT NULL, -- even, fixed, proportional or driver
    driver_meter   VARCHAR, -- method driver: the meter whose quantity in the month weighs the receivers; NULL otherwise
    receiver       VARCHAR NOT NULL, -- a cost centre that receives a part of what the rule shares
    percent        DECIMAL(9, 6) -- method fixed: the receiver's percent (an entry's add up to 100); NULL otherwise
);

ALTER TABLE month_closes ADD COLUMN allocation_hash VARCHAR; -- fingerprint: sha256 of the cost centres and the rules in force for the month at close (frozen in allocation_rules under this close); NULL when closed without chargeback

-- month_close_statements: the chargeback statements a close wrote, one per
-- cost centre, final like its workbook: written once, recorded with the
-- close, never rewritten; the deliver step mails each to its owner once.
CREATE TABLE month_close_statements (
    close_id    UUID NOT NULL, -- the close (month_closes.id)
    cost_centre VARCHAR NOT NULL, -- whose statement it is
    owner       VARCHAR, -- the cost centre's owner at close, who receives it; NULL for none
    path        VARCHAR NOT NULL, -- the file: tally-chargeback-YYYY-MM-final[-N]-<cost centre>.xlsx beside the final workbook
    sha256      VARCHAR NOT NULL -- sha256 of the file's bytes as written
);
