-- 0020: lake_loads: for usage.source lake (a group job reading every
-- shard's usage from the lake's Iceberg table), the (organization, month)
-- partitions loaded and the data files each was loaded from, so that a
-- run loads again exactly the partitions whose files changed since (a
-- shard's export replaced them, or dropped them), never the whole history.
CREATE TABLE lake_loads (
    organization VARCHAR NOT NULL, -- the organization (usage.organization)
    month        DATE NOT NULL, -- the partition's month, its first day
    files        VARCHAR NOT NULL, -- the partition's data files in the snapshot it was loaded from, sorted, one a line
    snapshot_id  BIGINT NOT NULL, -- that snapshot of the lake's usage table
    loaded_at    TIMESTAMP NOT NULL, -- when the load committed, UTC
    PRIMARY KEY (organization, month)
);
