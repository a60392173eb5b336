-- Metric alerts. A series now says when its last point arrived
-- (`updated_at`, the console's clock, not the writer's wall_time) and the
-- newest step whose value was NaN or infinite (`bad_step`, anywhere in a
-- batch), so the alert controller reads one row per (job, tag).
ALTER TABLE metric_series ADD COLUMN updated_at BIGINT;
ALTER TABLE metric_series ADD COLUMN bad_step BIGINT;

-- An account's rules on a tag (`spec`, the AlertRuleSpec's JSON).
CREATE TABLE alert_rules (
    id          BIGSERIAL PRIMARY KEY,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id     BIGINT  REFERENCES users (id) ON DELETE SET NULL,
    name        TEXT    NOT NULL,
    spec        TEXT    NOT NULL,
    created_by  TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    UNIQUE (account_id, name)
);

-- What they raised: one row per firing of a rule for a job, open while
-- `resolved_at` is NULL. `value` NULL is NaN, or no value (a silence).
CREATE TABLE alerts (
    id          BIGSERIAL PRIMARY KEY,
    rule_id     BIGINT  NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    job_id      BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    job         TEXT    NOT NULL,
    tag         TEXT    NOT NULL,
    step        BIGINT,
    value       DOUBLE PRECISION,
    message     TEXT    NOT NULL,
    raised_at   BIGINT  NOT NULL,
    resolved_at BIGINT
);
CREATE INDEX alerts_by_rule ON alerts (rule_id, job_id, id);
CREATE INDEX alerts_by_account ON alerts (account_id, id);
CREATE INDEX alerts_by_job ON alerts (job_id);
