-- Datasets and models. Files live in the object store; this is their
-- index (for listing folders, sizes and counts without listing the store)
-- and everything about who may read them.
CREATE TABLE assets (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind        TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    tags        TEXT    NOT NULL DEFAULT '[]',
    public      BIGINT  NOT NULL DEFAULT 0,
    created_at  BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL,
    UNIQUE (account_id, kind, name)
);
CREATE INDEX assets_public ON assets (kind, public);

-- A dataset's files are version 0; a model version's files carry its number.
CREATE TABLE asset_files (
    asset_id  BIGINT  NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    version   BIGINT  NOT NULL,
    path      TEXT    NOT NULL,
    size      BIGINT  NOT NULL,
    modified  BIGINT  NOT NULL,
    PRIMARY KEY (asset_id, version, path)
);

CREATE TABLE model_versions (
    asset_id    BIGINT  NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    version     BIGINT  NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    tags        TEXT    NOT NULL DEFAULT '[]',
    job         TEXT,
    created_by  TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    state       TEXT    NOT NULL,
    PRIMARY KEY (asset_id, version)
);

-- Shared with an account (account_id), or by a link (token_hash; only the
-- hash of the token is kept).
CREATE TABLE asset_shares (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    asset_id    BIGINT  NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    account_id  BIGINT  REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash  TEXT    UNIQUE,
    prefix      TEXT,
    expires_at  BIGINT,
    created_by  TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL
);
CREATE INDEX asset_shares_by_asset ON asset_shares (asset_id);
CREATE INDEX asset_shares_by_account ON asset_shares (account_id);
