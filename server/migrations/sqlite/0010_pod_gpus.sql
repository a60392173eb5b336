-- The GPUs (indices, comma-separated) the local executor gave a replica:
-- shown beside the pod, and what its GPU charts and GPU-hours count.
ALTER TABLE pods ADD COLUMN gpus TEXT NOT NULL DEFAULT '';
