-- Local runs: programs run outside the console that report themselves as
-- a job (jobs.source = 'local'). `client_id` makes a replayed start record
-- one run; `facts` (RunFacts) and `params` are JSON; `log_len` is how many
-- bytes of the run's output are recorded, so a replayed chunk is taken once;
-- `stop_asked` is 1 once someone pressed Stop (the next heartbeat says so).
CREATE TABLE local_runs (
    job_id       BIGINT  PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    account_id   BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    client_id    TEXT    NOT NULL,
    host         TEXT    NOT NULL DEFAULT '',
    facts        TEXT    NOT NULL,
    params       TEXT    NOT NULL,
    heartbeat_at BIGINT  NOT NULL,
    log_len      BIGINT  NOT NULL DEFAULT 0,
    stop_asked   BIGINT  NOT NULL DEFAULT 0,
    UNIQUE (account_id, client_id)
);
CREATE INDEX local_runs_by_heartbeat ON local_runs (heartbeat_at);
