-- Phone connections (issue 9): an organization's own SIP trunks, the
-- numbers on them, purchases that remember their connection, and calls
-- that know their direction and the provider's id.
--
-- phone_connections keeps a connection as it was created (connections are
-- not edited): its numbers and inbound sources as JSON arrays, and its
-- digest password sealed with the server's secret key (AES-256-GCM,
-- internal/secret), base64, '' when none. phone_connection_numbers holds
-- each number once per provider, whoever's connection it is on, so an
-- inbound call finds one organization; a purchase on a connection locks
-- its number row against the connection's deletion.

-- +goose Up
CREATE TABLE phone_connections (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL,
    provider        TEXT NOT NULL,
    name            TEXT NOT NULL,
    address         TEXT NOT NULL,
    transport       TEXT NOT NULL,
    username        TEXT NOT NULL DEFAULT '',
    password_sealed TEXT NOT NULL DEFAULT '',
    numbers         TEXT NOT NULL,
    inbound_sources TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX phone_connections_org ON phone_connections (org_id, created_at, id);

CREATE TABLE phone_connection_numbers (
    provider      TEXT NOT NULL,
    number        TEXT NOT NULL,
    connection_id TEXT NOT NULL,
    org_id        TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    PRIMARY KEY (provider, number)
);
CREATE INDEX phone_connection_numbers_connection ON phone_connection_numbers (connection_id, seq);
CREATE INDEX phone_connection_numbers_org ON phone_connection_numbers (org_id, provider);

ALTER TABLE purchases ADD COLUMN connection_id TEXT NOT NULL DEFAULT '';
CREATE INDEX purchases_connection ON purchases (connection_id) WHERE released_at = 0;

-- Every phone call so far was placed by the service: outbound. Web calls
-- have no direction.
ALTER TABLE calls ADD COLUMN direction TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN provider_call_id TEXT NOT NULL DEFAULT '';
UPDATE calls SET direction = 'outbound' WHERE type = 'phone';
-- The listing's covering index gains direction, its new filter.
DROP INDEX calls_list;
CREATE INDEX calls_list ON calls (org_id, created_at, id, type, status, direction);

-- +goose Down
DROP INDEX calls_list;
CREATE INDEX calls_list ON calls (org_id, created_at, id, type, status);
ALTER TABLE calls DROP COLUMN provider_call_id;
ALTER TABLE calls DROP COLUMN direction;
DROP INDEX purchases_connection;
ALTER TABLE purchases DROP COLUMN connection_id;
DROP TABLE phone_connection_numbers;
DROP TABLE phone_connections;
