-- Webhook messages know their call (issue 11: a call's page in the
-- dashboard lists the webhook messages about it). call_id is the call an
-- event announces ('' for events of no call, and for messages queued
-- before this migration).

-- +goose Up
ALTER TABLE webhook_outbox ADD COLUMN call_id TEXT NOT NULL DEFAULT '';
CREATE INDEX webhook_outbox_call ON webhook_outbox (org_id, call_id, created_at) WHERE call_id <> '';

-- +goose Down
DROP INDEX webhook_outbox_call;
ALTER TABLE webhook_outbox DROP COLUMN call_id;
