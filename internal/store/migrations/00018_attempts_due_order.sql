-- The promoter picks due attempts earliest first, ties by id
-- (dueCandidates: ORDER BY state, due_at, id LIMIT n). With the index on
-- (state, due_at) alone, PostgreSQL read and sorted every due attempt to
-- pick the first n: 7,800 rows and 78 ms a promotion in a burst of
-- 10,000 due at one instant (docs/benchmarks.md, bench-scheduler). With
-- id in the index the scan is in the order asked and stops at n.

-- +goose Up
DROP INDEX attempts_due;
CREATE INDEX attempts_due ON attempts (state, due_at, id);

-- +goose Down
DROP INDEX attempts_due;
CREATE INDEX attempts_due ON attempts (state, due_at);
