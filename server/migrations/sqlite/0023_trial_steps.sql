-- The step of a trial's newest objective point: a trial stopped early is
-- judged by how far it got (the search ranks it so), and its page says it.
ALTER TABLE experiment_trials ADD COLUMN step BIGINT;
