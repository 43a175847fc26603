"""What a group exposes, and full-text search over it, on SQLite and PostgreSQL.

The world of these tests (see :func:`world`): workspace ``acme`` with groups
``ops`` and ``dev``; libraries ``handbook`` (created first) and ``runbooks``,
attached to ``ops`` in the other order (runbooks, then handbook) so that
attach order and creation order differ; a library ``unused`` attached to no
group; and workspace ``other`` with a library of its own. Times are fixed,
so every order the tests expect is decided by the data, not by the clock.
"""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from agentws.domain.models import (
    CachedTool,
    Connector,
    ConnectorKind,
    ContextDocument,
    DocumentHit,
    DocumentPolicy,
    Group,
    GroupConnector,
    GroupLibrary,
    Library,
    Skill,
    SkillAsset,
    Workspace,
)
from agentws.store import SqlStore, open_store
from agentws.store.migrations import MIGRATIONS, migrate
from tests.scaling import slowness

from .conftest import open_database

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


@attrs.frozen
class World:
    ws: Workspace
    other_ws: Workspace
    ops: Group
    dev: Group
    handbook: Library
    runbooks: Library
    unused: Library
    foreign: Library


async def world(store: SqlStore) -> World:
    ws = Workspace(slug="acme", name="Acme", created_at=_at(0))
    other = Workspace(slug="other", name="Other", created_at=_at(0))
    w = World(
        ws=ws,
        other_ws=other,
        ops=Group(workspace_id=ws.id, slug="ops", name="Ops", created_at=_at(1)),
        dev=Group(workspace_id=ws.id, slug="dev", name="Dev", created_at=_at(1)),
        handbook=Library(workspace_id=ws.id, slug="handbook", name="H", created_at=_at(2)),
        runbooks=Library(workspace_id=ws.id, slug="runbooks", name="R", created_at=_at(3)),
        unused=Library(workspace_id=ws.id, slug="unused", name="U", created_at=_at(4)),
        foreign=Library(workspace_id=other.id, slug="foreign", name="F", created_at=_at(4)),
    )
    for record in attrs.astuple(w, recurse=False):
        await store.insert(record)
    await attach(store, w.ops, w.runbooks, 10)
    await attach(store, w.ops, w.handbook, 11)
    return w


async def attach(store: SqlStore, group: Group, library: Library, minute: int) -> GroupLibrary:
    return await store.insert(
        GroupLibrary(group_id=group.id, library_id=library.id, created_at=_at(minute))
    )


async def doc(
    store: SqlStore,
    library: Library,
    slug: str,
    *,
    title: str | None = None,
    body: str = "",
    policy: DocumentPolicy = DocumentPolicy.ON_DEMAND,
    minute: int = 20,
) -> ContextDocument:
    return await store.insert(
        ContextDocument(
            library_id=library.id,
            slug=slug,
            title=title or slug.title(),
            body=body,
            policy=policy,
            created_at=_at(minute),
            updated_at=_at(minute),
        )
    )


async def search_hits(
    store: SqlStore, group_id: str, query: str, *, limit: int
) -> list[DocumentHit]:
    """A search's hits, best first: the same whether the group's libraries are given or not."""
    found = await store.search_documents(group_id, query, limit=limit)
    libraries = await store.group_libraries(group_id)
    given = await store.search_documents(group_id, query, limit=limit, libraries=libraries)
    assert given == found
    # Shaped where they are read (SQLite: the reader's thread), the hits are the same.
    shaped = await store.search_documents_shaped(
        lambda hits: ("shaped", hits), group_id, query, limit=limit, libraries=libraries
    )
    assert shaped == ("shaped", found)
    return found


async def search(store: SqlStore, group: Group, query: str, limit: int = 10) -> list[str]:
    """The slugs of the hits, best first."""
    return [h.slug for h in await search_hits(store, group.id, query, limit=limit)]


# -- what a group exposes -------------------------------------------------------


async def test_group_libraries_come_in_attach_order(store: SqlStore) -> None:
    w = await world(store)
    assert await store.group_libraries(w.ops.id) == [w.runbooks, w.handbook]
    assert await store.group_libraries(w.dev.id) == []
    assert await store.group_libraries("grp_missing") == []

    await attach(store, w.dev, w.unused, 30)
    await attach(store, w.dev, w.handbook, 31)
    assert await store.group_libraries(w.dev.id) == [w.unused, w.handbook]
    # Attaching elsewhere changes nothing here.
    assert await store.group_libraries(w.ops.id) == [w.runbooks, w.handbook]


async def test_group_documents_are_exposed_ones_by_attach_then_creation(store: SqlStore) -> None:
    w = await world(store)
    # Created in an order that is neither library nor attach order.
    h_late = await doc(store, w.handbook, "h-late", minute=25)
    r_never = await doc(store, w.runbooks, "r-never", policy=DocumentPolicy.NEVER, minute=19)
    h_spine = await doc(store, w.handbook, "h-spine", policy=DocumentPolicy.SPINE, minute=20)
    r_second = await doc(store, w.runbooks, "r-second", minute=24)
    r_first = await doc(store, w.runbooks, "r-first", policy=DocumentPolicy.SPINE, minute=21)
    await doc(store, w.unused, "u-doc", minute=18)
    await doc(store, w.foreign, "f-doc", minute=18)

    assert await store.group_documents(w.ops.id) == [r_first, r_second, h_spine, h_late]
    assert r_never not in await store.group_documents(w.ops.id)
    assert await store.group_documents(w.dev.id) == []

    # Changing a policy to never hides it at once; back again shows it.
    hidden = await store.update(attrs.evolve(r_first, policy=DocumentPolicy.NEVER))
    assert await store.group_documents(w.ops.id) == [r_second, h_spine, h_late]
    await store.update(attrs.evolve(hidden, policy=DocumentPolicy.ON_DEMAND))
    assert len(await store.group_documents(w.ops.id)) == 4


async def test_group_document_is_none_unless_exposed(store: SqlStore) -> None:
    w = await world(store)
    shown = await doc(store, w.handbook, "shown")
    never = await doc(store, w.handbook, "never", policy=DocumentPolicy.NEVER)
    unattached = await doc(store, w.unused, "unattached")
    foreign = await doc(store, w.foreign, "foreign")

    assert await store.group_document(w.ops.id, shown.id) == shown
    # A never document is exactly as absent as one that does not exist.
    for hidden in (never.id, unattached.id, foreign.id, "doc_missing"):
        assert await store.group_document(w.ops.id, hidden) is None
    assert await store.group_document(w.dev.id, shown.id) is None
    assert await store.group_document("grp_missing", shown.id) is None


async def test_detached_and_deleted_libraries_disappear(store: SqlStore) -> None:
    w = await world(store)
    kept = await doc(store, w.handbook, "kept", body="a kept page about zebras")
    gone = await doc(store, w.runbooks, "gone", body="a gone page about zebras")
    skill = await store.insert(Skill(library_id=w.runbooks.id, slug="gone-skill", prompt="p"))
    assert await search(store, w.ops, "zebras") == ["gone", "kept"]

    (attachment,) = await store.select(GroupLibrary, group_id=w.ops.id, library_id=w.runbooks.id)
    await store.delete(GroupLibrary, attachment.id)
    assert await store.group_libraries(w.ops.id) == [w.handbook]
    assert await store.group_documents(w.ops.id) == [kept]
    assert await store.group_document(w.ops.id, gone.id) is None
    assert await store.group_skills(w.ops.id) == []
    assert await search(store, w.ops, "zebras") == ["kept"]
    # Still stored: detaching is not deleting.
    assert await store.get(Skill, skill.id) == skill

    await store.delete(Library, w.handbook.id)
    assert await store.group_libraries(w.ops.id) == []
    assert await store.group_documents(w.ops.id) == []
    assert await search(store, w.ops, "zebras") == []


async def test_a_library_of_another_workspace_is_never_exposed(store: SqlStore) -> None:
    # The service never attaches across workspaces; the store does not trust that.
    w = await world(store)
    foreign_doc = await doc(store, w.foreign, "foreign", body="cross tenant secret")
    await store.insert(Skill(library_id=w.foreign.id, slug="foreign", prompt="p"))
    await attach(store, w.ops, w.foreign, 12)
    assert await store.group_libraries(w.ops.id) == [w.runbooks, w.handbook]
    assert await store.group_documents(w.ops.id) == []
    assert await store.group_document(w.ops.id, foreign_doc.id) is None
    assert await store.group_skills(w.ops.id) == []
    assert await search(store, w.ops, "secret") == []


async def test_group_skills_come_by_attach_order_then_creation(store: SqlStore) -> None:
    w = await world(store)

    async def skill(library: Library, slug: str, minute: int) -> Skill:
        return await store.insert(
            Skill(
                library_id=library.id,
                slug=slug,
                description=f"{slug} skill",
                prompt=f"Do {slug}.",
                assets=(SkillAsset(name="notes.md", mime_type="text/markdown", text="# ✓"),),
                created_at=_at(minute),
                updated_at=_at(minute),
            )
        )

    h1 = await skill(w.handbook, "h1", 20)
    r2 = await skill(w.runbooks, "r2", 23)
    r1 = await skill(w.runbooks, "r1", 21)
    await skill(w.unused, "u1", 19)
    assert await store.group_skills(w.ops.id) == [r1, r2, h1]
    assert await store.group_skills(w.dev.id) == []


async def test_group_tools_are_active_connectors_tools_by_name(store: SqlStore) -> None:
    w = await world(store)

    async def connector(name: str, *, active: bool = True, ws: Workspace = w.ws) -> Connector:
        return await store.insert(
            Connector(workspace_id=ws.id, name=name, kind=ConnectorKind.REMOTE_MCP, active=active)
        )

    async def tool(c: Connector, name: str) -> CachedTool:
        digest = hashlib.sha256(name.encode()).hexdigest()
        return await store.insert(CachedTool(connector_id=c.id, name=name, definition_hash=digest))

    zeta, alpha = await connector("zeta"), await connector("alpha")
    off, loose = await connector("off", active=False), await connector("loose")
    foreign = await connector("foreign", ws=w.other_ws)
    for c in (zeta, alpha, off, foreign):
        await store.insert(GroupConnector(group_id=w.ops.id, connector_id=c.id))
    # Inserted out of order; byte order puts upper case and '-' before '_' and letters.
    z_b, z_a = await tool(zeta, "b"), await tool(zeta, "a")
    a_list, a_upper, a_dash = (
        await tool(alpha, "list_x"),
        await tool(alpha, "Z"),
        await tool(alpha, "list-x"),
    )
    await tool(off, "hidden")
    await tool(loose, "unattached")
    await tool(foreign, "foreign")

    got = await store.group_tools(w.ops.id)
    assert [(c.name, t.name) for c, t in got] == [
        ("alpha", "Z"),
        ("alpha", "list-x"),
        ("alpha", "list_x"),
        ("zeta", "a"),
        ("zeta", "b"),
    ]
    assert got[0] == (alpha, a_upper)
    assert [t for _, t in got] == [a_upper, a_dash, a_list, z_a, z_b]
    assert await store.group_tools(w.dev.id) == []

    await store.update(attrs.evolve(zeta, active=False))
    assert [c.name for c, _ in await store.group_tools(w.ops.id)] == ["alpha"] * 3
    await store.update(attrs.evolve(off, active=True))
    assert ("off", "hidden") in [(c.name, t.name) for c, t in await store.group_tools(w.ops.id)]


# -- search ---------------------------------------------------------------------


async def test_search_returns_hits_with_snippets(store: SqlStore) -> None:
    w = await world(store)
    d = await doc(
        store,
        w.handbook,
        "release",
        title="Release process",
        body="Before anything else, tag the build. Then deploy it to staging and wait.",
    )
    (hit,) = await search_hits(store, w.ops.id, "deploy", limit=5)
    assert type(hit) is DocumentHit
    assert (hit.document_id, hit.library_id, hit.slug, hit.title, hit.mime_type) == (
        d.id,
        w.handbook.id,
        "release",
        "Release process",
        "text/markdown",
    )
    assert "deploy" in hit.snippet.lower()
    assert len(hit.snippet) < len(d.body) + 20
    assert isinstance(hit.score, float)
    assert hit.score > 0


async def test_stemming_finds_other_forms_of_a_word(store: SqlStore) -> None:
    w = await world(store)
    await doc(store, w.handbook, "d", body="We are deploying the new builds.")
    assert await search(store, w.ops, "deploy") == ["d"]
    assert await search(store, w.ops, "deployed build") == ["d"]
    assert await search(store, w.ops, "DEPLOYS") == ["d"]


async def test_more_matched_words_rank_higher(store: SqlStore) -> None:
    w = await world(store)
    # "one" repeats its single word many times; "two" has both words once.
    await doc(store, w.handbook, "one", body="rollback " * 20 + "and more text here")
    await doc(store, w.handbook, "two", body="a rollback after a failed migration")
    await doc(store, w.handbook, "none", body="nothing relevant")
    hits = await search_hits(store, w.ops.id, "rollback migration", limit=10)
    assert [h.slug for h in hits] == ["two", "one"]
    assert hits[0].score > hits[1].score


async def test_title_weighs_more_than_body(store: SqlStore) -> None:
    w = await world(store)
    await doc(store, w.handbook, "in-body", title="Operations", body="about the pager rota")
    await doc(store, w.runbooks, "in-title", title="Pager handbook", body="about operations")
    assert await search(store, w.ops, "pager") == ["in-title", "in-body"]


async def test_exact_title_ranks_first(store: SqlStore) -> None:
    w = await world(store)
    body = "deploy runbook " * 30
    await doc(store, w.runbooks, "noisy", title="Deploy runbook notes", body=body, minute=20)
    await doc(store, w.runbooks, "partial", title="Runbook", body=body, minute=21)
    await doc(store, w.handbook, "exact", title="Deploy Runbook", body="short", minute=22)
    for query in ("deploy runbook", "  DEPLOY   runbook ", "Deploy Runbook"):
        hits = await search_hits(store, w.ops.id, query, limit=10)
        assert hits[0].slug == "exact", query
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # A title that is one of the words is exact only for that word.
    assert (await search(store, w.ops, "runbook"))[0] == "partial"


async def test_scores_are_in_descending_order(store: SqlStore) -> None:
    w = await world(store)
    for i in range(8):
        await doc(store, w.handbook, f"d{i}", body="alpha " * (i + 1) + "beta " * (i % 3))
    hits = await search_hits(store, w.ops.id, "alpha beta gamma", limit=50)
    assert len(hits) == 8
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


async def test_search_scope_is_the_groups_exposed_documents(store: SqlStore) -> None:
    w = await world(store)
    await doc(store, w.handbook, "shown", body="kangaroo")
    await doc(store, w.handbook, "never", body="kangaroo", policy=DocumentPolicy.NEVER)
    await doc(store, w.handbook, "spine", body="kangaroo", policy=DocumentPolicy.SPINE)
    await doc(store, w.unused, "unattached", body="kangaroo")
    await doc(store, w.foreign, "foreign", body="kangaroo")
    assert sorted(await search(store, w.ops, "kangaroo")) == ["shown", "spine"]
    assert await search(store, w.dev, "kangaroo") == []
    assert await search(store, w.ops, "never") == []  # not even by its slug or title


async def test_limit_is_clamped_to_1_through_50(store: SqlStore) -> None:
    w = await world(store)
    for i in range(55):
        await doc(store, w.handbook, f"d{i}", body=f"wombat number {i}", minute=20 + i)
    assert len(await search(store, w.ops, "wombat", limit=0)) == 1
    assert len(await search(store, w.ops, "wombat", limit=-5)) == 1
    assert len(await search(store, w.ops, "wombat", limit=3)) == 3
    assert len(await search(store, w.ops, "wombat", limit=1000)) == 50


async def test_searching_large_documents_full_of_the_word_is_quick(store: SqlStore) -> None:
    """Snippets come from each hit's first 16 KiB: their cost does not grow with the document.

    A snippet over a whole 1 MiB document repeating the word took FTS5's
    snippet() seconds per document (it is quadratic in the matches), in a
    reader thread nothing can cancel; ts_headline reparses the whole body.
    """
    w = await world(store)
    body = "Refund policy. " + "refund " * (1024 * 1024 // 7)
    for i in range(20):
        await doc(store, w.handbook, f"big{i}", body=body, minute=20 + i)
    started = time.monotonic()
    hits = await store.search_documents(w.ops.id, "refund policy", limit=20)
    elapsed = time.monotonic() - started
    # The search takes tens of milliseconds; before, 36 s (SQLite) or 2.5 s (PostgreSQL).
    bound = 1.0 * slowness()
    assert elapsed < bound, f"20 documents of 1 MiB took {elapsed:.2f} s to search (< {bound:.2f})"
    assert len(hits) == 20
    for hit in hits:
        assert hit.snippet.lower().startswith("**refund** **policy**"), hit.snippet
        assert len(hit.snippet) < 300, hit.snippet


async def test_a_word_found_past_a_documents_opening_gets_the_opening_as_its_snippet(
    store: SqlStore,
) -> None:
    w = await world(store)
    await doc(store, w.handbook, "long", body="Opening words here. " + "filler " * 5000 + "quokka")
    (hit,) = await search_hits(store, w.ops.id, "quokka", limit=5)
    assert hit.slug == "long"
    assert hit.snippet.startswith("Opening words here. filler"), hit.snippet
    assert "**" not in hit.snippet and len(hit.snippet) < 300, hit.snippet


HOSTILE = [
    '"',
    '""',
    "*",
    "deploy*",
    "AND OR NOT",
    "NOT deploy",
    "deploy AND",
    "'); DROP TABLE context_documents; --",
    "';",
    ":",
    "title:deploy",
    "{title}: deploy",
    "^",
    "^deploy",
    "NEAR(deploy runbook)",
    "deploy + runbook",
    "(deploy",
    "deploy)",
    "deploy | runbook & !x <-> y",
    "\\",
    "$1 ?1 %s",
    "-deploy",
    "日本語のテキスト",
    "ünïcödé façade",
    "🎉🚀",
    "deploy 🎉 runbook",
    "a\u0301",
    "x" * 5000,
    "deploy " * 500,
    "a\x00b",
    "\ud800 deploy",
]


@pytest.mark.parametrize("query", ["", "   ", "!?.,;:'\"()[]{}*^-+|&~<>", "🎉", "___", "\x00"])
async def test_queries_without_words_find_nothing(store: SqlStore, query: str) -> None:
    w = await world(store)
    await doc(store, w.handbook, "d", body="anything at all ___ 🎉")
    assert await search_hits(store, w.ops.id, query, limit=10) == []


async def test_hostile_queries_never_raise(store: SqlStore) -> None:
    w = await world(store)
    await doc(store, w.handbook, "runbook", title="Deploy runbook", body="deploy the runbook")
    await doc(store, w.handbook, "intl", title="Intl", body="日本語のテキスト ünïcödé façade")
    for query in HOSTILE:
        hits = await search_hits(store, w.ops.id, query, limit=5)
        assert all(type(h) is DocumentHit for h in hits), query
    # Operators are words like any other, quotes and symbols are not there at all.
    assert await search(store, w.ops, '"deploy" AND NOT runbook*') == ["runbook"]
    assert await search(store, w.ops, "'); DROP TABLE context_documents; --") == []
    assert await search(store, w.ops, "façade") == ["intl"]
    assert await store.count(ContextDocument) == 2


async def test_updated_and_removed_documents_are_reindexed(store: SqlStore) -> None:
    w = await world(store)
    d = await doc(store, w.handbook, "d", title="Platypus", body="the old body about emus")
    other = await doc(store, w.handbook, "other", body="emus and more emus")
    assert await search(store, w.ops, "emus") == ["other", "d"]

    changed = await store.update(attrs.evolve(d, title="Echidna", body="now about quokkas"))
    assert await search(store, w.ops, "emus") == ["other"]
    assert await search(store, w.ops, "platypus") == []
    assert await search(store, w.ops, "quokkas") == ["d"]
    assert await search(store, w.ops, "echidna") == ["d"]
    (hit,) = await search_hits(store, w.ops.id, "quokkas", limit=1)
    assert "quokkas" in hit.snippet

    await store.update(attrs.evolve(changed, policy=DocumentPolicy.NEVER))
    assert await search(store, w.ops, "quokkas") == []

    await store.delete(ContextDocument, d.id)
    await store.delete(ContextDocument, other.id)
    assert await search(store, w.ops, "quokkas") == []
    assert await search(store, w.ops, "emus") == []
    # The index keeps working for new documents after removals.
    await doc(store, w.handbook, "new", body="emus again")
    assert await search(store, w.ops, "emus") == ["new"]


async def test_a_document_of_a_mebibyte_of_distinct_words_is_stored_and_found(
    store: SqlStore,
) -> None:
    # About 1 MiB of distinct tokens: more than a PostgreSQL tsvector holds.
    words = [hashlib.md5(str(i).encode(), usedforsecurity=False).hexdigest() for i in range(31000)]
    body = "firstword " + " ".join(words)
    assert 1_000_000 < len(body) <= 1024 * 1024
    w = await world(store)
    big = await doc(store, w.handbook, "big", title="Inventory dump", body=body)
    assert (await store.get(ContextDocument, big.id)).body == body
    assert await search(store, w.ops, "firstword") == ["big"]
    assert await search(store, w.ops, "inventory") == ["big"]


async def _store_at_version_1(url: str) -> None:
    """A database migrated to version 1 only, holding one exposed document."""
    (first,) = [m for m in MIGRATIONS if m.version == 1]
    async with open_database(url) as db:
        async with db.transaction() as tx:
            ts = "TEXT" if db.dialect == "sqlite" else "TIMESTAMPTZ"
            await tx.execute(
                "CREATE TABLE schema_migrations ("
                f" version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at {ts} NOT NULL)"
            )
            for statement in first.statements(db.dialect):
                await tx.execute(statement)
            await tx.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (1, $1, $2)",
                first.name,
                T0.isoformat() if db.dialect == "sqlite" else T0,
            )
        # The generic store works on the old schema: the columns it writes are the same.
        old = SqlStore(db)
        w = await world(old)
        await doc(old, w.handbook, "old", title="Legacy", body="written before search existed")


async def test_migration_indexes_documents_stored_before_it(database_url: str) -> None:
    await _store_at_version_1(database_url)
    async with open_database(database_url) as db:
        assert await migrate(db) == [m.version for m in MIGRATIONS if m.version > 1]
    async with open_store(database_url) as store:
        (ops,) = await store.select(Group, slug="ops")
        assert await search(store, ops, "search existed") == ["old"]
        assert await search(store, ops, "legacy") == ["old"]
