-- Pipeline runs: a graph of jobs run as one. `spec` is the PipelineSpec
-- and `vals` its parameters' values, as JSON; a node's job is an ordinary
-- row of `jobs`, named `<run>-<node>[-rN]` (`job` below).
CREATE TABLE pipeline_runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id     BIGINT  REFERENCES users (id) ON DELETE SET NULL,
    name        TEXT    NOT NULL,
    spec        TEXT    NOT NULL,
    vals        TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    message     TEXT    NOT NULL DEFAULT '',
    created_by  TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    finished_at BIGINT,
    UNIQUE (account_id, name)
);
CREATE INDEX pipeline_runs_by_status ON pipeline_runs (status);

-- One row per node, in the spec's order (idx). `attempt` counts tries;
-- `not_before` is a retry's (or a full quota's) wait.
CREATE TABLE pipeline_nodes (
    run_id       BIGINT  NOT NULL REFERENCES pipeline_runs (id) ON DELETE CASCADE,
    idx          BIGINT  NOT NULL,
    name         TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    message      TEXT    NOT NULL DEFAULT '',
    attempt      BIGINT  NOT NULL DEFAULT 0,
    retries_left BIGINT  NOT NULL DEFAULT 0,
    job          TEXT,
    not_before   BIGINT,
    started_at   BIGINT,
    finished_at  BIGINT,
    PRIMARY KEY (run_id, idx)
);
