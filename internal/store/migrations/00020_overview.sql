-- The overview's rollups (docs/ARCHITECTURE.md, "The overview and the
-- calls console"): per (organization, assistant, UTC day of the call's
-- creation) the ended calls by outcome and ended reason with their
-- duration and analysed successes, and the assistant turns' latency by
-- stage in fixed buckets; and the calls list's search by number. Both
-- rollups are written by FinishAnalysis, once per ended call, off the
-- call's own path.

-- +goose Up
CREATE TABLE call_days (
    org_id       TEXT NOT NULL,
    day          BIGINT NOT NULL,
    assistant_id TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    ended_reason TEXT NOT NULL,
    calls        BIGINT NOT NULL DEFAULT 0,
    duration_ms  BIGINT NOT NULL DEFAULT 0,
    evaluated    BIGINT NOT NULL DEFAULT 0,
    succeeded    BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, assistant_id, day, outcome, ended_reason)
);

-- stage is endpointing, transcriber, model, voice, platform (a voice
-- turn's breakdown) or total (a voice turn's total, a text turn's
-- latency); bucket is store.LatencyBucket's.
--
-- Both rollups count every call (and turn) twice: under its assistant,
-- and under assistant_id '' (all of the organization's assistants), which
-- the overview of a whole organization reads; the keys lead with
-- (org_id, assistant_id), so that an overview reads its period's rows
-- and no other assistant's.
CREATE TABLE turn_latency (
    org_id       TEXT NOT NULL,
    day          BIGINT NOT NULL,
    assistant_id TEXT NOT NULL,
    stage        TEXT NOT NULL,
    bucket       INTEGER NOT NULL,
    n            BIGINT NOT NULL,
    PRIMARY KEY (org_id, assistant_id, day, stage, bucket)
);

-- The buckets, [lo_us, hi_us): store.LatencyBuckets (a test checks the
-- two agree). FinishAnalysis and the backfill below bucket by joining it.
CREATE TABLE latency_buckets (
    bucket INTEGER PRIMARY KEY,
    lo_us  BIGINT NOT NULL,
    hi_us  BIGINT NOT NULL
);
INSERT INTO latency_buckets (bucket, lo_us, hi_us) VALUES
    (0, 0, 10),
    (1, 10, 12),
    (2, 12, 14),
    (3, 14, 17),
    (4, 17, 20),
    (5, 20, 24),
    (6, 24, 28),
    (7, 28, 34),
    (8, 34, 40),
    (9, 40, 48),
    (10, 48, 57),
    (11, 57, 67),
    (12, 67, 80),
    (13, 80, 95),
    (14, 95, 113),
    (15, 113, 135),
    (16, 135, 160),
    (17, 160, 190),
    (18, 190, 226),
    (19, 226, 269),
    (20, 269, 320),
    (21, 320, 381),
    (22, 381, 453),
    (23, 453, 538),
    (24, 538, 640),
    (25, 640, 761),
    (26, 761, 905),
    (27, 905, 1076),
    (28, 1076, 1280),
    (29, 1280, 1522),
    (30, 1522, 1810),
    (31, 1810, 2153),
    (32, 2153, 2560),
    (33, 2560, 3044),
    (34, 3044, 3620),
    (35, 3620, 4305),
    (36, 4305, 5120),
    (37, 5120, 6089),
    (38, 6089, 7241),
    (39, 7241, 8611),
    (40, 8611, 10240),
    (41, 10240, 12177),
    (42, 12177, 14482),
    (43, 14482, 17222),
    (44, 17222, 20480),
    (45, 20480, 24355),
    (46, 24355, 28963),
    (47, 28963, 34443),
    (48, 34443, 40960),
    (49, 40960, 48710),
    (50, 48710, 57926),
    (51, 57926, 68886),
    (52, 68886, 81920),
    (53, 81920, 97420),
    (54, 97420, 115852),
    (55, 115852, 137772),
    (56, 137772, 163840),
    (57, 163840, 194840),
    (58, 194840, 231705),
    (59, 231705, 275545),
    (60, 275545, 327680),
    (61, 327680, 389679),
    (62, 389679, 463410),
    (63, 463410, 551090),
    (64, 551090, 655360),
    (65, 655360, 779359),
    (66, 779359, 926819),
    (67, 926819, 1102180),
    (68, 1102180, 1310720),
    (69, 1310720, 1558718),
    (70, 1558718, 1853638),
    (71, 1853638, 2204359),
    (72, 2204359, 2621440),
    (73, 2621440, 3117435),
    (74, 3117435, 3707276),
    (75, 3707276, 4408719),
    (76, 4408719, 5242880),
    (77, 5242880, 6234870),
    (78, 6234870, 7414552),
    (79, 7414552, 8817438),
    (80, 8817438, 10485760),
    (81, 10485760, 12469740),
    (82, 12469740, 14829104),
    (83, 14829104, 17634876),
    (84, 17634876, 20971520),
    (85, 20971520, 24939481),
    (86, 24939481, 29658208),
    (87, 29658208, 35269752),
    (88, 35269752, 41943040),
    (89, 41943040, 49878962),
    (90, 49878962, 59316416),
    (91, 59316416, 70539504),
    (92, 70539504, 83886080),
    (93, 83886080, 99757923),
    (94, 99757923, 118632832),
    (95, 118632832, 141079008),
    (96, 141079008, 167772160),
    (97, 167772160, 199515846),
    (98, 199515846, 237265664),
    (99, 237265664, 282158016),
    (100, 282158016, 335544320),
    (101, 335544320, 399031693),
    (102, 399031693, 474531328),
    (103, 474531328, 564316032),
    (104, 564316032, 671088640),
    (105, 671088640, 9000000000000000000);

-- Backfill: the ended calls whose analysis has run (a pending one is
-- counted by its FinishAnalysis). Success is read from the result as the
-- worker writes it: compact JSON with successEvaluation right after the
-- sentiment object, so the pattern cannot match inside a string, where
-- the quote would be escaped.
INSERT INTO call_days (org_id, day, assistant_id, outcome, ended_reason, calls, duration_ms, evaluated, succeeded)
    SELECT c.org_id, c.created_at / 86400000, CASE WHEN g.whole = 1 THEN '' ELSE c.assistant_id END, c.outcome, c.ended_reason, COUNT(*),
        SUM(CASE WHEN c.started_at > 0 AND c.ended_at > c.started_at THEN c.ended_at - c.started_at ELSE 0 END),
        SUM(CASE WHEN a.state = 'ready' AND (a.result LIKE '%},"successEvaluation":true,%' OR a.result LIKE '%},"successEvaluation":false,%') THEN 1 ELSE 0 END),
        SUM(CASE WHEN a.state = 'ready' AND a.result LIKE '%},"successEvaluation":true,%' THEN 1 ELSE 0 END)
    FROM calls c JOIN analyses a ON a.call_id = c.id AND a.state <> 'pending'
    CROSS JOIN (SELECT 0 AS whole UNION ALL SELECT 1) g
    WHERE c.status = 3
    GROUP BY c.org_id, c.created_at / 86400000, CASE WHEN g.whole = 1 THEN '' ELSE c.assistant_id END, c.outcome, c.ended_reason;
INSERT INTO turn_latency (org_id, day, assistant_id, stage, bucket, n)
    SELECT t.org_id, t.day, t.assistant_id, t.stage, b.bucket, COUNT(*)
    FROM (
        SELECT c.org_id, c.created_at / 86400000 AS day, CASE WHEN g.whole = 1 THEN '' ELSE c.assistant_id END AS assistant_id, s.stage,
            CASE s.stage
                WHEN 'endpointing' THEN tu.endpointing_us WHEN 'transcriber' THEN tu.transcriber_us
                WHEN 'model' THEN tu.model_us WHEN 'voice' THEN tu.voice_us WHEN 'platform' THEN tu.platform_us
                ELSE CASE WHEN tu.has_breakdown THEN tu.total_us ELSE tu.latency_us END END AS us
        FROM turns tu
        JOIN calls c ON c.id = tu.call_id AND c.status = 3
        JOIN analyses a ON a.call_id = tu.call_id AND a.state <> 'pending'
        JOIN (SELECT 'endpointing' AS stage UNION ALL SELECT 'transcriber' UNION ALL SELECT 'model'
              UNION ALL SELECT 'voice' UNION ALL SELECT 'platform' UNION ALL SELECT 'total') s
          ON s.stage = 'total' OR tu.has_breakdown
        CROSS JOIN (SELECT 0 AS whole UNION ALL SELECT 1) g
        WHERE tu.role = 'assistant'
    ) t
    JOIN latency_buckets b ON t.us >= b.lo_us AND t.us < b.hi_us
    WHERE t.stage <> 'total' OR t.us > 0
    GROUP BY t.org_id, t.day, t.assistant_id, t.stage, b.bucket;

-- Search by number: either party, newest first (ListCalls' Search).
CREATE INDEX calls_to ON calls (org_id, to_number, created_at, id) WHERE to_number <> '';
CREATE INDEX calls_from ON calls (org_id, from_number, created_at, id) WHERE from_number <> '';

-- +goose Down
DROP INDEX calls_from;
DROP INDEX calls_to;
DROP TABLE latency_buckets;
DROP TABLE turn_latency;
DROP TABLE call_days;
