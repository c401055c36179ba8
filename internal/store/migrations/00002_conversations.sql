-- Conversations: transcript turns, post-call analyses, webhook endpoints,
-- the webhook outbox and its delivery log.

-- +goose Up
ALTER TABLE calls ADD COLUMN result TEXT NOT NULL DEFAULT '';

CREATE TABLE turns (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    role        TEXT NOT NULL,
    text        TEXT NOT NULL,
    started_at  BIGINT NOT NULL,
    ended_at    BIGINT NOT NULL,
    interrupted BOOLEAN NOT NULL DEFAULT FALSE,
    latency_us  BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX turns_call_seq ON turns (call_id, seq);

-- One row per ended call: written 'pending' in the transaction that ends
-- the call, claimed by a worker with a lease, then 'ready' or 'failed'.
CREATE TABLE analyses (
    call_id      TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    state        TEXT NOT NULL,
    result       TEXT NOT NULL DEFAULT '',
    error        TEXT NOT NULL DEFAULT '',
    attempts     INTEGER NOT NULL DEFAULT 0,
    locked_until BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX analyses_pending ON analyses (state, locked_until);

CREATE TABLE webhooks (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    url         TEXT NOT NULL,
    events      TEXT NOT NULL,
    secrets     TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    deleted_at  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX webhooks_org ON webhooks (org_id, created_at, id);

-- One row per (event, endpoint), written in the same transaction as the
-- change it announces; delivered with retries by the webhook worker.
CREATE TABLE webhook_outbox (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    webhook_id    TEXT NOT NULL,
    type          TEXT NOT NULL,
    payload       TEXT NOT NULL,
    state         TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_at       BIGINT NOT NULL,
    locked_until  BIGINT NOT NULL DEFAULT 0,
    last_status   INTEGER NOT NULL DEFAULT 0,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (state, next_at);
CREATE INDEX webhook_outbox_endpoint ON webhook_outbox (webhook_id, created_at, id);

CREATE TABLE webhook_deliveries (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    webhook_id  TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    status      INTEGER NOT NULL,
    response    TEXT NOT NULL,
    error       TEXT NOT NULL,
    duration_ms BIGINT NOT NULL,
    at          BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (webhook_id, at, id);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhook_outbox;
DROP TABLE webhooks;
DROP TABLE analyses;
DROP TABLE turns;
ALTER TABLE calls DROP COLUMN result;
