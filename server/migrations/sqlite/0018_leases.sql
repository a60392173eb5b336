-- Leases: a background loop (the pipeline scheduler, the local-run sweep,
-- notebook culling, Kubernetes metrics sampling, pruning) runs in the one
-- console process that holds its lease when several share this database.
-- `expires_at` is Unix ms; a holder renews well before it.
CREATE TABLE leases (
    name       TEXT   PRIMARY KEY,
    holder     TEXT   NOT NULL,
    expires_at BIGINT NOT NULL
);
