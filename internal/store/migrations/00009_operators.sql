-- Dashboard operators (issue 11): people who sign in to /ui, each in one
-- organization, and their sessions. An email is one account across all
-- organizations (a sign-in finds its organization by it), stored
-- normalized (lower case). A session row is keyed by the SHA-256 of the
-- cookie's token, never the token; it ends at idle_until unless used again
-- and at expires_at regardless. Deleting an operator deletes its sessions.

-- +goose Up
CREATE TABLE operators (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgs(id),
    email         TEXT NOT NULL,
    name          TEXT NOT NULL DEFAULT '',
    password_hash TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE UNIQUE INDEX operators_email ON operators (email);
CREATE INDEX operators_org ON operators (org_id, created_at, id);

CREATE TABLE operator_sessions (
    token_hash  TEXT PRIMARY KEY,
    operator_id TEXT NOT NULL REFERENCES operators(id) ON DELETE CASCADE,
    org_id      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    idle_until  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX operator_sessions_operator ON operator_sessions (operator_id);
CREATE INDEX operator_sessions_expiry ON operator_sessions (idle_until);

-- +goose Down
DROP TABLE operator_sessions;
DROP TABLE operators;
