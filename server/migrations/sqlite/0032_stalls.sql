-- Stalled jobs (issue 44): since when a running job has shown no sign of
-- life (no log line, metric point or CPU use for the console's
-- --stall-minutes), NULL while it is not stalled. Set and cleared by the
-- stall watcher; a job that ends keeps the last value for its history.
ALTER TABLE jobs ADD COLUMN stalled_since BIGINT;
