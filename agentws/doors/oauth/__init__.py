"""The OAuth door: discovery documents and the authorization server's endpoints.

Plain ASGI in front of the MCP door over the ``mcp`` SDK's handlers,
reading bodies itself; what they store is :mod:`agentws.oauth`.
"""
