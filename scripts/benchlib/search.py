"""The reference server's ``search_context``: agentws's SQLite FTS5 search, minus agentws.

The reference opens a copy of the benchmark's agentws database, so both
servers search the same rows through the same FTS5 index
(``context_documents_fts``: external content, ``porter unicode61``). The
query below is agentws's SQLite search (``agentws/store/sql_catalog.py``) without
what limits it to a group's libraries: the same words quoted and
OR-ed, the same per-word match counts, the same ``bm25`` weights and
``snippet``, the same score and order. The result is formatted as
``agentws/tools/builtins.py`` formats it.

Keep this in step with those two files: ``scripts/bench mcp`` compares
both servers' answers to every query and reports any that differ.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

__all__ = ["Hit", "format_results", "search", "search_terms"]

# Mirrors of agentws/store/sql_catalog.py's search constants.
_MAX_HITS = 50
_MAX_TERMS = 16
_MAX_TERM_CHARS = 100
_WORD = re.compile(r"[^\W_]+")
_TITLE_WEIGHT = 10.0
_SNIPPET_WORDS = 24
_MARK = "**"
_FTS = "context_documents_fts"

Hit = dict[str, Any]


def search_terms(query: str) -> list[str]:
    """The distinct words of ``query``, lowercased, in order, at most 16."""
    terms: list[str] = []
    for word in _WORD.findall(query.lower()):
        if len(word) <= _MAX_TERM_CHARS and word not in terms:
            terms.append(word)
    return terms[:_MAX_TERMS]


def _sql(n_terms: int, limit: int) -> str:
    bm25 = f"bm25({_FTS}, {_TITLE_WEIGHT}, 1.0)"
    matched = " + ".join(
        f"(d.rowid IN (SELECT rowid FROM {_FTS} WHERE {_FTS} MATCH ?{4 + i}))"
        for i in range(n_terms)
    )
    # As agentws does: snippet() only for the hits returned.
    return (
        "WITH hits AS (SELECT d.rowid AS hit_rowid, d.id AS document_id, d.slug, d.title,"
        " d.created_at,"
        " (CASE WHEN lower(trim(d.title)) = lower(?2) THEN ?3 ELSE 0 END)"
        f" + {matched} + (-{bm25}) / (1.0 - {bm25}) AS score"
        f" FROM {_FTS} JOIN context_documents d ON d.rowid = {_FTS}.rowid"
        f" WHERE {_FTS} MATCH ?1 AND d.policy <> 'never'"
        f" ORDER BY score DESC, d.created_at, d.id LIMIT {int(limit)})"
        " SELECT hits.document_id, hits.slug, hits.title,"
        f" snippet({_FTS}, 1, '{_MARK}', '{_MARK}', '…', {_SNIPPET_WORDS}) AS snippet,"
        " hits.score"
        f" FROM hits JOIN {_FTS} ON {_FTS}.rowid = hits.hit_rowid WHERE {_FTS} MATCH ?1"
        " ORDER BY hits.score DESC, hits.created_at, hits.document_id"
    )


def search(conn: sqlite3.Connection, query: str, limit: int) -> list[Hit]:
    """The best ``limit`` documents for ``query``, best first."""
    terms = search_terms(query)
    if not terms:
        return []
    limit = max(1, min(int(limit), _MAX_HITS))
    phrases = [f'"{term}"' for term in terms]
    title_key = " ".join(query.replace("\x00", " ").split())
    cursor = conn.execute(
        _sql(len(terms), limit), (" OR ".join(phrases), title_key, len(terms) + 1, *phrases)
    )
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def format_results(query: str, hits: list[Hit], library: str) -> tuple[str, dict[str, Any]]:
    """The text and ``structuredContent`` agentws's ``search_context`` returns for ``hits``."""
    results = [
        {
            "uri": f"agentws://{library}/{hit['slug']}",
            "id": hit["document_id"],
            "title": hit["title"],
            "snippet": " ".join((hit["snippet"] or "").split()),
            "score": round(float(hit["score"]), 6),
        }
        for hit in hits
    ]
    if not results:
        return f"No documents match {query!r}.", {"results": []}
    lines = [f"{len(results)} result(s) for {query!r}:"]
    for n, result in enumerate(results, start=1):
        lines.append(f"{n}. {result['title']} — {result['uri']}")
        lines.append(f"   {result['snippet']}")
    lines.append("Read one in full with read_context_document(uri=...).")
    return "\n".join(lines), {"results": results}
