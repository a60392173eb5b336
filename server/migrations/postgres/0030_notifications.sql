-- Notifications. A subscription is one user's, in one account: what it
-- follows (`subject_kind`, `subject_name`; '' for the whole account),
-- which events (`events`, a JSON list), how (`channel`, the Channel's
-- JSON) and, for a webhook, its signing secret.
CREATE TABLE notify_subscriptions (
    id           BIGSERIAL PRIMARY KEY,
    account_id   BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id      BIGINT  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    subject_kind TEXT    NOT NULL,
    subject_name TEXT    NOT NULL DEFAULT '',
    events       TEXT    NOT NULL,
    channel      TEXT    NOT NULL,
    secret       TEXT,
    created_at   BIGINT  NOT NULL
);
CREATE INDEX notify_subscriptions_by_account ON notify_subscriptions (account_id);

-- What the console raises itself (a pipeline run or an experiment waiting
-- for quota), beside what the notifier reads from the jobs', pipeline
-- runs', experiments' and serving instances' own rows. `notice_key` is
-- unique: one wait is one notice however often it is raised.
CREATE TABLE notices (
    id           BIGSERIAL PRIMARY KEY,
    account_id   BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    notice_key   TEXT    NOT NULL UNIQUE,
    subject_kind TEXT    NOT NULL,
    subject_name TEXT    NOT NULL,
    event        TEXT    NOT NULL,
    message      TEXT    NOT NULL DEFAULT '',
    at           BIGINT  NOT NULL
);
CREATE INDEX notices_by_time ON notices (at);

-- One telling of one notice through one subscription: unique per pair, so
-- a notice read twice (passes overlap) is sent once. `notice` is the
-- Notice's JSON, as sent. Gone with its subscription.
CREATE TABLE notify_deliveries (
    id              BIGSERIAL PRIMARY KEY,
    subscription_id BIGINT  NOT NULL REFERENCES notify_subscriptions (id) ON DELETE CASCADE,
    notice_key      TEXT    NOT NULL,
    notice          TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    attempts        BIGINT  NOT NULL DEFAULT 0,
    next_at         BIGINT,
    last_error      TEXT,
    response_code   BIGINT,
    created_at      BIGINT  NOT NULL,
    delivered_at    BIGINT,
    UNIQUE (subscription_id, notice_key)
);
CREATE INDEX notify_deliveries_due ON notify_deliveries (status, next_at);

-- How far the notifier has read (ms), per source; it re-reads a minute
-- below it, for rows whose time was set before their commit.
CREATE TABLE notify_cursor (
    source TEXT   PRIMARY KEY,
    at     BIGINT NOT NULL
);

-- The notifier reads finished jobs by time.
CREATE INDEX job_history_by_time ON job_history (at);
