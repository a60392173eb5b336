-- Experiment templates: a job spec with typed parameters. Each save of a
-- name is a new row with the next version; rows are never changed, so a
-- job's recorded version always means what it ran. `spec` is the
-- TemplateSpec as JSON.
CREATE TABLE templates (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    version     BIGINT  NOT NULL,
    spec        TEXT    NOT NULL,
    created_by  TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    UNIQUE (account_id, name, version)
);
