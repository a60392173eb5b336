-- Notebooks: a private JupyterLab per user. The row (and the workspace) stay
-- while it is stopped, until it is deleted. `spec` is the NotebookSpec as
-- JSON. `key_hash` is the hash of the key its kernels hold
-- (PADDLECLOUD_KEY), cleared when it stops; `jupyter_token` is what the
-- console's proxy sends to its server (the browser never sees it), new at
-- each start. `last_activity` is the newest kernel or terminal activity the
-- idle probe saw since the last start.
CREATE TABLE notebooks (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id     BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id        BIGINT  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name           TEXT    NOT NULL,
    spec           TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    message        TEXT    NOT NULL DEFAULT '',
    cluster        TEXT    NOT NULL,
    key_hash       TEXT,
    jupyter_token  TEXT    NOT NULL DEFAULT '',
    created_at     BIGINT  NOT NULL,
    started_at     BIGINT,
    last_activity  BIGINT,
    probe_error    TEXT    NOT NULL DEFAULT '',
    UNIQUE (account_id, name)
);
CREATE UNIQUE INDEX notebooks_by_key ON notebooks (key_hash);

-- Each time a notebook's server ran, with what it held: CPU/GPU hours count
-- these like jobs' runs. Kept when the notebook is deleted.
CREATE TABLE notebook_runs (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    notebook_id   BIGINT  REFERENCES notebooks (id) ON DELETE SET NULL,
    account_id    BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id       BIGINT  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    cpu_millis    BIGINT  NOT NULL,
    memory_bytes  BIGINT  NOT NULL,
    gpu           BIGINT  NOT NULL,
    started_at    BIGINT  NOT NULL,
    ended_at      BIGINT
);
CREATE INDEX notebook_runs_by_account ON notebook_runs (account_id, started_at);
