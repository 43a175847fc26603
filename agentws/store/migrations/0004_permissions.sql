-- Permissions and approvals: the approval queue's table and per-tool
-- permissions (0005 makes the catalog version move with permissions).

-- Nothing wrote approvals before this version, so the table is made anew
-- with the columns the approval queue needs.
DROP TABLE approvals;

CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    group_id TEXT NOT NULL REFERENCES workspace_groups (id) ON DELETE CASCADE,
    token_id TEXT REFERENCES mcp_tokens (id) ON DELETE SET NULL,
    session_id TEXT,
    requested_by TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    capability TEXT NOT NULL CHECK (capability IN ('read', 'write', 'destructive')),
    definition_hash TEXT NOT NULL,
    arguments {json} NOT NULL,
    sealed_arguments {bytes},
    arguments_hash TEXT NOT NULL,
    status TEXT NOT NULL
        CHECK (status IN ('pending', 'approved', 'executed', 'failed', 'denied', 'expired')),
    reason TEXT,
    decided_by TEXT,
    result {json},
    error TEXT,
    created_at {ts} NOT NULL,
    expires_at {ts} NOT NULL,
    decided_at {ts},
    finished_at {ts}
);
CREATE INDEX approvals_status ON approvals (status, created_at);
CREATE INDEX approvals_token ON approvals (token_id, created_at);

-- An admin's permission for a tool, per group or (group_id NULL) for the
-- whole workspace. A group's own row wins over the workspace's.
CREATE TABLE tool_permissions (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    group_id TEXT REFERENCES workspace_groups (id) ON DELETE CASCADE,
    tool_name TEXT NOT NULL,
    permission TEXT NOT NULL
        CHECK (permission IN ('allow', 'requires_approval', 'requires_confirmation', 'deny')),
    definition_hash TEXT NOT NULL,
    set_by TEXT NOT NULL,
    created_at {ts} NOT NULL,
    updated_at {ts} NOT NULL
);
-- NULLs are distinct in UNIQUE constraints, so each level gets its own index.
CREATE UNIQUE INDEX tool_permissions_workspace
    ON tool_permissions (workspace_id, tool_name) WHERE group_id IS NULL;
CREATE UNIQUE INDEX tool_permissions_group
    ON tool_permissions (group_id, tool_name) WHERE group_id IS NOT NULL;

CREATE INDEX audit_log_action ON audit_log (action, created_at);
