-- Scheduled attempts carry their own dial lease (docs/ARCHITECTURE.md, "How
-- a scheduled call flows"): leased_until is when the node that handed the
-- attempt to the job queue stops owning it (0: nobody), leases how many times
-- it has been handed out (the dial job's generation). They replace the
-- enqueued flag, which could only say "a job exists somewhere", so an attempt
-- whose job a dead node held stayed undialed until River's hourly rescue.
-- Attempts that were enqueued but not dialed are leased again at once; their
-- old job, if it still runs, finds the attempt dialed or superseded.

-- +goose Up
ALTER TABLE attempts ADD COLUMN leased_until BIGINT NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN leases INTEGER NOT NULL DEFAULT 0;
DROP INDEX attempts_due;
ALTER TABLE attempts DROP COLUMN enqueued;
CREATE INDEX attempts_due ON attempts (state, due_at);
CREATE INDEX attempts_leased ON attempts (state, leased_until);

-- +goose Down
DROP INDEX attempts_leased;
DROP INDEX attempts_due;
ALTER TABLE attempts ADD COLUMN enqueued BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE attempts SET enqueued = leases > 0;
ALTER TABLE attempts DROP COLUMN leases;
ALTER TABLE attempts DROP COLUMN leased_until;
CREATE INDEX attempts_due ON attempts (enqueued, state, due_at);
