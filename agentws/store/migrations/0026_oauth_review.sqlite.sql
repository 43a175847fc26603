-- OAuth after the second outside review.
--
-- A client metadata document is kept as long as its cache headers say
-- (within a floor and a ceiling): until fresh_until.
--
-- An authorization request may name a group endpoint that does not exist:
-- /oauth/authorize answers it as it answers one that does (consent page),
-- so that nobody learns which workspaces and groups exist before an
-- administrator has signed in; the consent page then says so. Its group is
-- NULL. SQLite cannot drop a NOT NULL, so the table is made anew.

CREATE TABLE oauth_grants_new (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL,
    group_id TEXT REFERENCES workspace_groups (id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    redirect_uri_explicit INTEGER NOT NULL,
    code_challenge TEXT NOT NULL,
    resource TEXT NOT NULL,
    state TEXT,
    status TEXT NOT NULL,
    code_hash TEXT UNIQUE,
    family_id TEXT,
    decided_by TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);

INSERT INTO oauth_grants_new (
    id, client_id, group_id, scope, redirect_uri, redirect_uri_explicit, code_challenge,
    resource, state, status, code_hash, family_id, decided_by, created_at, expires_at
)
SELECT
    id, client_id, group_id, scope, redirect_uri, redirect_uri_explicit, code_challenge,
    resource, state, status, code_hash, family_id, decided_by, created_at, expires_at
FROM oauth_grants;

DROP TABLE oauth_grants;
ALTER TABLE oauth_grants_new RENAME TO oauth_grants;

CREATE INDEX oauth_grants_expiry ON oauth_grants (expires_at);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

ALTER TABLE oauth_clients ADD COLUMN fresh_until TEXT;
