-- Approved calls run in the service, not where the decision was made, and
-- confirm tokens outlive the MCP session that received them.

-- An approved call is claimed by one instance, which holds a lease on it
-- while it runs (renewed as it goes): ``status = 'approved'`` with no
-- ``lease_owner`` waits for a service; with one, it is running there. A
-- lease that expires (its instance died) makes the call ``failed``, never
-- run again on its own: whether the upstream acted cannot be known.
-- ``attempts`` counts the runs begun (an admin may retry a failed call).
ALTER TABLE approvals ADD COLUMN lease_owner TEXT;
ALTER TABLE approvals ADD COLUMN lease_expires_at {ts};
ALTER TABLE approvals ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;

-- Until this version ``approved`` meant "running in the process that
-- approved it": one still approved was cut off mid-run, and must not run
-- again unasked.
UPDATE approvals SET status = 'failed', attempts = 1,
    finished_at = COALESCE(decided_at, created_at),
    error = 'interrupted while it ran (before an upgrade); whether it acted is unknown: check, then retry it if needed'
    WHERE status = 'approved';

-- One-time confirm tokens for destructive calls, by the SHA-256 of the
-- token: bound to the MCP bearer token that received it, the tool and the
-- arguments' hash, and taken (deleted) by the call that presents it.
CREATE TABLE confirm_tokens (
    id TEXT PRIMARY KEY,
    token_id TEXT NOT NULL REFERENCES mcp_tokens (id) ON DELETE CASCADE,
    tool_name TEXT NOT NULL,
    arguments_hash TEXT NOT NULL,
    created_at {ts} NOT NULL,
    expires_at {ts} NOT NULL
);
CREATE INDEX confirm_tokens_token ON confirm_tokens (token_id, created_at);
CREATE INDEX confirm_tokens_expiry ON confirm_tokens (expires_at);
