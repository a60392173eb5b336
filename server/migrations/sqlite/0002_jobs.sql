-- Training jobs and their replicas. Role counts are kept on the job row so
-- the job table is one indexed query however many jobs an account has.
CREATE TABLE jobs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         TEXT    NOT NULL,
    spec         TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    cluster      TEXT    NOT NULL,
    created_at   BIGINT  NOT NULL,
    started_at   BIGINT,
    finished_at  BIGINT,
    message      TEXT    NOT NULL DEFAULT '',
    ps_total     INTEGER NOT NULL DEFAULT 0,
    ps_ready     INTEGER NOT NULL DEFAULT 0,
    ps_succeeded INTEGER NOT NULL DEFAULT 0,
    ps_failed    INTEGER NOT NULL DEFAULT 0,
    tr_total     INTEGER NOT NULL DEFAULT 0,
    tr_ready     INTEGER NOT NULL DEFAULT 0,
    tr_succeeded INTEGER NOT NULL DEFAULT 0,
    tr_failed    INTEGER NOT NULL DEFAULT 0,
    UNIQUE (account_id, name)
);
CREATE INDEX jobs_by_account_created ON jobs (account_id, created_at);
CREATE INDEX jobs_by_account_status ON jobs (account_id, status, created_at);

CREATE TABLE pods (
    job_id      BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    role        TEXT    NOT NULL,
    idx         INTEGER NOT NULL,
    phase       TEXT    NOT NULL,
    exit_code   INTEGER,
    pid         INTEGER,
    started_at  BIGINT,
    finished_at BIGINT,
    message     TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, name)
);
