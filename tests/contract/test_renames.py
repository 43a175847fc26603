"""Renaming workspaces, groups and libraries, and changing a document's policy, on both stores.

Each changes a display name (or the policy) only: the slug, in endpoint
URLs and document URIs, stays. A change is audited with what it was;
setting what is already there records nothing.
"""

from __future__ import annotations

import pytest

from agentws import libraries as lib
from agentws.core.errors import NotFoundError, ValidationError
from agentws.domain.models import AuditEntry, ContextDocument, DocumentPolicy, Group, Workspace
from agentws.store import SqlStore
from agentws.workspaces import admin as registry

ACTOR = "test:alice"


async def _seed(store: SqlStore) -> None:
    await registry.create_workspace(store, "acme", name="Acme", actor=ACTOR)
    await registry.create_group(store, "acme", "ops", name=None, actor=ACTOR)
    await lib.create_library(store, "acme", "handbook", name="Handbook", actor=ACTOR)
    await lib.add_document(
        store, "acme", "handbook", slug="refunds", title="Refunds", body="# Refunds\n",
        policy="on_demand", actor=ACTOR,
    )  # fmt: skip


async def _changes(store: SqlStore) -> list[tuple[str, str, dict[str, object]]]:
    entries = await store.select(AuditEntry)
    return [(e.action, e.target, e.detail) for e in entries[4:]]


async def test_renames_change_the_display_name_and_keep_the_slug(store: SqlStore) -> None:
    await _seed(store)
    workspace = await registry.rename_workspace(store, "acme", name="  Acme Corp ", actor=ACTOR)
    assert (workspace.slug, workspace.name) == ("acme", "Acme Corp")
    assert (await store.workspace_by_slug("acme")).name == "Acme Corp"
    group = await registry.rename_group(store, "acme", "ops", name="Operations", actor=ACTOR)
    assert (await store.group_by_slug("acme", "ops")).name == "Operations" == group.name
    library = await lib.rename_library(store, "acme", "handbook", name="The Book", actor=ACTOR)
    assert [x.name for x in await lib.list_libraries(store, "acme")] == ["The Book"]
    assert library.slug == "handbook"
    # The same name again: nothing changes, nothing is recorded.
    await registry.rename_workspace(store, "acme", name="Acme Corp", actor=ACTOR)
    await registry.rename_group(store, "acme", "ops", name="Operations", actor=ACTOR)
    await lib.rename_library(store, "acme", "handbook", name="The Book", actor=ACTOR)
    assert await _changes(store) == [
        ("workspace.rename", "acme", {"was": "Acme", "name": "Acme Corp"}),
        ("group.rename", "acme/ops", {"was": "ops", "name": "Operations"}),
        ("library.rename", "acme/handbook", {"was": "Handbook", "name": "The Book"}),
    ]
    assert await store.count(Workspace) == 1 and await store.count(Group) == 1


async def test_a_rename_is_refused_for_a_bad_name_or_an_unknown_slug(store: SqlStore) -> None:
    await _seed(store)
    with pytest.raises(ValidationError, match="workspace name must be 1 to 100 characters"):
        await registry.rename_workspace(store, "acme", name="   ", actor=ACTOR)
    with pytest.raises(ValidationError, match="group name must be 1 to 100"):
        await registry.rename_group(store, "acme", "ops", name="x" * 101, actor=ACTOR)
    with pytest.raises(ValidationError, match="library name must be 1 to 100"):
        await lib.rename_library(store, "acme", "handbook", name="", actor=ACTOR)
    with pytest.raises(NotFoundError, match="no workspace 'nope'"):
        await registry.rename_workspace(store, "nope", name="Nope", actor=ACTOR)
    with pytest.raises(NotFoundError, match="no group"):
        await registry.rename_group(store, "acme", "nope", name="Nope", actor=ACTOR)
    with pytest.raises(NotFoundError, match="no library 'nope'"):
        await lib.rename_library(store, "acme", "nope", name="Nope", actor=ACTOR)
    assert await _changes(store) == []


async def test_a_documents_policy_changes_in_place(store: SqlStore) -> None:
    await _seed(store)
    (before,) = await store.select(ContextDocument)
    changed = await lib.set_document_policy(
        store, "acme", "handbook", "refunds", "never", actor=ACTOR
    )
    assert changed.policy is DocumentPolicy.NEVER and changed.id == before.id
    (after,) = await store.select(ContextDocument)
    assert after.policy is DocumentPolicy.NEVER and after.body == before.body
    await lib.set_document_policy(store, "acme", "handbook", "refunds", "never", actor=ACTOR)
    with pytest.raises(ValidationError, match="invalid policy 'always'"):
        await lib.set_document_policy(store, "acme", "handbook", "refunds", "always", actor=ACTOR)
    with pytest.raises(NotFoundError, match="no document 'nope' in library 'handbook'"):
        await lib.set_document_policy(store, "acme", "handbook", "nope", "spine", actor=ACTOR)
    assert await _changes(store) == [
        (
            "document.policy",
            "acme/handbook/refunds",
            {"id": before.id, "was": "on_demand", "policy": "never"},
        )
    ]


@pytest.mark.parametrize("bad", ["Acme\x00", "Ac\nme", "Acme\x1b[31m", "Ac\x85me"])
async def test_a_workspace_or_group_name_with_a_control_character_is_refused(
    store: SqlStore, bad: str
) -> None:
    # PostgreSQL takes no NUL in text; no store should keep a line break or an escape
    # sequence in a name shown in menus and terminals.
    await _seed(store)
    with pytest.raises(ValidationError, match="control character"):
        await registry.rename_workspace(store, "acme", name=bad, actor=ACTOR)
    with pytest.raises(ValidationError, match="control character"):
        await registry.rename_group(store, "acme", "ops", name=bad, actor=ACTOR)
    with pytest.raises(ValidationError, match="control character"):
        await registry.create_workspace(store, "beta", name=bad, actor=ACTOR)
    with pytest.raises(ValidationError, match="control character"):
        await registry.create_group(store, "acme", "web", name=bad, actor=ACTOR)
    assert (await store.workspace_by_slug("acme")).name == "Acme"
