-- Serving instances: a model version answering predict calls. The row stays
-- after a stop (status 'stopped') until it is deleted. `spec` is the
-- launch's ServingSpec as JSON, kept current when it is scaled.
CREATE TABLE serving (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    created_by  TEXT    NOT NULL,
    model       TEXT    NOT NULL,
    version     BIGINT  NOT NULL,
    spec        TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    message     TEXT    NOT NULL DEFAULT '',
    ready       BIGINT  NOT NULL DEFAULT 0,
    cluster     TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    ended_at    BIGINT,
    UNIQUE (account_id, name)
);

-- Requests an instance answered, per bucket of a few seconds, measured at
-- the console's endpoint. Percentiles are of the bucket's latencies, ms.
CREATE TABLE serving_traffic (
    serving_id  BIGINT  NOT NULL REFERENCES serving (id) ON DELETE CASCADE,
    t           DOUBLE PRECISION NOT NULL,
    secs        DOUBLE PRECISION NOT NULL,
    requests    BIGINT  NOT NULL,
    errors      BIGINT  NOT NULL,
    p50_ms      DOUBLE PRECISION NOT NULL,
    p90_ms      DOUBLE PRECISION NOT NULL,
    p99_ms      DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (serving_id, t)
);
CREATE INDEX serving_traffic_by_time ON serving_traffic (t);
