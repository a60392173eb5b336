-- Site administrators: may set any account's quota. Granted from the
-- command line (`paddlecloud admin grant <email>`), never from a page.
ALTER TABLE users ADD COLUMN site_admin BIGINT NOT NULL DEFAULT 0;

-- An account's quota; a NULL column is "no limit". No row: no limits.
CREATE TABLE account_quotas (
    account_id   BIGINT  PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    cpu_millis   BIGINT,
    memory_bytes BIGINT,
    gpu          BIGINT,
    max_jobs     BIGINT,
    updated_at   BIGINT  NOT NULL,
    updated_by   TEXT    NOT NULL
);

-- What each pod of a job used. `res` is the row's resolution in seconds:
-- 0 for a raw sample (every few seconds), 60 for a minute's rollup (the
-- means) that replaces raw samples older than a day. Rows older than the
-- retention are pruned.
CREATE TABLE resource_samples (
    job_id      BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    pod         TEXT    NOT NULL,
    res         INTEGER NOT NULL,
    t           DOUBLE PRECISION NOT NULL,
    cpu         DOUBLE PRECISION NOT NULL,
    memory      DOUBLE PRECISION NOT NULL,
    gpu_util    DOUBLE PRECISION,
    gpu_memory  DOUBLE PRECISION,
    net_rx      DOUBLE PRECISION NOT NULL,
    net_tx      DOUBLE PRECISION NOT NULL,
    disk_read   DOUBLE PRECISION NOT NULL,
    disk_write  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (job_id, pod, res, t)
);
CREATE INDEX resource_samples_by_time ON resource_samples (res, t);
