-- Core schema. Portable between SQLite and PostgreSQL: times are BIGINT
-- Unix milliseconds (UTC), JSON is TEXT, "unset" is 0 or '' rather than NULL
-- so one set of queries serves both databases.

-- +goose Up
CREATE TABLE orgs (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs(id),
    name         TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    hash         TEXT NOT NULL,
    last4        TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT NOT NULL DEFAULT 0,
    revoked_at   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_org ON api_keys (org_id, created_at);

CREATE TABLE assistants (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    name       TEXT NOT NULL,
    config     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX assistants_org ON assistants (org_id, created_at, id);

CREATE TABLE purchases (
    id                    TEXT PRIMARY KEY,
    org_id                TEXT NOT NULL,
    number                TEXT NOT NULL,
    provider              TEXT NOT NULL,
    inbound_assistant_id  TEXT NOT NULL DEFAULT '',
    outbound_assistant_id TEXT NOT NULL DEFAULT '',
    message               TEXT NOT NULL DEFAULT '',
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL,
    released_at           BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX purchases_held_number ON purchases (provider, number) WHERE released_at = 0;
CREATE INDEX purchases_org ON purchases (org_id, created_at, id);

CREATE TABLE contacts (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    purchase_id  TEXT NOT NULL,
    name         TEXT NOT NULL,
    phone_number TEXT NOT NULL,
    timezone     TEXT NOT NULL,
    metadata     TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    seq          BIGINT NOT NULL
);
CREATE UNIQUE INDEX contacts_number ON contacts (purchase_id, phone_number);
CREATE INDEX contacts_list ON contacts (purchase_id, seq);

CREATE TABLE calls (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    type         TEXT NOT NULL,
    status       INTEGER NOT NULL,
    assistant_id TEXT NOT NULL,
    purchase_id  TEXT NOT NULL DEFAULT '',
    from_number  TEXT NOT NULL DEFAULT '',
    to_number    TEXT NOT NULL DEFAULT '',
    provider     TEXT NOT NULL DEFAULT '',
    attempt_id   TEXT NOT NULL DEFAULT '',
    outcome      TEXT NOT NULL DEFAULT '',
    ended_reason TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    started_at   BIGINT NOT NULL DEFAULT 0,
    ended_at     BIGINT NOT NULL DEFAULT 0
);
-- Covers the listing's filters and order, so paging skips rows in the
-- index alone (see ListCalls) without touching the table.
CREATE INDEX calls_list ON calls (org_id, created_at, id, type, status);
CREATE INDEX calls_live ON calls (status, updated_at);

-- Totals per (org, type, status), kept in the same transaction as every
-- call insert and change, so a listing's total is not a COUNT(*) over
-- millions of rows. changes counts updates, so that the rows also version
-- the organization's calls (the listing page cache).
CREATE TABLE call_counts (
    org_id  TEXT NOT NULL,
    type    TEXT NOT NULL,
    status  INTEGER NOT NULL,
    n       BIGINT NOT NULL,
    changes BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, type, status)
);

CREATE TABLE schedules (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    name        TEXT NOT NULL,
    purchase_id TEXT NOT NULL,
    message     TEXT NOT NULL,
    timezone    TEXT NOT NULL,
    dates       TEXT NOT NULL,
    contact_ids TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    canceled_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX schedules_org ON schedules (org_id, created_at, id);

CREATE TABLE attempts (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    schedule_id TEXT NOT NULL,
    contact_id  TEXT NOT NULL,
    due_at      BIGINT NOT NULL,
    state       TEXT NOT NULL,
    call_id     TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    enqueued    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX attempts_schedule ON attempts (schedule_id, due_at, id);
CREATE INDEX attempts_due ON attempts (enqueued, state, due_at);
CREATE INDEX attempts_purchase_pending ON attempts (state, schedule_id);

CREATE TABLE idempotency_keys (
    org_id       TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status       INTEGER NOT NULL DEFAULT 0,
    body         TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (org_id, key)
);
CREATE INDEX idempotency_created ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE attempts;
DROP TABLE schedules;
DROP TABLE call_counts;
DROP TABLE calls;
DROP TABLE contacts;
DROP TABLE purchases;
DROP TABLE assistants;
DROP TABLE api_keys;
DROP TABLE orgs;
