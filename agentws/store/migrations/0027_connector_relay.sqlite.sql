-- A remote MCP connector's requests to callers during a call (elicitation,
-- sampling, roots) can be turned off per connector: relay_requests false
-- refuses them (agentws.connectors.relayed_requests).

ALTER TABLE connectors ADD COLUMN relay_requests INTEGER NOT NULL DEFAULT 1;
