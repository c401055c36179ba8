-- A schedule's completion is decided in one place (docs/ARCHITECTURE.md,
-- "How a scheduled call flows"): the leader's sweep marks a schedule
-- whose attempts are all final (none pending, none with a live call)
-- completed and queues schedule.completed in that transaction, once. The
-- end of a scheduled call no longer locks its schedule's row to decide it.
-- Schedules already done when this runs count as completed then (their
-- last attempt's change), so that upgrading sends no event for them.

-- +goose Up
ALTER TABLE schedules ADD COLUMN completed_at BIGINT NOT NULL DEFAULT 0;
UPDATE schedules SET completed_at = COALESCE((SELECT MAX(a.updated_at) FROM attempts a WHERE a.schedule_id = schedules.id), schedules.created_at)
WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.schedule_id = schedules.id AND a.state = 'pending')
  AND NOT EXISTS (SELECT 1 FROM attempts a JOIN calls c ON c.id = a.call_id
                  WHERE a.schedule_id = schedules.id AND a.state = 'dialed' AND c.status < 3);
CREATE INDEX schedules_open ON schedules (created_at) WHERE completed_at = 0;

-- +goose Down
DROP INDEX schedules_open;
ALTER TABLE schedules DROP COLUMN completed_at;
