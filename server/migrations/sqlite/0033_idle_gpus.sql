-- Idle GPUs (issue 44): since when the GPUs a running job holds have
-- stayed under 5% utilisation for the console's --stall-minutes, NULL
-- otherwise. Set and cleared by the stall watcher.
ALTER TABLE jobs ADD COLUMN gpus_idle_since BIGINT;
