"""MCP sessions: who calls, one session, and the supervisor of them all.

Bearer-token authentication, one session (its caller, the SDK's serving
of it, its streams' replay), and the supervisor of every session.
"""
