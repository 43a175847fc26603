"""What a group's endpoint offers, in SQL (a part of :class:`~agentws.store.sql.SqlStore`):
its tools, its attached libraries with their documents and skills, and full-text
search over those documents.

Full-text search is the one place the dialects part ways (FTS5 and
``bm25`` on SQLite, ``tsvector`` and ``ts_rank_cd`` on PostgreSQL; see
migration 0002). Both are given the same query shape so they rank alike: the
user's text is cut into words here, each word is passed as a quoted term
(never as query syntax), and the score is the same sum on both sides::

    score = (n + 1 if the title is the query) + (words matched) + relevance

where ``n`` is the number of words and ``relevance`` is the backend's rank
squashed into [0, 1). So an exact title beats everything, more matched words
beat fewer, and the backend's ranking (title weighted above body) orders the
rest. "The title is the query" compares both with spaces collapsed and case
ignored (by SQL ``lower()``, which on SQLite folds ASCII letters only).
Stemming differs a little (Porter on SQLite, Snowball english on
PostgreSQL, which also drops stop words such as "the").

A hit's snippet comes from the document's opening (its first
:data:`OPENING_CHARS` characters), not the whole document: FTS5's
``snippet()`` and ``highlight()`` take time quadratic in the matches they
look at, ``ts_headline`` reparses all it is given, and a search runs in a
database connection nothing can interrupt (20 documents of 1 MiB repeating
the word took 36 s of a SQLite reader). On SQLite ``highlight()`` marks the
matched words of the opening (an FTS5 index of the openings, migration
0028) and :func:`_snippet` takes the words around the first one; on
PostgreSQL ``ts_headline`` reads ``left(body, OPENING_CHARS)``. A document
matched only past its opening gets the opening's first words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agentws.domain.models import (
    CachedTool,
    Connector,
    ContextDocument,
    DocumentHit,
    DocumentPolicy,
    Library,
    Skill,
    ToolPermission,
)
from agentws.store.queries import Queries
from agentws.store.tables import Table, table_for

if TYPE_CHECKING:
    from agentws.store.database import Row

__all__ = ["OPENING_CHARS", "CatalogQueries", "CatalogStore"]

T = TypeVar("T")

#: Snippets are made from this many characters at the start of a document (migration 0028
#: stores the SQLite openings with this length).
OPENING_CHARS = 16384

# Search hits returned at most; more is noise to a reader and work for the database.
_MAX_HITS = 50
# Words of a query used at most: each one is a lookup of its own (words matched).
_MAX_TERMS = 16
# Longer "words" are not words (hashes, base64); PostgreSQL ignores lexemes over 2 KiB.
_MAX_TERM_CHARS = 100
# Letters and digits; everything else, the underscore included, separates words,
# as it does for the FTS5 unicode61 tokenizer.
_WORD = re.compile(r"[^\W_]+")
# Title matches count this many times a body match in SQLite's bm25 (PostgreSQL
# weighs title A = 1.0 against body B = 0.4 by default).
_TITLE_WEIGHT = 10.0
# Snippet length in words, and how matches are marked (the agent reads Markdown).
_SNIPPET_WORDS = 24
_MARK = "**"
# Words of a SQLite snippet before its first match.
_SNIPPET_LEAD = 6
# How highlight() marks matched words in an opening (private-use characters), before they
# become _MARK.
_OPEN, _CLOSE = "\ue000", "\ue001"

# Joins rows ``d`` of a library (documents, skills) to the groups they are exposed
# to: through an attachment, and only within the group's own workspace.
_EXPOSED = """
    JOIN group_libraries gl ON gl.library_id = d.library_id
    JOIN workspace_groups g ON g.id = gl.group_id
    JOIN libraries l ON l.id = gl.library_id AND l.workspace_id = g.workspace_id
"""


def _search_terms(query: str) -> list[str]:
    """The distinct words of ``query``, lowercased, in order, at most ``_MAX_TERMS``."""
    terms: list[str] = []
    for word in _WORD.findall(query.lower()):
        if len(word) <= _MAX_TERM_CHARS and word not in terms:
            terms.append(word)
    return terms[:_MAX_TERMS]


def _title_key(query: str) -> str:
    """The query as a title would be compared to it: spaces collapsed, storable text only."""
    text = " ".join(query.replace("\x00", " ").split())
    # Lone surrogates cannot be sent to either database; no title contains one.
    return text.encode("utf-8", "ignore").decode("utf-8")


def _columns(table: Table, alias: str, prefix: str = "") -> str:
    return ", ".join(f"{alias}.{c} AS {prefix}{c}" for c in table.columns)


def _unprefix(row: Row, table: Table, prefix: str) -> Row:
    return {c: row[prefix + c] for c in table.columns}


class CatalogStore(Protocol):
    """What a group exposes: libraries, documents, skills, tools, permissions."""

    async def mark_tools_fetched(self, connector_id: str, fetched_at: datetime) -> None:
        """Set ``fetched_at`` of every cached tool of the connector, and nothing else.

        A refresh that found a tool unchanged must not write the rest of its
        row back: an admin's label set meanwhile would be lost.
        """
        ...

    async def tool_permissions(self, workspace_id: str, group_id: str) -> list[ToolPermission]:
        """Permissions that may apply in a group: its own and the workspace's."""
        ...

    async def group_libraries(self, group_id: str) -> list[Library]:
        """Libraries attached to the group, in the order they were attached."""
        ...

    async def group_documents(self, group_id: str) -> list[ContextDocument]:
        """Documents the group exposes (policy ``spine`` or ``on_demand``).

        Ordered by when their library was attached, then by creation.
        """
        ...

    async def group_document(self, group_id: str, document_id: str) -> ContextDocument | None:
        """That document if the group exposes it; None otherwise, as if it did not exist."""
        ...

    async def group_skills(self, group_id: str) -> list[Skill]:
        """Skills of the group's libraries, by attach order, then creation."""
        ...

    async def catalog_version(self) -> int:
        """A counter that moves with every change to what groups' tool lists are made of."""
        ...

    async def group_tools(self, group_id: str) -> list[tuple[Connector, CachedTool]]:
        """Cached tools of the group's active connectors, by connector name, then tool name."""
        ...

    async def search_documents(
        self,
        group_id: str,
        query: str,
        *,
        limit: int,
        libraries: Sequence[Library] | None = None,
    ) -> list[DocumentHit]:
        """Full-text search over the documents :meth:`group_documents` returns, best first.

        ``query`` is free text from a person or a model: it is split into
        words (letters and digits) and any of them matches; a document with
        more of the words ranks above one with fewer, and a document whose
        title is the query (ignoring case) ranks first. Nothing in ``query``
        is syntax, so no text raises; text without words finds nothing.
        ``limit`` is clamped to 1..50.

        ``libraries``: the group's libraries in the order they were attached,
        as :meth:`group_libraries` returns them, when the caller has them
        already (the tool catalog keeps them): their documents are searched
        without finding them through the group's attachments again.
        """
        ...

    async def search_documents_shaped(
        self,
        shape: Callable[[list[DocumentHit]], T],
        group_id: str,
        query: str,
        *,
        limit: int,
        libraries: Sequence[Library] | None = None,
    ) -> T:
        """:meth:`search_documents`, its hits handed to ``shape`` where they are read.

        On SQLite the hits and ``shape``'s answer are made in the store's
        reader thread, off the event loop
        (:meth:`~agentws.store.database.Database.fetch_shaped`); ``shape``
        must be a pure function of the hits. A query without words finds
        nothing without asking the database: ``shape([])`` is returned.
        """
        ...


class CatalogQueries(Queries):
    """A group's tools, libraries, documents, skills and search; mixed into
    :class:`~agentws.store.sql.SqlStore`."""

    async def group_libraries(self, group_id: str) -> list[Library]:
        table = table_for(Library)
        rows = await self._db.fetch(
            f"SELECT {_columns(table, 'l')} FROM group_libraries gl"
            " JOIN workspace_groups g ON g.id = gl.group_id"
            " JOIN libraries l ON l.id = gl.library_id AND l.workspace_id = g.workspace_id"
            " WHERE gl.group_id = $1 ORDER BY gl.created_at, gl.id",
            group_id,
        )
        return [table.decode(row, self.dialect) for row in rows]

    async def _exposed_documents(self, condition: str, *args: Any) -> list[ContextDocument]:
        table = table_for(ContextDocument)
        rows = await self._db.fetch(
            f"SELECT {_columns(table, 'd')} FROM context_documents d {_EXPOSED}"
            f" WHERE gl.group_id = $1 AND d.policy <> '{DocumentPolicy.NEVER.value}'{condition}"
            " ORDER BY gl.created_at, gl.id, d.created_at, d.id",
            *args,
        )
        return [table.decode(row, self.dialect) for row in rows]

    async def group_documents(self, group_id: str) -> list[ContextDocument]:
        return await self._exposed_documents("", group_id)

    async def group_document(self, group_id: str, document_id: str) -> ContextDocument | None:
        found = await self._exposed_documents(" AND d.id = $2", group_id, document_id)
        return found[0] if found else None

    async def group_skills(self, group_id: str) -> list[Skill]:
        table = table_for(Skill)
        rows = await self._db.fetch(
            f"SELECT {_columns(table, 'd')} FROM skills d {_EXPOSED}"
            " WHERE gl.group_id = $1 ORDER BY gl.created_at, gl.id, d.created_at, d.id",
            group_id,
        )
        return [table.decode(row, self.dialect) for row in rows]

    async def group_tools(self, group_id: str) -> list[tuple[Connector, CachedTool]]:
        connectors, tools = table_for(Connector), table_for(CachedTool)
        # Byte order on both backends: SQLite's default, and PostgreSQL's "C"
        # whatever collation the database was created with.
        collate = ' COLLATE "C"' if self.dialect == "postgres" else ""
        rows = await self._db.fetch(
            f"SELECT {_columns(connectors, 'c', 'c_')}, {_columns(tools, 't', 't_')}"
            " FROM group_connectors gc"
            " JOIN workspace_groups g ON g.id = gc.group_id"
            " JOIN connectors c ON c.id = gc.connector_id AND c.workspace_id = g.workspace_id"
            " JOIN cached_tools t ON t.connector_id = c.id"
            f" WHERE gc.group_id = $1 AND c.active = $2"
            f" ORDER BY c.name{collate}, t.name{collate}, t.id",
            group_id,
            connectors.encode_value("active", True, self.dialect),
        )
        return [
            (
                connectors.decode(_unprefix(row, connectors, "c_"), self.dialect),
                tools.decode(_unprefix(row, tools, "t_"), self.dialect),
            )
            for row in rows
        ]

    async def search_documents(
        self,
        group_id: str,
        query: str,
        *,
        limit: int,
        libraries: Sequence[Library] | None = None,
    ) -> list[DocumentHit]:
        return await self.search_documents_shaped(
            _as_found, group_id, query, limit=limit, libraries=libraries
        )

    async def search_documents_shaped(
        self,
        shape: Callable[[list[DocumentHit]], T],
        group_id: str,
        query: str,
        *,
        limit: int,
        libraries: Sequence[Library] | None = None,
    ) -> T:
        terms = _search_terms(query)
        if not terms:
            return shape([])
        limit = max(1, min(int(limit), _MAX_HITS))
        # The documents searched: the group's, found through its attachments,
        # or those of the libraries the caller knows it has (no joins).
        scope: list[str] = [group_id] if libraries is None else [lib.id for lib in libraries]
        if not scope:
            return shape([])
        by_library = None if libraries is None else len(scope)
        if self.dialect == "sqlite":
            sql, match, quoted = _sqlite_search(len(terms), limit, by_library), " OR ", '"{}"'
        else:
            sql, match, quoted = _postgres_search(len(terms), limit, by_library), " | ", "'{}'"
        phrases = [quoted.format(term) for term in terms]
        slugs = {lib.id: lib.slug for lib in libraries or ()}
        marked = self.dialect == "sqlite"

        # A partial of module-level functions: it pickles, so on SQLite a read
        # process may make the hits (agentws.store.sqlite_read_processes).
        hits = functools.partial(_shaped_hits, shape, None if libraries is None else slugs, marked)
        return await self._db.fetch_shaped(
            hits, sql, *scope, match.join(phrases), _title_key(query), len(terms) + 1, *phrases
        )

    async def mark_tools_fetched(self, connector_id: str, fetched_at: datetime) -> None:
        when = table_for(CachedTool).encode_value("fetched_at", fetched_at, self.dialect)
        async with self._db.transaction() as tx:
            sql = "UPDATE cached_tools SET fetched_at = $2 WHERE connector_id = $1"
            await tx.execute(sql, connector_id, when)

    async def tool_permissions(self, workspace_id: str, group_id: str) -> list[ToolPermission]:
        table = table_for(ToolPermission)
        rows = await self._fetch(
            f"SELECT {', '.join(table.columns)} FROM tool_permissions"
            " WHERE workspace_id = $1 AND (group_id IS NULL OR group_id = $2)"
            " ORDER BY created_at, id",
            workspace_id,
            group_id,
        )
        return [table.decode(row, self.dialect) for row in rows]

    async def catalog_version(self) -> int:
        rows = await self._fetch("SELECT version FROM catalog_version WHERE id = 1")
        return int(rows[0]["version"])


def _shaped_hits(
    shape: Callable[[list[DocumentHit]], T],
    slugs: dict[str, str] | None,
    marked: bool,
    rows: list[Row],
) -> T:
    """``shape`` of the hits in ``rows``; ``slugs`` names the libraries searched, if given."""
    return shape(
        [
            DocumentHit(
                document_id=row["document_id"],
                library_id=row["library_id"],
                library_slug=row["library_slug"] if slugs is None else slugs[row["library_id"]],
                slug=row["slug"],
                title=row["title"],
                mime_type=row["mime_type"],
                snippet=_snippet(row["snippet"] or "") if marked else row["snippet"] or "",
                score=float(row["score"]),
            )
            for row in rows
        ]
    )


def _as_found(hits: list[DocumentHit]) -> list[DocumentHit]:
    return hits


def _snippet(opening: str) -> str:
    """About :data:`_SNIPPET_WORDS` words of a document's marked opening, from a few words
    before its first match; matches marked as :data:`_MARK` does, a cut shown as ``…``.

    Only the words around the first match are split off: an opening is up to
    :data:`OPENING_CHARS` long, and splitting all of it for every hit of every
    search cost more than the rest of shaping a search's answer.
    """
    at = opening.find(_OPEN)
    lead: list[str] = []
    cut_before = False
    if at > 0:
        if not opening[at - 1].isspace():
            at -= len(opening[:at].rsplit(None, 1)[-1])  # the marked word began before its mark
        lead = opening[:at].rsplit(None, _SNIPPET_LEAD)
        cut_before = len(lead) > _SNIPPET_LEAD
        if cut_before:
            del lead[0]  # the words before those shown
    room = _SNIPPET_WORDS - len(lead)
    rest = opening[max(at, 0) :].split(None, room)
    cut_after = len(rest) > room
    shown = " ".join(lead + rest[:room])
    if shown.count(_OPEN) > shown.count(_CLOSE):
        shown += _CLOSE
    shown = shown.replace(_OPEN, _MARK).replace(_CLOSE, _MARK)
    return ("…" if cut_before else "") + shown + ("…" if cut_after else "")


# Parameters of both search queries: first the scope (the group id, or the ids
# of the libraries searched, ``by_library`` of them), then the query (any word),
# the title key, the exact-title bonus, and one query per word.
_HIT_COLUMNS = "d.id AS document_id, d.library_id, d.slug, d.title, d.mime_type"
# Equal scores: the library attached first, then the oldest document (by the hits' columns).
_ORDER = "attached_at, attachment_id, d.created_at, d.id"


def _scope(by_library: int | None) -> tuple[str, str, str, int]:
    """Where the documents come from, which are searched, what orders equal scores, the next $n.

    Through the group's attachments (``by_library`` None: ``$1`` is the
    group), or straight from the libraries ``$1``…: either way documents
    of the library attached first come first, then the oldest.
    """
    if by_library is None:
        return (
            f"{_EXPOSED}",
            "gl.group_id = $1",
            "gl.created_at AS attached_at, gl.id AS attachment_id, l.slug AS library_slug,",
            2,
        )
    ids = ", ".join(f"${n + 1}" for n in range(by_library))
    rank = " ".join(f"WHEN ${n + 1} THEN {n}" for n in range(by_library))
    return (
        "",
        f"d.library_id IN ({ids})",
        f"CASE d.library_id {rank} END AS attached_at, 0 AS attachment_id,",
        by_library + 1,
    )


# The query text depends on the number of words, the limit and the scope only: made once for each.
@functools.lru_cache(maxsize=1024)
def _sqlite_search(n_terms: int, limit: int, by_library: int | None = None) -> str:
    joins, scope, order_columns, first = _scope(by_library)
    match, title, bonus = f"${first}", f"${first + 1}", f"${first + 2}"
    fts = "context_documents_fts"
    bm25 = f"bm25({fts}, {_TITLE_WEIGHT}, 1.0)"
    matched = " + ".join(
        f"(d.rowid IN (SELECT rowid FROM {fts} WHERE {fts} MATCH ${first + 3 + i}))"
        for i in range(n_terms)
    )
    slug = "" if by_library else " hits.library_slug,"
    openings = "context_document_openings"
    # bm25 is negative, better when lower: -bm25 / (1 - bm25) is in [0, 1), better when higher.
    # The snippet (the opening, marked) is made only for the hits returned.
    return (
        f"WITH hits AS (SELECT d.rowid AS hit_rowid, {_HIT_COLUMNS}, {order_columns}"
        " d.created_at,"
        f" (CASE WHEN lower(trim(d.title)) = lower({title}) THEN {bonus} ELSE 0 END)"
        f" + {matched} + (-{bm25}) / (1.0 - {bm25}) AS score"
        f" FROM {fts} JOIN context_documents d ON d.rowid = {fts}.rowid {joins}"
        f" WHERE {fts} MATCH {match} AND {scope}"
        f" AND d.policy <> '{DocumentPolicy.NEVER.value}'"
        f" ORDER BY score DESC, {_ORDER} LIMIT {int(limit)})"
        f" SELECT hits.document_id, hits.library_id,{slug} hits.slug, hits.title,"
        " hits.mime_type,"
        f" coalesce((SELECT highlight({openings}, 0, '{_OPEN}', '{_CLOSE}') FROM {openings}"
        f" WHERE {openings} MATCH {match} AND {openings}.rowid = hits.hit_rowid),"
        f" (SELECT opening FROM {openings} WHERE rowid = hits.hit_rowid)) AS snippet,"
        " hits.score"
        " FROM hits"
        " ORDER BY hits.score DESC, hits.attached_at, hits.attachment_id, hits.created_at,"
        " hits.document_id"
    )


@functools.lru_cache(maxsize=1024)
def _postgres_search(n_terms: int, limit: int, by_library: int | None = None) -> str:
    joins, scope, order_columns, first = _scope(by_library)
    match, title, bonus = f"${first}", f"${first + 1}", f"${first + 2}"
    matched = " + ".join(
        f"(d.search @@ to_tsquery('english', ${first + 3 + i}))::int" for i in range(n_terms)
    )
    slug = "" if by_library else " hits.library_slug,"
    headline = (
        f"StartSel={_MARK}, StopSel={_MARK}, MaxWords={_SNIPPET_WORDS},"
        f" MinWords={_SNIPPET_WORDS // 3}, MaxFragments=1"
    )
    # The headline, which reparses the text it is given, is made only for the hits returned,
    # from their openings.
    # ts_rank_cd normalisation 32 is rank / (rank + 1): in [0, 1).
    return (
        f"WITH q AS (SELECT to_tsquery('english', {match}) AS query), hits AS ("
        f" SELECT {_HIT_COLUMNS}, d.body, {order_columns} d.created_at,"
        f" (CASE WHEN lower(btrim(d.title)) = lower({title}) THEN {bonus} ELSE 0 END)"
        f" + {matched} + ts_rank_cd(d.search, q.query, 32)::float8 AS score"
        f" FROM q CROSS JOIN context_documents d {joins}"
        f" WHERE d.search @@ q.query AND {scope}"
        f" AND d.policy <> '{DocumentPolicy.NEVER.value}'"
        f" ORDER BY score DESC, {_ORDER} LIMIT {int(limit)})"
        f" SELECT hits.document_id, hits.library_id,{slug} hits.slug, hits.title,"
        " hits.mime_type,"
        f" ts_headline('english', left(hits.body, {OPENING_CHARS}), q.query, '{headline}')"
        " AS snippet, hits.score"
        " FROM hits CROSS JOIN q"
        " ORDER BY hits.score DESC, hits.attached_at, hits.attachment_id, hits.created_at,"
        " hits.document_id"
    )
