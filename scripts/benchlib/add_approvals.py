"""Queue many pending calls with large arguments for one token, in one process.

Stands in for an MCP client that queued them (``tools/call`` of a write
tool, one at a time, each through the permission gate): the calls are
written straight into the approval queue as the gate stores them, pending,
asked by the token, with arguments of the given size (one string, as
compact JSON). Deterministic: the n-th call's argument starts with its
number.

Run: ``python add_approvals.py DATABASE_URL WORKSPACE GROUP TOKEN_NAME COUNT BYTES``;
prints ``{"approvals": N, "argument_bytes": B}``.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta

import trio

from agentws.domain.models import Approval, Capability, McpToken, arguments_hash
from agentws.domain.rules import utcnow
from agentws.store import open_store

_TOOL = "tracker_create_issue"
# Rows per transaction: a few MiB each, so memory stays small whatever the count.
_CHUNK = 16


def _arguments(n: int, size: int) -> dict[str, str]:
    head = f"{n:06d} "
    # {"body":"..."} is 11 bytes around the string.
    return {"body": head + "x" * max(0, size - 11 - len(head))}


async def _main(
    url: str, workspace: str, group: str, token_name: str, count: int, size: int
) -> None:
    async with open_store(url, pool_size=1) as store:
        found = await store.group_by_slug(workspace, group)
        token = await store.find(McpToken, group_id=found.id, name=token_name)
        if token is None:
            raise SystemExit(f"no token {token_name!r} in {workspace}/{group}")
        now = utcnow()
        for start in range(0, count, _CHUNK):
            calls = []
            for n in range(start, min(count, start + _CHUNK)):
                arguments = _arguments(n, size)
                calls.append(
                    Approval(
                        group_id=found.id,
                        token_id=token.id,
                        session_id=None,
                        requested_by=f"mcp:{token.id}",
                        tool_name=_TOOL,
                        capability=Capability.WRITE,
                        definition_hash="0" * 64,
                        arguments=arguments,
                        arguments_hash=arguments_hash(_TOOL, arguments),
                        created_at=now - timedelta(seconds=count - n),
                        expires_at=now + timedelta(days=7),
                    )
                )
            await store.insert_many(calls)
    real = len(json.dumps(_arguments(0, size), separators=(",", ":")).encode())
    print(json.dumps({"approvals": count, "argument_bytes": real}))


if __name__ == "__main__":
    _, url, ws, grp, tok, n, b = sys.argv
    trio.run(_main, url, ws, grp, tok, int(n), int(b))
