"""The doors: what answers HTTP requests, each over the services it uses.

``api`` (the admin JSON API), ``dashboard``, ``mcp`` (group endpoints),
``webhooks`` (``POST /hooks/<token>``) and ``oauth`` (discovery and the
authorization server's endpoints, in front of the MCP door). ``views``
is the JSON the admin API and the CLI's ``--json`` share. Nothing below
the doors knows about HTTP.
"""
