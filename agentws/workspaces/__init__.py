"""Workspaces, groups and their MCP tokens: the operations every door calls."""
