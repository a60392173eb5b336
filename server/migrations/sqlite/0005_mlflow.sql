-- MLflow tracking API: experiments and runs as the MLflow client logs them.
-- A run is also a job (source 'mlflow'), so it sits in the job table beside
-- the jobs the console started, and its metrics are that job's PaddleBoard
-- series.
ALTER TABLE jobs ADD COLUMN source TEXT NOT NULL DEFAULT 'console';

CREATE TABLE mlflow_experiments (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id        BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name              TEXT    NOT NULL,
    lifecycle_stage   TEXT    NOT NULL DEFAULT 'active',
    creation_time     BIGINT  NOT NULL,
    last_update_time  BIGINT  NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE mlflow_experiment_tags (
    experiment_id BIGINT NOT NULL REFERENCES mlflow_experiments (id) ON DELETE CASCADE,
    key           TEXT   NOT NULL,
    value         TEXT   NOT NULL,
    PRIMARY KEY (experiment_id, key)
);

CREATE TABLE mlflow_runs (
    run_id          TEXT    PRIMARY KEY,
    account_id      BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    experiment_id   BIGINT  NOT NULL REFERENCES mlflow_experiments (id) ON DELETE CASCADE,
    job_id          BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    run_name        TEXT    NOT NULL,
    user_id         TEXT    NOT NULL DEFAULT '',
    status          TEXT    NOT NULL,
    start_time      BIGINT  NOT NULL,
    end_time        BIGINT,
    lifecycle_stage TEXT    NOT NULL DEFAULT 'active'
);
CREATE INDEX mlflow_runs_by_job ON mlflow_runs (job_id);

CREATE TABLE mlflow_params (
    run_id TEXT NOT NULL REFERENCES mlflow_runs (run_id) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);

CREATE TABLE mlflow_run_tags (
    run_id TEXT NOT NULL REFERENCES mlflow_runs (run_id) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
