-- OAuth 2.1 for MCP clients. An access token is an mcp_tokens row with an
-- expiry and the client holding it (so revocation, the Connect page and the
-- audit log treat it as any token); the family ties it to its consent.

ALTER TABLE mcp_tokens ADD COLUMN expires_at {ts};
ALTER TABLE mcp_tokens ADD COLUMN oauth_client_id TEXT;
ALTER TABLE mcp_tokens ADD COLUMN oauth_family_id TEXT;
CREATE INDEX mcp_tokens_oauth_family ON mcp_tokens (oauth_family_id);
CREATE INDEX mcp_tokens_oauth_client ON mcp_tokens (oauth_client_id);

CREATE TABLE oauth_clients (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    metadata {json} NOT NULL,
    sealed_secret TEXT,
    created_at {ts} NOT NULL,
    fetched_at {ts}
);
CREATE INDEX oauth_clients_kind ON oauth_clients (kind, created_at);

-- An authorization request until consent, then its code until exchanged.
CREATE TABLE oauth_grants (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL,
    group_id TEXT NOT NULL REFERENCES workspace_groups (id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    redirect_uri_explicit {bool} NOT NULL,
    code_challenge TEXT NOT NULL,
    resource TEXT NOT NULL,
    state TEXT,
    status TEXT NOT NULL,
    code_hash TEXT UNIQUE,
    family_id TEXT,
    decided_by TEXT,
    created_at {ts} NOT NULL,
    expires_at {ts} NOT NULL
);
CREATE INDEX oauth_grants_expiry ON oauth_grants (expires_at);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

CREATE TABLE oauth_refresh_tokens (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    family_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    group_id TEXT NOT NULL REFERENCES workspace_groups (id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    resource TEXT NOT NULL,
    created_at {ts} NOT NULL,
    expires_at {ts} NOT NULL,
    spent_at {ts},
    revoked_at {ts}
);
CREATE INDEX oauth_refresh_tokens_family ON oauth_refresh_tokens (family_id);
CREATE INDEX oauth_refresh_tokens_client ON oauth_refresh_tokens (client_id);
