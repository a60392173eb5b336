-- Confirmed addresses, mailed links (confirmation, password reset), the
-- notes rate limits count, and the audit log.

-- NULL until the user follows the confirmation link. Users from before
-- confirmation existed are taken as confirmed.
ALTER TABLE users ADD COLUMN email_confirmed_at BIGINT;
UPDATE users SET email_confirmed_at = created_at;

-- Single-use link tokens, stored as SHA-256 hashes.
CREATE TABLE user_tokens (
    token_hash TEXT    PRIMARY KEY,
    user_id    BIGINT  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose    TEXT    NOT NULL CHECK (purpose IN ('confirm', 'reset')),
    created_at BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL,
    used_at    BIGINT
);
CREATE INDEX user_tokens_user ON user_tokens (user_id, purpose);

-- One row per rate-limited request (reset mails per client and address,
-- confirmation mails per user); pruned as their window passes.
CREATE TABLE mail_requests (
    kind    TEXT   NOT NULL,
    subject TEXT   NOT NULL,
    at      BIGINT NOT NULL
);
CREATE INDEX mail_requests_by ON mail_requests (kind, subject, at);

-- Membership, role, quota, key and password events.
CREATE TABLE audit_log (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    at         BIGINT  NOT NULL,
    actor      TEXT    NOT NULL,
    action     TEXT    NOT NULL,
    detail     TEXT    NOT NULL
);
CREATE INDEX audit_log_account ON audit_log (account_id, at);
