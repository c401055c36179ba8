-- Voice latency per turn (call.Breakdown): where an assistant turn's
-- response time went, in microseconds. has_breakdown says whether the
-- turn has one at all (text turns and first messages do not); the stage
-- columns are 0 when it does not, since the schema keeps "unset" out of
-- NULL so that one set of queries serves both databases.

-- +goose Up
ALTER TABLE turns ADD COLUMN has_breakdown BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE turns ADD COLUMN endpointing_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN transcriber_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN model_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN voice_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN platform_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN total_us BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE turns DROP COLUMN total_us;
ALTER TABLE turns DROP COLUMN platform_us;
ALTER TABLE turns DROP COLUMN voice_us;
ALTER TABLE turns DROP COLUMN model_us;
ALTER TABLE turns DROP COLUMN transcriber_us;
ALTER TABLE turns DROP COLUMN endpointing_us;
ALTER TABLE turns DROP COLUMN has_breakdown;
