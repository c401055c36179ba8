-- Call recordings (issue 9): a call of an assistant with recording on has
-- a two-channel WAV under the server's data directory; calls.recording is
-- its path relative to that directory ('recordings/<org>/<call>.wav'),
-- '' when the call has none (not recorded, or its recording failed).

-- +goose Up
ALTER TABLE calls ADD COLUMN recording TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE calls DROP COLUMN recording;
