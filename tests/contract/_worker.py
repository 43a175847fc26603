"""One of the processes of ``test_two_processes_open_and_write_at_once``.

Usage: ``python _worker.py URL PREFIX COUNT``. Prints ``ready`` once its
imports are done and waits for a line on stdin, so that the test can start
two workers' ``open_store`` (and so their migrations) at the same moment.
Then inserts COUNT workspaces ``PREFIX-0``... and prints ``done``.
"""

from __future__ import annotations

import sys

import trio

from agentws.domain.models import Workspace
from agentws.store import open_store


async def main(url: str, prefix: str, count: int) -> None:
    async with open_store(url, pool_size=2) as store:
        for i in range(count):
            await store.insert(Workspace(slug=f"{prefix}-{i}", name=f"{prefix} {i}"))


if __name__ == "__main__":
    url, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print("ready", flush=True)
    sys.stdin.readline()
    trio.run(main, url, prefix, count)
    print("done", flush=True)
