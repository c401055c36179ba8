-- Inbound routing (docs/ARCHITECTURE.md, "Inbound routing"): an
-- organization's assistantRequest endpoint, its deadline and its signing
-- secret (kept to sign with, as webhook secrets are); and on each call how
-- it was routed (JSON, '' before this or for calls that are not inbound).

-- +goose Up
CREATE TABLE assistant_requests (
    org_id     TEXT PRIMARY KEY,
    url        TEXT NOT NULL,
    timeout_ms BIGINT NOT NULL,
    secret     TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
ALTER TABLE calls ADD COLUMN routing TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE calls DROP COLUMN routing;
DROP TABLE assistant_requests;
