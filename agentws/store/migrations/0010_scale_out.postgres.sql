-- Instances of the service sharing this database, for routing MCP sessions:
-- a session's id names its instance, and a request for it that reaches
-- another instance is forwarded to ``internal_url`` while the owner's
-- heartbeat is recent.

CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    internal_url TEXT NOT NULL,
    started_at {ts} NOT NULL,
    heartbeat_at {ts} NOT NULL,
    draining {bool} NOT NULL
);

-- Change notifications: every instance LISTENs on channel "agentws" and
-- hears "<schema>:<topic>" when something it keeps in memory, or waits
-- for, changes. Sent by triggers, so a change made by any writer (another
-- instance, the CLI) is announced, and only when its transaction commits.
-- Identical notifications of one transaction are folded into one.

CREATE FUNCTION agentws_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentws', TG_TABLE_SCHEMA || ':' || TG_ARGV[0]);
    RETURN NULL;
END
$$;

-- A token revoked or deleted (with its group): close its sessions.

CREATE TRIGGER mcp_tokens_revoked AFTER UPDATE ON mcp_tokens
    FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at)
    EXECUTE FUNCTION agentws_notify('tokens');

CREATE TRIGGER mcp_tokens_deleted AFTER DELETE ON mcp_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION agentws_notify('tokens');

-- An approval decided, run, expired or deleted: tell the session that asked,
-- and report it in the event's channel.

CREATE TRIGGER approvals_changed AFTER UPDATE ON approvals
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION agentws_notify('approvals');

CREATE TRIGGER approvals_deleted AFTER DELETE ON approvals
    FOR EACH STATEMENT EXECUTE FUNCTION agentws_notify('approvals');

-- The catalog version moved (see 0003): tool lists kept in memory are stale.

CREATE TRIGGER catalog_version_moved AFTER UPDATE ON catalog_version
    FOR EACH STATEMENT EXECUTE FUNCTION agentws_notify('catalog');
