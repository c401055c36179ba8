-- Several nodes on one database (issue 12; docs/ARCHITECTURE.md, "Nodes,
-- the leader and call ownership"). Every `switchboard serve` process is a
-- node: its row's lease_until is renewed every second or two, and a node
-- whose lease has lapsed is dead. leases holds named leases held by one
-- node at a time (the leader: one row, 'leader'), claimed and renewed with
-- one conditional upsert. calls.node_id is the node that holds a call's
-- line (a web call's websocket, a SIP dialog, a Twilio stream): live
-- control goes there, and the leader ends the live calls of a dead node
-- (node-lost).

-- +goose Up
CREATE TABLE nodes (
    id           TEXT PRIMARY KEY,
    addr         TEXT NOT NULL DEFAULT '',
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    lease_until  BIGINT NOT NULL,
    draining     BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX nodes_lease ON nodes (lease_until);
CREATE TABLE leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    lease_until BIGINT NOT NULL,
    -- term counts the holders: it grows by one each time another node takes the lease.
    term        BIGINT NOT NULL DEFAULT 1
);
ALTER TABLE calls ADD COLUMN node_id TEXT NOT NULL DEFAULT '';
CREATE INDEX calls_live_node ON calls (node_id) WHERE status IN (0, 1, 2);

-- +goose Down
DROP INDEX calls_live_node;
ALTER TABLE calls DROP COLUMN node_id;
DROP TABLE leases;
DROP INDEX nodes_lease;
DROP TABLE nodes;
