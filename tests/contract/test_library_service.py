"""The service functions of :mod:`agentws.libraries`, in-process on SQLite and PostgreSQL.

The CLI tests run the same functions through processes; here the rules are
checked one by one, fast: idempotent attach and detach, replace keeping the
identity, what is refused and how the errors read, and the audit log.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentws import libraries as lib
from agentws.core.errors import ConflictError, NotFoundError, ValidationError
from agentws.domain.models import AuditEntry, DocumentPolicy, GroupLibrary, SkillAsset
from agentws.store import SqlStore
from agentws.workspaces.admin import create_group, create_workspace

ACTOR = "test:alice"


async def _seed(store: SqlStore) -> None:
    for workspace in ("acme", "other"):
        await create_workspace(store, workspace, name=None, actor=ACTOR)
        await create_group(store, workspace, "ops", name=None, actor=ACTOR)
    await lib.create_library(store, "acme", "handbook", name="Handbook", actor=ACTOR)
    await lib.create_library(store, "other", "secrets", actor=ACTOR)


async def _audit(store: SqlStore) -> list[tuple[str, str, str, dict[str, object]]]:
    """(actor, action, target, detail) of the entries after the seeding ones."""
    entries = await store.select(AuditEntry)
    return [(e.actor, e.action, e.target, e.detail) for e in entries[6:]]


async def test_create_and_list_libraries(store: SqlStore) -> None:
    await _seed(store)
    second = await lib.create_library(store, "acme", "runbooks", actor=ACTOR)
    assert second.name == "runbooks"
    assert [x.slug for x in await lib.list_libraries(store, "acme")] == ["handbook", "runbooks"]
    assert [x.slug for x in await lib.list_libraries(store, "other")] == ["secrets"]
    with pytest.raises(ConflictError, match="library 'handbook' already exists in workspace"):
        await lib.create_library(store, "acme", "handbook", actor=ACTOR)
    with pytest.raises(ValidationError, match="invalid library slug 'Hand Book'"):
        await lib.create_library(store, "acme", "Hand Book", actor=ACTOR)
    with pytest.raises(NotFoundError, match="no workspace 'nope'"):
        await lib.list_libraries(store, "nope")
    assert await _audit(store) == [(ACTOR, "library.create", "acme/runbooks", {})]


async def test_attach_and_detach_are_idempotent_and_audited(store: SqlStore) -> None:
    await _seed(store)
    first = await lib.attach_library(store, "acme", "ops", "handbook", actor=ACTOR)
    again = await lib.attach_library(store, "acme", "ops", "handbook", actor=ACTOR)
    assert again == first
    assert await store.count(GroupLibrary) == 1
    assert await lib.attached_groups(store, "acme") == {first.library_id: ["ops"]}

    assert await lib.detach_library(store, "acme", "ops", "handbook", actor=ACTOR) == first
    assert await lib.detach_library(store, "acme", "ops", "handbook", actor=ACTOR) is None
    assert await store.count(GroupLibrary) == 0
    assert await lib.attached_groups(store, "acme") == {}
    assert await _audit(store) == [
        (ACTOR, "library.attach", "acme/handbook", {"group": "ops"}),
        (ACTOR, "library.detach", "acme/handbook", {"group": "ops"}),
    ]


async def test_attach_names_what_is_missing(store: SqlStore) -> None:
    await _seed(store)
    with pytest.raises(NotFoundError, match=r"no group 'dev' in workspace 'acme'"):
        await lib.attach_library(store, "acme", "dev", "handbook", actor=ACTOR)
    # Another workspace's library is not there to attach.
    with pytest.raises(
        NotFoundError, match=r"no library 'secrets' in workspace 'acme' \(see `agentws library"
    ):
        await lib.attach_library(store, "acme", "ops", "secrets", actor=ACTOR)
    with pytest.raises(NotFoundError, match="no workspace 'nope'"):
        await lib.detach_library(store, "nope", "ops", "handbook", actor=ACTOR)


async def test_add_replace_and_remove_a_document(store: SqlStore) -> None:
    await _seed(store)
    await lib.attach_library(store, "acme", "ops", "handbook", actor=ACTOR)
    fields = {"slug": "refunds", "title": "Refunds", "body": "Refund within 30 days."}
    doc = await lib.add_document(
        store, "acme", "handbook", **fields, policy="on_demand", actor=ACTOR
    )
    assert (doc.policy, doc.mime_type) == (DocumentPolicy.ON_DEMAND, "text/markdown")
    assert doc.created_at == doc.updated_at

    with pytest.raises(ConflictError, match=r"document 'refunds' already exists.*--replace"):
        await lib.add_document(store, "acme", "handbook", **fields, policy="spine", actor=ACTOR)
    replaced = await lib.add_document(
        store,
        "acme",
        "handbook",
        slug="refunds",
        title="  Refunds,\n revised ",
        body="Refund within 60 days.",
        mime_type="Text/Plain",
        policy=DocumentPolicy.SPINE,
        replace=True,
        actor=ACTOR,
    )
    assert (replaced.id, replaced.created_at) == (doc.id, doc.created_at)
    assert replaced.updated_at > doc.updated_at
    assert (replaced.title, replaced.mime_type) == ("Refunds, revised", "text/plain")
    assert await lib.list_documents(store, "acme", "handbook") == [replaced]
    (attachment,) = await store.select(GroupLibrary)
    hits = await store.search_documents(attachment.group_id, "60 days", limit=5)
    assert [h.document_id for h in hits] == [doc.id]

    # replace=True on a new slug simply adds it.
    new = await lib.add_document(
        store,
        "acme",
        "handbook",
        slug="new",
        title="New",
        body="b",
        policy="never",
        replace=True,
        actor=ACTOR,
    )
    assert new.created_at == new.updated_at

    assert await lib.remove_document(store, "acme", "handbook", "refunds", actor=ACTOR) == replaced
    with pytest.raises(
        NotFoundError, match=r"no document 'refunds' in library 'handbook' \(see `agentws doc list"
    ):
        await lib.remove_document(store, "acme", "handbook", "refunds", actor=ACTOR)
    assert [a[1:3] for a in await _audit(store)][1:] == [
        ("document.add", "acme/handbook/refunds"),
        ("document.replace", "acme/handbook/refunds"),
        ("document.add", "acme/handbook/new"),
        ("document.remove", "acme/handbook/refunds"),
    ]
    detail = (await _audit(store))[1][3]
    assert detail == {"id": doc.id, "policy": "on_demand", "bytes": 22}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"policy": "sometimes"}, "invalid policy 'sometimes': use one of spine, on_demand, never"),
        ({"slug": "Bad_Slug"}, "invalid document slug 'Bad_Slug'"),
        ({"title": " \n "}, "title must be 1 to 200 characters"),
        ({"title": "t" * 201}, "title must be 1 to 200 characters"),
        ({"mime_type": "markdown"}, "invalid MIME type 'markdown'"),
        ({"mime_type": "application/json", "body": "{'a': 1}"}, "is not valid JSON"),
        ({"mime_type": "application/json", "body": "NaN"}, "is not valid JSON"),
        ({"body": "a\x00b"}, "contains NUL characters"),
        ({"body": "\ud800"}, "unpaired surrogates"),
        ({"body": "é" * (512 * 1024 + 1)}, "is 1,048,578 bytes: the most allowed is 1,048,576"),
    ],
    ids=["policy", "slug", "blank", "long", "mime", "json", "nan", "nul", "lone", "big"],
)
async def test_add_document_refuses_bad_input(
    store: SqlStore, change: dict[str, str], message: str
) -> None:
    await _seed(store)
    fields = {"slug": "d", "title": "T", "body": "b", "mime_type": "text/markdown"}
    fields.update(change)
    policy = fields.pop("policy", "spine")
    with pytest.raises(ValidationError, match=re.escape(message)):
        await lib.add_document(store, "acme", "handbook", **fields, policy=policy, actor=ACTOR)
    assert await lib.list_documents(store, "acme", "handbook") == []


async def test_a_document_of_exactly_the_limit_is_accepted(store: SqlStore) -> None:
    await _seed(store)
    body = "x" * lib.MAX_DOCUMENT_BYTES
    doc = await lib.add_document(
        store, "acme", "handbook", slug="big", title="Big", body=body, policy="never", actor=ACTOR
    )
    assert len(doc.body) == lib.MAX_DOCUMENT_BYTES


def _folder(root: Path, *, description: str = "Triage an issue") -> Path:
    folder = root / "triage"
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: triage\ndescription: {description}\n---\nTriage it.\n"
    )
    (folder / "data" / "labels.json").write_text('["bug"]\n')
    return folder


async def test_add_replace_and_remove_a_skill(store: SqlStore, tmp_path: Path) -> None:
    await _seed(store)
    folder = _folder(tmp_path)
    skill = await lib.add_skill(store, "acme", "handbook", folder, actor=ACTOR)
    assert (skill.slug, skill.description) == ("triage", "Triage an issue")
    assert skill.prompt == "Triage it."
    assert skill.assets == (
        SkillAsset(name="data/labels.json", mime_type="application/json", text='["bug"]\n'),
    )
    with pytest.raises(ConflictError, match=r"skill 'triage' already exists.*--replace"):
        await lib.add_skill(store, "acme", "handbook", str(folder), actor=ACTOR)

    loaded = lib.load_skill_folder(_folder(tmp_path, description="Triage, v2"))
    replaced = await lib.add_skill(store, "acme", "handbook", loaded, replace=True, actor=ACTOR)
    assert (replaced.id, replaced.created_at) == (skill.id, skill.created_at)
    assert replaced.description == "Triage, v2"
    assert await lib.list_skills(store, "acme", "handbook") == [replaced]

    assert await lib.remove_skill(store, "acme", "handbook", "triage", actor=ACTOR) == replaced
    with pytest.raises(NotFoundError, match=r"no skill 'triage' in library 'handbook'"):
        await lib.remove_skill(store, "acme", "handbook", "triage", actor=ACTOR)
    assert [a[1:] for a in await _audit(store)] == [
        ("skill.add", "acme/handbook/triage", {"id": skill.id, "assets": 1}),
        ("skill.replace", "acme/handbook/triage", {"id": skill.id, "assets": 1}),
        ("skill.remove", "acme/handbook/triage", {"id": skill.id}),
    ]


@pytest.mark.parametrize(
    ("skill", "message"),
    [
        (lib.SkillFolder(slug="s", description="d", prompt="  "), "has no prompt"),
        (lib.SkillFolder(slug="s", description="d" * 1025, prompt="p"), "1 to 1024 characters"),
        (lib.SkillFolder(slug="S!", description="d", prompt="p"), "invalid skill name 'S!'"),
        (
            lib.SkillFolder(
                slug="s",
                description="d",
                prompt="p",
                assets=(SkillAsset(name="a.txt", text="x" * lib.MAX_SKILL_BYTES),),
            ),
            "with its assets is 1,048,577 bytes",
        ),
    ],
    ids=["no-prompt", "long-description", "slug", "big"],
)
async def test_add_skill_refuses_bad_skills(
    store: SqlStore, skill: lib.SkillFolder, message: str
) -> None:
    await _seed(store)
    with pytest.raises(ValidationError, match=message):
        await lib.add_skill(store, "acme", "handbook", skill, actor=ACTOR)
    assert await lib.list_skills(store, "acme", "handbook") == []
