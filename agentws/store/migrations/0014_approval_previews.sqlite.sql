-- Lists of queued calls read a preview and the size of each call's
-- arguments, never the arguments themselves (which may be hundreds of KiB),
-- and a cap counts each requester's pending calls.
--
-- SQLite keeps a row's columns in order and a large value overflows into a
-- chain of pages that must be walked to reach any column after it; so the
-- table is made anew with the large columns (arguments, sealed_arguments,
-- result) last, and a list reads one or two pages per row whatever the
-- arguments weigh. Rows queued before this keep a compact-JSON preview.

CREATE TABLE approvals_new (
    id TEXT PRIMARY KEY,
    group_id TEXT NOT NULL REFERENCES workspace_groups (id) ON DELETE CASCADE,
    token_id TEXT REFERENCES mcp_tokens (id) ON DELETE SET NULL,
    session_id TEXT,
    event_id TEXT,
    requested_by TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    capability TEXT NOT NULL CHECK (capability IN ('read', 'write', 'destructive')),
    definition_hash TEXT NOT NULL,
    arguments_hash TEXT NOT NULL,
    arguments_preview TEXT NOT NULL,
    arguments_bytes INTEGER NOT NULL,
    status TEXT NOT NULL
        CHECK (status IN ('pending', 'approved', 'executed', 'failed', 'denied', 'expired')),
    reason TEXT,
    decided_by TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    decided_at TEXT,
    finished_at TEXT,
    reported_at TEXT,
    error TEXT,
    lease_owner TEXT,
    lease_expires_at TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    arguments TEXT NOT NULL,
    sealed_arguments BLOB,
    result TEXT
);

INSERT INTO approvals_new (
    id, group_id, token_id, session_id, event_id, requested_by, tool_name, capability,
    definition_hash, arguments_hash, arguments_preview, arguments_bytes, status, reason,
    decided_by, created_at, expires_at, decided_at, finished_at, reported_at, error,
    lease_owner, lease_expires_at, attempts, arguments, sealed_arguments, result
)
SELECT
    id, group_id, token_id, session_id, event_id, requested_by, tool_name, capability,
    definition_hash, arguments_hash,
    CASE WHEN length(arguments) <= 300 THEN arguments ELSE substr(arguments, 1, 299) || '…' END,
    length(CAST(arguments AS BLOB)), status, reason,
    decided_by, created_at, expires_at, decided_at, finished_at, reported_at, error,
    lease_owner, lease_expires_at, attempts, arguments, sealed_arguments, result
FROM approvals;

DROP TABLE approvals;
ALTER TABLE approvals_new RENAME TO approvals;

CREATE INDEX approvals_status ON approvals (status, created_at);
CREATE INDEX approvals_token ON approvals (token_id, created_at);
CREATE INDEX approvals_unreported ON approvals (reported_at, event_id);
CREATE INDEX approvals_created ON approvals (created_at, id);
CREATE INDEX approvals_requester ON approvals (requested_by, status, expires_at);
