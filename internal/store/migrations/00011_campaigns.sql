-- Campaign settings on a schedule (issue 12; docs/ARCHITECTURE.md,
-- "Campaign settings"). Every new column's default is the behaviour of
-- the rows stored before it, so old schedules go on as they were:
--
-- schedules.calling_hours  JSON {start, end, days}; '' = any time
-- schedules.retry          JSON {busy, noAnswer, voicemail, failed}
--                          of {afterMinutes, maxAttempts}; '' = no retry
-- schedules.max_concurrent_calls  the schedule's cap on live calls; 0 = none
-- schedules.paused_at      set while the schedule is paused; 0 = running
-- attempts.requested_at    the time asked for (the date, or a retry's
--                          end + afterMinutes); due_at is the effective
--                          time (the calling hours' next opening)
-- attempts.tries           JSON array of the finished tries before the
--                          current call (due, dialedAt, callId, outcome,
--                          endedReason); '' = none
-- attempts.lease_base      leases when the current try began: a try is
--                          failed after MaxLeases hand-outs of its own
-- orgs.max_concurrent_calls[_per_number]  the organization's own caps,
--                          which can only lower the server's; 0 = none

-- +goose Up
ALTER TABLE schedules ADD COLUMN calling_hours TEXT NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN retry TEXT NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN max_concurrent_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE schedules ADD COLUMN paused_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN requested_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN tries TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN lease_base INTEGER NOT NULL DEFAULT 0;
UPDATE attempts SET requested_at = due_at;
ALTER TABLE orgs ADD COLUMN max_concurrent_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE orgs ADD COLUMN max_concurrent_calls_per_number INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE orgs DROP COLUMN max_concurrent_calls_per_number;
ALTER TABLE orgs DROP COLUMN max_concurrent_calls;
ALTER TABLE attempts DROP COLUMN lease_base;
ALTER TABLE attempts DROP COLUMN tries;
ALTER TABLE attempts DROP COLUMN requested_at;
ALTER TABLE schedules DROP COLUMN paused_at;
ALTER TABLE schedules DROP COLUMN max_concurrent_calls;
ALTER TABLE schedules DROP COLUMN retry;
ALTER TABLE schedules DROP COLUMN calling_hours;
