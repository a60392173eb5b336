-- Calls by version of an instance (its main version, a canary, a shadow's
-- copies), per bucket, measured at the console's endpoint as
-- serving_traffic is; `shadow` 1: copies whose answers went to no one.
CREATE TABLE serving_version_traffic (
    serving_id  BIGINT  NOT NULL REFERENCES serving (id) ON DELETE CASCADE,
    version     BIGINT  NOT NULL,
    shadow      BIGINT  NOT NULL,
    t           DOUBLE PRECISION NOT NULL,
    secs        DOUBLE PRECISION NOT NULL,
    requests    BIGINT  NOT NULL,
    errors      BIGINT  NOT NULL,
    p50_ms      DOUBLE PRECISION NOT NULL,
    p90_ms      DOUBLE PRECISION NOT NULL,
    p99_ms      DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (serving_id, version, shadow, t)
) WITHOUT ROWID;
CREATE INDEX serving_version_traffic_by_time ON serving_version_traffic (t);

-- Calls mirrored to a shadow: both answers' starts, side by side. The
-- newest few hundred per instance are kept.
CREATE TABLE serving_shadow_calls (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    serving_id      BIGINT  NOT NULL REFERENCES serving (id) ON DELETE CASCADE,
    at              BIGINT  NOT NULL,
    version         BIGINT  NOT NULL,
    path            TEXT    NOT NULL,
    primary_status  BIGINT  NOT NULL,
    shadow_status   BIGINT  NOT NULL,
    primary_ms      DOUBLE PRECISION NOT NULL,
    shadow_ms       DOUBLE PRECISION NOT NULL,
    agrees          BIGINT  NOT NULL,
    request         TEXT    NOT NULL,
    primary_answer  TEXT    NOT NULL,
    shadow_answer   TEXT    NOT NULL
);
CREATE INDEX serving_shadow_calls_by_instance ON serving_shadow_calls (serving_id, id);
