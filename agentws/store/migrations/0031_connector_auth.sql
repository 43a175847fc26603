-- A remote MCP connector's own identity upstream (agentws.connectors.upstream_auth):
-- its auth mode and settings (none secret; a client secret or key is the sealed
-- secret), the grant its upstream's authorization server issued it, sealed, and
-- the authorizations admins started that the upstream has not yet answered.

ALTER TABLE connectors ADD COLUMN auth TEXT NOT NULL DEFAULT 'static';
ALTER TABLE connectors ADD COLUMN auth_settings {json} NOT NULL DEFAULT '{{}}';

CREATE TABLE connector_grants (
    id TEXT PRIMARY KEY,
    connector_id TEXT NOT NULL UNIQUE REFERENCES connectors (id) ON DELETE CASCADE,
    tokens {bytes},
    client_info {bytes},
    token_endpoint TEXT,
    revocation_endpoint TEXT,
    resource TEXT,
    expires_at {ts},
    scope TEXT,
    wanted_scope TEXT,
    state TEXT NOT NULL,
    reason TEXT,
    lease_holder TEXT,
    lease_until {ts},
    version INTEGER NOT NULL,
    updated_at {ts} NOT NULL
);

CREATE TABLE connector_authorizations (
    id TEXT PRIMARY KEY,
    connector_id TEXT NOT NULL REFERENCES connectors (id) ON DELETE CASCADE,
    state_hash TEXT NOT NULL UNIQUE,
    started_by TEXT NOT NULL,
    session_hash TEXT,
    code {bytes},
    iss TEXT,
    error TEXT,
    created_at {ts} NOT NULL,
    expires_at {ts} NOT NULL
);
CREATE INDEX connector_authorizations_expiry ON connector_authorizations (expires_at);
