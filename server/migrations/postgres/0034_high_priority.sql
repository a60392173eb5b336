-- The queue (issue 44): whether a member may submit high-priority jobs in
-- the account (owners always may). Set by an owner on the Account page.
ALTER TABLE memberships ADD COLUMN high_priority BIGINT NOT NULL DEFAULT 0;
