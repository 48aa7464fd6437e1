-- 0005: the workbooks the deliver step sent, so each goes to each target
-- once: a target that failed is tried again by the next run, one that
-- succeeded never again.
CREATE TABLE deliveries (
    target       VARCHAR NOT NULL, -- where it went: smtp:<host> or dir:<folder>
    path         VARCHAR NOT NULL, -- the workbook delivered
    sha256       VARCHAR NOT NULL, -- of the workbook's bytes as sent
    delivered_at TIMESTAMP NOT NULL, -- when, UTC
    run_id       UUID NOT NULL -- the run that delivered it (runs.id)
);
