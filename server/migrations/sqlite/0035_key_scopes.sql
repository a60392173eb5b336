-- Scoped, expiring access keys (issue 45): what a key may do (`full`, `read`,
-- `metrics`, `submit`; keys made before are `full`) and when it stops
-- working (Unix ms; NULL: never).
ALTER TABLE access_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'full';
ALTER TABLE access_keys ADD COLUMN expires_at BIGINT;
