-- Experiments: a search over a template's parameters for an objective.
-- `spec` is the ExperimentSpec as JSON, its seed filled in at creation.
-- The controller keeps nothing else: every pass reads these rows.
CREATE TABLE experiments (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id     BIGINT  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    spec        TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    message     TEXT    NOT NULL DEFAULT '',
    created_at  BIGINT  NOT NULL,
    ended_at    BIGINT,
    UNIQUE (account_id, name)
);
CREATE INDEX experiments_by_status ON experiments (status);

-- Its trials. A row is written (the trial's number and job name claimed)
-- before its job is submitted: a console that dies in between finds the
-- row on its next pass and submits the job under the same name, which the
-- job table keeps unique, so no trial is lost and none runs twice.
-- `values_json` holds the searched parameters' values.
CREATE TABLE experiment_trials (
    experiment_id  BIGINT  NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    number         BIGINT  NOT NULL,
    job            TEXT    NOT NULL,
    values_json    TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    objective      DOUBLE PRECISION,
    message        TEXT    NOT NULL DEFAULT '',
    created_at     BIGINT  NOT NULL,
    ended_at       BIGINT,
    PRIMARY KEY (experiment_id, number)
);
