-- 0019: usage_changes: the (organization, month) partitions of usage that
-- each load changed, so that the Iceberg export (export.CommitLake)
-- commits exactly those without reading the history to find them. A load
-- adds the months of the rows it replaced and of the rows it wrote, and
-- stamps them once it has committed; an export commits the partitions
-- changed since the time its last commit records, and those not yet
-- stamped.
CREATE TABLE usage_changes (
    organization VARCHAR NOT NULL, -- the organization whose usage rows changed (usage.organization)
    month        DATE NOT NULL, -- the month of their date, its first day
    changed_at   TIMESTAMP -- when the load that changed them had committed, UTC; NULL until it is stamped
);
