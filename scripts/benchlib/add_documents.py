"""Add many documents to a library in one process, the way ``agentws doc add`` adds one.

``agentws doc add`` takes one file per run, and 200 runs of the CLI cost a
minute of interpreter start-ups; this calls the same two functions the
command does (:func:`agentws.libraries.load_document_file`, then
:func:`agentws.libraries.add_document`) for each file, with the same actor.

Run: ``python add_documents.py DATABASE_URL WORKSPACE LIBRARY POLICY FILE...``;
prints ``{"added": N}``.
"""

from __future__ import annotations

import getpass
import json
import sys

import trio

from agentws.libraries import add_document, load_document_file
from agentws.store import open_store


async def _add(
    database_url: str, workspace: str, library: str, policy: str, files: list[str]
) -> int:
    actor = f"cli:{getpass.getuser()}"
    async with open_store(database_url) as store:
        for path in files:
            loaded = load_document_file(path)
            await add_document(
                store,
                workspace,
                library,
                slug=loaded.slug,
                title=loaded.title,
                body=loaded.body,
                mime_type=loaded.mime_type,
                policy=policy,
                actor=actor,
            )
    return len(files)


def main() -> None:
    database_url, workspace, library, policy, *files = sys.argv[1:]
    added = trio.run(_add, database_url, workspace, library, policy, files)
    print(json.dumps({"added": added}))


if __name__ == "__main__":
    main()
