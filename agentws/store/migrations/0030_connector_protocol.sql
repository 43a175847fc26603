-- The MCP revision a remote MCP connector's link speaks: 'auto' (a handshake
-- revision when the remote speaks one, so that it can ask its caller mid-call;
-- else 2026-07-28) or one revision an admin pinned (agentws.connectors.remote_mcp.negotiate).

ALTER TABLE connectors ADD COLUMN protocol TEXT NOT NULL DEFAULT 'auto';
