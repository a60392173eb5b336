-- Notebook files shared read-only: with the members of the notebook's
-- account (`audience` 'members'), with another account ('account',
-- `account_id`), or by a link ('link': only the token's hash is kept, with
-- its first characters to tell links apart, and when it stops working).
-- A recipient sees the file's newest version. Gone with the notebook.
CREATE TABLE notebook_shares (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    notebook_id BIGINT  NOT NULL REFERENCES notebooks (id) ON DELETE CASCADE,
    path        TEXT    NOT NULL,
    audience    TEXT    NOT NULL,
    account_id  BIGINT  REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash  TEXT    UNIQUE,
    prefix      TEXT,
    expires_at  BIGINT,
    created_by  TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL
);
CREATE INDEX notebook_shares_by_notebook ON notebook_shares (notebook_id);
CREATE INDEX notebook_shares_by_account ON notebook_shares (account_id);
