"""What a process is configured with: its settings and the service key.

Settings are read once from the environment; the service key seals
secrets at rest.
"""
