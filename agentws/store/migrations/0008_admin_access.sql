-- Admin access: dashboard sessions and admin API tokens. Only SHA-256
-- hashes of the cookie and of the tokens are stored.

CREATE TABLE admin_sessions (
    id TEXT PRIMARY KEY,
    admin_id TEXT NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    csrf_token TEXT NOT NULL,
    created_at {ts} NOT NULL,
    expires_at {ts} NOT NULL,
    last_seen_at {ts} NOT NULL
);
CREATE INDEX admin_sessions_expiry ON admin_sessions (expires_at);

CREATE TABLE admin_tokens (
    id TEXT PRIMARY KEY,
    admin_id TEXT NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at {ts} NOT NULL,
    last_used_at {ts},
    revoked_at {ts},
    UNIQUE (admin_id, name)
);
