"""The MCP door: group endpoints over Streamable HTTP and legacy SSE.

``endpoint`` moves HTTP to and from sessions, ``guard`` checks ``Host`` and
``Origin``, ``auth`` resolves bearer tokens, ``sessions`` owns the running
sessions, and ``handlers`` answers tools, resources and prompts.
"""
