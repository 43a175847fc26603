-- The first schema. Placeholders in braces are filled per dialect:
-- {ts} instant, {json} JSON text, {bytes} binary, {bool} boolean.

CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    slug TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    created_at {ts} NOT NULL
);

CREATE TABLE workspace_groups (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at {ts} NOT NULL,
    UNIQUE (workspace_id, slug)
);

CREATE TABLE mcp_tokens (
    id TEXT PRIMARY KEY,
    group_id TEXT NOT NULL REFERENCES workspace_groups (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    hint TEXT NOT NULL,
    scope TEXT NOT NULL,
    created_at {ts} NOT NULL,
    last_used_at {ts},
    revoked_at {ts}
);
CREATE INDEX mcp_tokens_group ON mcp_tokens (group_id);

CREATE TABLE connectors (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    url TEXT,
    headers {json} NOT NULL,
    secret {bytes},
    active {bool} NOT NULL,
    created_at {ts} NOT NULL,
    updated_at {ts} NOT NULL,
    UNIQUE (workspace_id, name)
);

CREATE TABLE group_connectors (
    id TEXT PRIMARY KEY,
    group_id TEXT NOT NULL REFERENCES workspace_groups (id) ON DELETE CASCADE,
    connector_id TEXT NOT NULL REFERENCES connectors (id) ON DELETE CASCADE,
    created_at {ts} NOT NULL,
    UNIQUE (group_id, connector_id)
);

CREATE TABLE cached_tools (
    id TEXT PRIMARY KEY,
    connector_id TEXT NOT NULL REFERENCES connectors (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    input_schema {json} NOT NULL,
    annotations {json} NOT NULL,
    definition_hash TEXT NOT NULL,
    label TEXT,
    suggested_label TEXT,
    fetched_at {ts} NOT NULL,
    UNIQUE (connector_id, name)
);

CREATE TABLE libraries (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at {ts} NOT NULL,
    UNIQUE (workspace_id, slug)
);

CREATE TABLE group_libraries (
    id TEXT PRIMARY KEY,
    group_id TEXT NOT NULL REFERENCES workspace_groups (id) ON DELETE CASCADE,
    library_id TEXT NOT NULL REFERENCES libraries (id) ON DELETE CASCADE,
    created_at {ts} NOT NULL,
    UNIQUE (group_id, library_id)
);

CREATE TABLE context_documents (
    id TEXT PRIMARY KEY,
    library_id TEXT NOT NULL REFERENCES libraries (id) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    policy TEXT NOT NULL CHECK (policy IN ('spine', 'on_demand', 'never')),
    created_at {ts} NOT NULL,
    updated_at {ts} NOT NULL,
    UNIQUE (library_id, slug)
);

CREATE TABLE skills (
    id TEXT PRIMARY KEY,
    library_id TEXT NOT NULL REFERENCES libraries (id) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    description TEXT NOT NULL,
    prompt TEXT NOT NULL,
    assets {json} NOT NULL,
    created_at {ts} NOT NULL,
    updated_at {ts} NOT NULL,
    UNIQUE (library_id, slug)
);

CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    group_id TEXT REFERENCES workspace_groups (id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    channel TEXT NOT NULL,
    prompt TEXT NOT NULL,
    active {bool} NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    verification TEXT NOT NULL,
    secret {bytes},
    rate_per_min INTEGER NOT NULL,
    burst INTEGER NOT NULL,
    max_body_bytes INTEGER NOT NULL,
    concurrency INTEGER NOT NULL,
    created_at {ts} NOT NULL,
    updated_at {ts} NOT NULL,
    UNIQUE (workspace_id, name)
);

CREATE TABLE events (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
    body {bytes} NOT NULL,
    headers {json} NOT NULL,
    dedup_key TEXT,
    attempts INTEGER NOT NULL,
    lease_owner TEXT,
    lease_expires_at {ts},
    error TEXT,
    message_id TEXT,
    received_at {ts} NOT NULL,
    started_at {ts},
    finished_at {ts},
    UNIQUE (webhook_id, dedup_key)
);
CREATE INDEX events_status ON events (status, received_at);

CREATE TABLE chat_messages (
    id TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    text TEXT NOT NULL,
    event_id TEXT UNIQUE REFERENCES events (id) ON DELETE SET NULL,
    thread TEXT,
    external_id TEXT,
    created_at {ts} NOT NULL
);
CREATE INDEX chat_messages_channel ON chat_messages (channel, created_at);

CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    group_id TEXT NOT NULL REFERENCES workspace_groups (id) ON DELETE CASCADE,
    token_id TEXT REFERENCES mcp_tokens (id) ON DELETE SET NULL,
    tool_name TEXT NOT NULL,
    arguments {json} NOT NULL,
    arguments_hash TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied')),
    reason TEXT,
    decided_by TEXT,
    result {json},
    created_at {ts} NOT NULL,
    decided_at {ts}
);
CREATE INDEX approvals_status ON approvals (status, created_at);

CREATE TABLE audit_log (
    id TEXT PRIMARY KEY,
    workspace_id TEXT REFERENCES workspaces (id) ON DELETE SET NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    detail {json} NOT NULL,
    created_at {ts} NOT NULL
);
CREATE INDEX audit_log_time ON audit_log (created_at);

CREATE TABLE admins (
    id TEXT PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at {ts} NOT NULL
);
