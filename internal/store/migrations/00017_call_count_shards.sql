-- call_counts rows are split into shards (docs/ARCHITECTURE.md, "Call
-- totals"): every call's insert and change adds to its organization's
-- (type, status) total in the same transaction, and on PostgreSQL the
-- transactions of an organization's concurrent calls queued on that one
-- row's lock (a burst of scheduled calls measured 10 dials a second). A
-- call now adds to the row of its shard (a hash of its id); totals and
-- the listing version are sums over the shards. SQLite writes shard 0
-- only (one writer: nothing to spread).

-- +goose Up
CREATE TABLE call_counts_sharded (
    org_id  TEXT NOT NULL,
    type    TEXT NOT NULL,
    status  INTEGER NOT NULL,
    shard   INTEGER NOT NULL,
    n       BIGINT NOT NULL,
    changes BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, type, status, shard)
);
INSERT INTO call_counts_sharded (org_id, type, status, shard, n, changes)
    SELECT org_id, type, status, 0, n, changes FROM call_counts;
DROP TABLE call_counts;
ALTER TABLE call_counts_sharded RENAME TO call_counts;

-- +goose Down
CREATE TABLE call_counts_whole (
    org_id  TEXT NOT NULL,
    type    TEXT NOT NULL,
    status  INTEGER NOT NULL,
    n       BIGINT NOT NULL,
    changes BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, type, status)
);
INSERT INTO call_counts_whole (org_id, type, status, n, changes)
    SELECT org_id, type, status, SUM(n), SUM(changes) FROM call_counts GROUP BY org_id, type, status;
DROP TABLE call_counts;
ALTER TABLE call_counts_whole RENAME TO call_counts;
