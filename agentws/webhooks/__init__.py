"""Incoming webhooks: management, intake, the queue's worker, replays, rotation.

The intake is what the door hands deliveries to; the door itself is
:mod:`agentws.doors.webhooks`.
"""
