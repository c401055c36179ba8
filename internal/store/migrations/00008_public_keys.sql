-- Publishable keys (issue 11): pk_ keys a web page may hold, which can only
-- start web calls for their assistants from their origins. Like api_keys
-- only the key's SHA-256 is kept (hex), with the first characters of the
-- key (key_prefix) so people can recognize it. assistant_ids and origins
-- are JSON arrays as created (a key is never edited, only revoked);
-- public_key_origins holds each origin of each key once more, indexed, so
-- that a CORS preflight finds whether any active key allows an origin
-- without reading every key.
--
-- A call started with a publishable key remembers it (calls.public_key_id),
-- so the gateway can check the Origin of the websocket that joins it.
--
-- The bootstrap key was made with every scope; it keeps every scope, the
-- new ones included.

-- +goose Up
CREATE TABLE public_keys (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    name          TEXT NOT NULL,
    assistant_ids TEXT NOT NULL,
    origins       TEXT NOT NULL,
    hash          TEXT NOT NULL,
    key_prefix    TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    revoked_at    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX public_keys_org ON public_keys (org_id, created_at, id);

CREATE TABLE public_key_origins (
    origin TEXT NOT NULL,
    key_id TEXT NOT NULL,
    PRIMARY KEY (origin, key_id)
);

ALTER TABLE calls ADD COLUMN public_key_id TEXT NOT NULL DEFAULT '';

UPDATE api_keys SET scopes = scopes || ',keys:read,keys:write'
WHERE name = 'bootstrap'
  AND scopes = 'calls:read,calls:write,phone:read,phone:write,assistants:read,assistants:write,webhooks:read,webhooks:write';

-- +goose Down
UPDATE api_keys SET scopes = 'calls:read,calls:write,phone:read,phone:write,assistants:read,assistants:write,webhooks:read,webhooks:write'
WHERE name = 'bootstrap'
  AND scopes = 'calls:read,calls:write,phone:read,phone:write,assistants:read,assistants:write,webhooks:read,webhooks:write,keys:read,keys:write';
ALTER TABLE calls DROP COLUMN public_key_id;
DROP TABLE public_key_origins;
DROP TABLE public_keys;
