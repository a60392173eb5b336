-- What happened to a job, in order: each change of its status or of the
-- reason it gives (waiting for quota, unschedulable, why it failed), and
-- each change of a replica's phase (`pod` set). The jobs and pods rows keep
-- only the latest; the job page's timeline reads this. Rows are written by
-- the statements that change those rows, in their transactions.
CREATE TABLE job_history (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id     BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    at         BIGINT  NOT NULL,
    pod        TEXT,
    state      TEXT    NOT NULL,
    message    TEXT    NOT NULL DEFAULT '',
    exit_code  BIGINT
);
CREATE INDEX job_history_by_job ON job_history (job_id, id);
