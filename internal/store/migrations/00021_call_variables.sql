-- A call's variables (docs/ARCHITECTURE.md, "Per-call variables"): the
-- JSON object its assistant's templates were rendered from, fixed when
-- the call was created; '' for none (calls created before this).

-- +goose Up
ALTER TABLE calls ADD COLUMN variables TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE calls DROP COLUMN variables;
