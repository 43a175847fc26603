"""OAuth 2.1 for MCP clients: agentws as its group endpoints' authorization server.

Discovery and the protocol's endpoints are :mod:`agentws.oauth.door` (the
``mcp`` SDK's handlers), what they store is :mod:`agentws.oauth.provider`,
and an administrator's consent is :mod:`agentws.oauth.consent`.
"""
