"""The approval queue: calls waiting for an admin, the admin's decisions, and telling callers.

- :mod:`~agentws.tools.approval_queue` (under tools: the gate queues calls)
  puts a call in the queue and reads it back (``get_approval``,
  ``agentws approval list|show``);
- :mod:`~agentws.approvals.decisions` approves, denies, retries a failed
  call and expires (decisions are recorded, wherever they are made);
- :mod:`~agentws.approvals.runs` runs approved calls in the service, with
  its settings, once, on one instance;
- :mod:`~agentws.approvals.notifier` tells a caller's open MCP session the
  outcome, and expires requests whose time is up.
"""
