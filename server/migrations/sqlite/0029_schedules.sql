-- Schedules: a template, a pipeline or a notebook file run on a cron
-- schedule (`spec`, the ScheduleSpec's JSON). `next_at` is the next tick
-- (NULL while paused), `last_tick` the last one the controller dealt with.
-- Each tick is a row of `schedule_runs`, claimed before its job is
-- submitted (the primary key): a tick runs once across replicas and
-- restarts. Gone with the account; runs gone with their schedule.
CREATE TABLE schedules (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id     BIGINT  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    spec        TEXT    NOT NULL,
    paused      BIGINT  NOT NULL DEFAULT 0,
    next_at     BIGINT,
    last_tick   BIGINT,
    created_at  BIGINT  NOT NULL,
    UNIQUE (account_id, name)
);
CREATE INDEX schedules_due ON schedules (next_at);
CREATE TABLE schedule_runs (
    schedule_id  BIGINT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    tick         BIGINT NOT NULL,
    at           BIGINT NOT NULL,
    outcome      TEXT   NOT NULL,
    started      TEXT,
    started_kind TEXT,
    message      TEXT   NOT NULL DEFAULT '',
    PRIMARY KEY (schedule_id, tick)
);
