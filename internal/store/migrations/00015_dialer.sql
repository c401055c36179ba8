-- Dialing without a job queue (docs/ARCHITECTURE.md, "How a scheduled
-- call flows"): the promoter hands an attempt out (leased_until), and a
-- node's dialer holds it while it dials (dial_until), claimed with the one
-- lease claimer; a dialer that dies holding it leaves it to the others
-- once dial_until has passed. River's tables, which earlier versions
-- created, are no longer used; they are left in place.

-- +goose Up
ALTER TABLE attempts ADD COLUMN dial_until BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE attempts DROP COLUMN dial_until;
