-- Per-key rate limits shared by the nodes on one PostgreSQL (issue 12).
-- Each node keeps its own token bucket per key and, every sync interval,
-- adds what it admitted to the key's row here and reads back the rows
-- that changed lately: what the other nodes admitted is taken from its
-- own bucket (internal/httpapi/ratelimit.go). spent only grows; a row
-- unchanged for an hour is purged. SQLite (one node) never writes here.

-- +goose Up
CREATE TABLE rate_limits (
    key_id     TEXT PRIMARY KEY,
    spent      BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX rate_limits_updated ON rate_limits (updated_at);

-- +goose Down
DROP TABLE rate_limits;
