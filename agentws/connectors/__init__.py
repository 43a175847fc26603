"""Connectors: third-party tools a group offers (remote MCP servers, native integrations).

``url_guard`` decides which outbound addresses connectors may reach.
"""
