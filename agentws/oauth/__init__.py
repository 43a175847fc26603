"""OAuth 2.1 for MCP clients: agentws as its group endpoints' authorization server.

What the authorization server stores is :mod:`agentws.oauth.provider`,
an administrator's consent is :mod:`agentws.oauth.consent`, and what a
client may register is :mod:`agentws.oauth.client_rules`; the endpoints
themselves are the door, :mod:`agentws.doors.oauth`.
"""
