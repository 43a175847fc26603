"""Other packages' internals agentws uses, each reached through one module here.

The ``mcp`` SDK's private names, Hypercorn's replaced classes: an upgrade
breaks in one place. Nothing here imports the rest of agentws.
"""
