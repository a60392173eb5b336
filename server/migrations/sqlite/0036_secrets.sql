-- An account's secrets (issue 45). `sealed` is the value sealed with
-- ChaCha20-Poly1305 (base64 of nonce, ciphertext and tag; the account and
-- name bound in), `key_id` names the key that sealed it; no value is
-- stored in the clear.
CREATE TABLE secrets (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         TEXT    NOT NULL,
    description  TEXT    NOT NULL DEFAULT '',
    key_id       TEXT    NOT NULL,
    sealed       TEXT    NOT NULL,
    size         BIGINT  NOT NULL,
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL,
    updated_by   TEXT    NOT NULL,
    last_used_at BIGINT,
    UNIQUE (account_id, name)
);
