-- A serving instance's own token (only its hash): its Kubernetes pods use it
-- to fetch the model version they serve from the console, and nothing else.
-- Replaced each time the instance is started; useless once it is stopped.
ALTER TABLE serving ADD COLUMN token_hash TEXT;
CREATE UNIQUE INDEX serving_by_token ON serving (token_hash);
