"""agentws: a self-hostable agent workspace service."""

__version__ = "0.1.0"
