"""The ``agentws`` command: run the service and administer it from a shell.

:mod:`agentws.cli.main` builds the parser and runs a command; each command
group has its module here; :mod:`agentws.cli.output` holds what they share.
"""

from agentws.cli.main import main

__all__ = ["main"]
