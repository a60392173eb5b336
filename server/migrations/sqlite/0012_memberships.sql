-- Members of accounts: a user may belong to several accounts, each with a
-- role there. `users.account_id` stays as the account a user was created
-- in; what a user may do, and where, is read from `memberships` only.
-- Users from before this table keep their account and role.

CREATE TABLE memberships (
    account_id       BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id          BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role             TEXT   NOT NULL CHECK (role IN ('owner', 'member', 'viewer')),
    created_at       BIGINT NOT NULL,
    -- Caps an owner sets for this member inside the account's quota
    -- (NULL: only the account's quota applies).
    max_cpu_millis   BIGINT,
    max_memory_bytes BIGINT,
    max_gpus         BIGINT,
    max_jobs         BIGINT,
    PRIMARY KEY (account_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);
INSERT INTO memberships (account_id, user_id, role, created_at)
    SELECT account_id, id, role, created_at FROM users;

-- Sessions and access keys act in one account, which the user must still
-- be a member of.
ALTER TABLE sessions ADD COLUMN account_id BIGINT REFERENCES accounts (id) ON DELETE CASCADE;
UPDATE sessions SET account_id = (SELECT u.account_id FROM users u WHERE u.id = sessions.user_id);
ALTER TABLE access_keys ADD COLUMN account_id BIGINT REFERENCES accounts (id) ON DELETE CASCADE;
UPDATE access_keys SET account_id = (SELECT u.account_id FROM users u WHERE u.id = access_keys.user_id);

-- Set for a user created with a generated password: every page asks for a
-- new one until it is changed.
ALTER TABLE users ADD COLUMN must_change_password BIGINT NOT NULL DEFAULT 0;

-- Invitations mailed by owners; the token is stored as a SHA-256 hash and
-- works once, until it expires.
CREATE TABLE invitations (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    token_hash  TEXT   NOT NULL UNIQUE,
    account_id  BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email       TEXT   NOT NULL,
    role        TEXT   NOT NULL CHECK (role IN ('owner', 'member', 'viewer')),
    invited_by  TEXT   NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    accepted_at BIGINT
);
CREATE INDEX invitations_account ON invitations (account_id, email);
