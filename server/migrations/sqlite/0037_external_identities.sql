-- People who sign in through an identity provider (issue 45): the
-- provider (an OpenID issuer URL) and its stable id of the person (`sub`)
-- name one user, made on their first sign-in (with no password) or found
-- by address.
CREATE TABLE external_identities (
    provider        TEXT   NOT NULL,
    subject         TEXT   NOT NULL,
    user_id         BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at      BIGINT NOT NULL,
    last_sign_in_at BIGINT NOT NULL,
    PRIMARY KEY (provider, subject)
);
CREATE INDEX external_identities_user ON external_identities (user_id);
