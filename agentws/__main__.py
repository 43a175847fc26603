"""``python -m agentws`` is the ``agentws`` command."""

from agentws.cli import main

raise SystemExit(main())
