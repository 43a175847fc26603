"""What the search query alone costs: the floor under both servers' CPU per call.

Both servers of the ``tools/call search_context`` rows run an FTS5 query
for every call (agentws its own, over the libraries the group's tool catalog
holds; the reference the same SQL over every document: :mod:`benchlib.search`).
This module runs each of the two queries for the benchmark's queries, in this
process, on one read-only connection to a copy of the database, and measures the CPU time
of the thread (``time.thread_time``) per query, rows fetched included. No
HTTP, no JSON-RPC, no event loop: what is left of each server's CPU per
call once this is taken away is the server's own work.

The report uses it to say how much room a throughput target leaves: when
both servers are held to the same share of the machine (each runs its
event loop under one interpreter lock, and both use about the same cores
under this load), calls/s go as the inverse of CPU per call, so ``k`` times
the reference's calls/s needs agentws's CPU per call at most the
reference's divided by ``k``; less its query, that is what agentws may
spend on everything else.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchlib.search import search

__all__ = ["measure", "note"]

# Enough passes over the queries for a stable mean (each query runs in ~2 ms).
_PASSES = 5


def _agentws_search(
    conn: sqlite3.Connection, libraries: Sequence[str], query: str, limit: int
) -> int:
    # agentws's own SQL and parameters, as CatalogQueries.search_documents sends them
    # for search_context: over the group's libraries, which its tool catalog holds.
    from agentws.store import sql_catalog
    from agentws.store.sqlite import _to_sqlite

    terms = sql_catalog._search_terms(query)
    if not terms:
        return 0
    phrases = [f'"{term}"' for term in terms]
    sql = _to_sqlite(sql_catalog._sqlite_search(len(terms), limit, len(libraries)))
    args = (" OR ".join(phrases), sql_catalog._title_key(query), len(terms) + 1)
    return len(conn.execute(sql, (*libraries, *args, *phrases)).fetchall())


def _libraries(conn: sqlite3.Connection, group_id: str) -> list[str]:
    """The group's library ids in the order they were attached (as its catalog holds them)."""
    rows = conn.execute(
        "SELECT library_id FROM group_libraries WHERE group_id = ? ORDER BY created_at, id",
        (group_id,),
    ).fetchall()
    return [str(row[0]) for row in rows]


def _group_id(conn: sqlite3.Connection, workspace: str, group: str) -> str:
    row = conn.execute(
        "SELECT g.id FROM workspace_groups g JOIN workspaces w ON w.id = g.workspace_id"
        " WHERE w.slug = ? AND g.slug = ?",
        (workspace, group),
    ).fetchone()
    if row is None:
        raise LookupError(f"no group {workspace}/{group} in the database")
    return str(row[0])


def _cpu_ms(run: Callable[[str], Any], queries: Sequence[str]) -> float:
    for query in queries:  # warm the page cache and the statement cache
        run(query)
    started = time.thread_time()
    for _ in range(_PASSES):
        for query in queries:
            run(query)
    return 1000 * (time.thread_time() - started) / (_PASSES * len(queries))


def measure(
    database: Path, workspace: str, group: str, queries: Sequence[str], limit: int
) -> dict[str, float]:
    """CPU ms per query of agentws's search and of the reference's, on ``database``."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        libraries = _libraries(conn, _group_id(conn, workspace, group))
        return {
            "agentws_ms": _cpu_ms(lambda q: _agentws_search(conn, libraries, q, limit), queries),
            "reference_ms": _cpu_ms(lambda q: search(conn, q, limit), queries),
        }
    finally:
        conn.close()


def note(label: str, floor: dict[str, float], row: dict[str, Any], target: float) -> str:
    """One report line: the query's part of each server's CPU per call, and a target's room."""
    per_call = {
        name: 1000 * row[name]["server_cpu_s"] / row[name]["calls"]
        for name in ("agentws", "reference")
        if row[name].get("server_cpu_s") is not None and row[name].get("calls")
    }
    text = (
        f"- {label}: the search query alone takes {floor['agentws_ms']:.2f} ms of CPU "
        f"(agentws's, over the group's libraries) and {floor['reference_ms']:.2f} ms (the "
        "reference's), measured on its own in one thread"
    )
    if len(per_call) < 2:
        return text + "."
    ours = per_call["agentws"] - floor["agentws_ms"]
    theirs = per_call["reference"] - floor["reference_ms"]
    budget = per_call["reference"] / target
    return (
        text + f"; beyond it, agentws spends {ours:.2f} ms per call and the reference "
        f"{theirs:.2f} ms. At the reference's {per_call['reference']:.2f} ms per call, "
        f"{target:g}x its calls/s needs agentws at no more than {budget:.2f} ms per call: "
        f"{budget - floor['agentws_ms']:.2f} ms beyond its query for HTTP, the token, the "
        "permission check, the audit record and JSON-RPC."
    )
