-- Access keys for the REST API (CLI, SDK, scripts). Only a SHA-256 hash of
-- the secret is stored; `prefix` is its first characters, to tell keys apart.
CREATE TABLE access_keys (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    token_hash   TEXT    NOT NULL UNIQUE,
    prefix       TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    user_id      BIGINT  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at   BIGINT  NOT NULL,
    last_used_at BIGINT
);
CREATE INDEX access_keys_user ON access_keys (user_id);
