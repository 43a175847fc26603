"""A remote connector's questions passed back to the MCP caller.

The caller's channel by era, rounds of stateless calls, and the calls
that wait for their client's input.
"""
