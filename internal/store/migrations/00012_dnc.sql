-- The do-not-call list (issue 12): an organization's numbers that the
-- dialer never calls. One row per (organization, number): adding a listed
-- number again leaves the first entry as it was. source is 'api' or
-- 'opt-out'; call_id the call in which the caller opted out (evidence).
-- The dial's claim (CreateCall) reads the list by its key under the same
-- lock as an add of the number (docs/ARCHITECTURE.md, "Do-not-call").
-- calls_live_to finds the live calls to a number (an add reports them)
-- without touching ended calls.

-- +goose Up
CREATE TABLE dnc (
    org_id     TEXT NOT NULL,
    number     TEXT NOT NULL,
    reason     TEXT NOT NULL DEFAULT '',
    source     TEXT NOT NULL,
    call_id    TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, number)
);
CREATE INDEX dnc_list ON dnc (org_id, created_at, number);
CREATE INDEX calls_live_to ON calls (org_id, to_number) WHERE status IN (0, 1, 2);

-- +goose Down
DROP INDEX calls_live_to;
DROP TABLE dnc;
