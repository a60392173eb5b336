-- Model aliases (`owner/model@production`): one version per alias and
-- model. `protected`: only the account's owners move or delete it.
CREATE TABLE model_aliases (
    asset_id    BIGINT  NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    alias       TEXT    NOT NULL,
    version     BIGINT  NOT NULL,
    protected   BIGINT  NOT NULL DEFAULT 0,
    updated_by  TEXT    NOT NULL,
    updated_at  BIGINT  NOT NULL,
    PRIMARY KEY (asset_id, alias)
);

-- Every set, move and delete of an alias: from which version to which
-- (NULL: it was new, or it was deleted), by whom, when.
CREATE TABLE model_alias_changes (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    asset_id     BIGINT  NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    alias        TEXT    NOT NULL,
    from_version BIGINT,
    to_version   BIGINT,
    protected    BIGINT  NOT NULL DEFAULT 0,
    by_email     TEXT    NOT NULL,
    at           BIGINT  NOT NULL
);
CREATE INDEX model_alias_changes_by_asset ON model_alias_changes (asset_id, id);
