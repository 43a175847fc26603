"""The caller channel: how a running tool call reaches back to the caller who made it.

A door that can carry a remote's progress, log messages, elicitation and
sampling requests to its caller hands the permission gate a
:class:`CallerChannel` with the call; the gate passes it to the runner and
the runner to the remote MCP connector's link
(:mod:`agentws.connectors.relay` routes what the remote sends to it). Each
part is optional: a channel offers what its caller can take (``None``
otherwise), and a door with no caller to reach (the webhook agent) passes
no channel at all. The MCP door's, for session eras, is
``agentws.doors.mcp.relay.relay_channel``. A channel whose caller takes a remote's
``input_required`` answers itself (2026-07-28 to 2026-07-28) is a
:class:`RoundChannel`.
"""

from __future__ import annotations

from agentws.connectors.relay import (
    CallerChannel,
    ElicitFn,
    LogFn,
    ProgressFn,
    RemoteRound,
    RootsFn,
    RoundChannel,
    SampleFn,
)

__all__ = [
    "CallerChannel",
    "ElicitFn",
    "LogFn",
    "ProgressFn",
    "RemoteRound",
    "RootsFn",
    "RoundChannel",
    "SampleFn",
]
