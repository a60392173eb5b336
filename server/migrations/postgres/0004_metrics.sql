-- PaddleBoard: training metrics, one series per (job, tag). Points are kept
-- whole here; charts are served from an in-memory envelope per series that
-- is loaded from these rows and checked against `revision`.
CREATE TABLE metric_series (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id     BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    tag        TEXT    NOT NULL,
    points     BIGINT  NOT NULL DEFAULT 0,
    last_step  BIGINT,
    revision   BIGINT  NOT NULL DEFAULT 0,
    UNIQUE (job_id, tag)
);

-- value NULL is NaN (as on SQLite, which cannot store one); ±Infinity is stored as is.
CREATE TABLE metric_points (
    series_id  BIGINT  NOT NULL REFERENCES metric_series (id) ON DELETE CASCADE,
    step       BIGINT  NOT NULL,
    wall_time  DOUBLE PRECISION NOT NULL,
    value      DOUBLE PRECISION,
    PRIMARY KEY (series_id, step)
);

-- Who submitted a job (for per-user usage), and the hash of the job's own
-- token, with which its replicas write metrics for it and nothing else.
ALTER TABLE jobs ADD COLUMN user_id BIGINT REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE jobs ADD COLUMN token_hash TEXT;
CREATE UNIQUE INDEX jobs_by_token ON jobs (token_hash);
