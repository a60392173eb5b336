-- Changes one console process made (a job moved on, points arrived), read
-- by the other replicas on this database for their live pages. Names only,
-- never content; kept about a minute.
CREATE TABLE changes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    origin     TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    account_id BIGINT  NOT NULL,
    name       TEXT    NOT NULL,
    at         BIGINT  NOT NULL
);
CREATE INDEX changes_at ON changes (at);
