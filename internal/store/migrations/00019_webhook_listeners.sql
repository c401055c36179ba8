-- Listener endpoints (docs/ARCHITECTURE.md, "Webhook listeners"): an
-- endpoint of kind 'listener' has no URL; its messages are not sent by the
-- HTTP dispatcher but streamed to `switchboard webhooks listen` over the
-- websocket it holds open, on whichever node that is. expires_at is when
-- an idle listener is deleted (renewed while a stream is attached; 0 for
-- 'http' endpoints, which never expire).

-- +goose Up
ALTER TABLE webhooks ADD COLUMN kind TEXT NOT NULL DEFAULT 'http';
ALTER TABLE webhooks ADD COLUMN expires_at BIGINT NOT NULL DEFAULT 0;
CREATE INDEX webhooks_listeners ON webhooks (expires_at) WHERE kind = 'listener' AND deleted_at = 0;

-- +goose Down
DROP INDEX webhooks_listeners;
ALTER TABLE webhooks DROP COLUMN expires_at;
ALTER TABLE webhooks DROP COLUMN kind;
