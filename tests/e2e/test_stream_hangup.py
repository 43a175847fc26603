"""A held SSE stream costs no task of its own, and ends as soon as its client hangs up.

On HTTP/1.1 the connection tells its response that the client left
(:mod:`agentws.bridges.hangups`), so the stream's writer needs no task
beside it reading for ``http.disconnect``: ten thousand open streams are
ten thousand tasks fewer, and ending them cancels no task.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import trio

from tests.e2e.mcp_support import legacy_stream, running
from tests.e2e.polling import wait_for


def _tasks() -> Iterator[trio.lowlevel.Task]:
    pending = [trio.lowlevel.current_root_task()]
    while pending:
        task = pending.pop()
        if task is None:
            continue
        yield task
        pending.extend(child for nursery in task.child_nurseries for child in nursery.child_tasks)


def _watchers() -> int:
    """Tasks reading a response's ``receive`` for the client's disconnect."""
    return sum(1 for task in _tasks() if task.name.endswith("cancel_on_disconnect"))


async def test_a_held_stream_has_no_watcher_task_and_ends_when_its_client_hangs_up(
    tmp_path: Path,
) -> None:
    # No keep-alive comment within the test: no failed write shows the hang-up.
    async with running(tmp_path, with_library=False, AGENTWS_SSE_KEEPALIVE_S="600") as server:
        async with legacy_stream(server) as (session_id, _stream):
            assert server.runtime.sessions.get(session_id) is not None
            assert _watchers() == 0
        await wait_for(
            lambda: server.runtime.sessions.get(session_id) is None,
            what="the session closed when its client hung up",
        )
