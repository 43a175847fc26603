"""``agentws library``, ``doc`` and ``skill``, run as real processes.

Each process costs about 0.3 s, so a test walks through a whole story
(create, list, change, remove) rather than one step. The stories run on
SQLite and PostgreSQL; the error cases, which do not depend on the store, on
SQLite only. ``--help`` is checked in-process, where it costs nothing; the
service rules behind the commands (idempotent attach, audit entries...) are
tested in-process too, in ``tests/contract/test_library_service.py``.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from agentws.cli import main
from tests.cli.conftest import Cli

HELP_COMMANDS = [
    ["library"],
    ["library", "create"],
    ["library", "list"],
    ["library", "attach"],
    ["library", "detach"],
    ["doc"],
    ["doc", "add"],
    ["doc", "list"],
    ["doc", "remove"],
    ["skill"],
    ["skill", "add"],
    ["skill", "list"],
    ["skill", "remove"],
]

HANDBOOK = """# Refund policy

Customers may ask for a refund within 30 days.
"""


def _with_library(cli: Cli, library: str = "handbook") -> None:
    cli.ok("workspace", "create", "acme")
    cli.ok("group", "create", "acme", "ops")
    cli.ok("library", "create", "acme", library)


def _skill_folder(root: Path, name: str = "triage") -> Path:
    folder = root / name
    (folder / "data").mkdir(parents=True)
    (folder / "__pycache__").mkdir()
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Triage an incoming issue\n---\n\n"
        "Label the issue, find an owner, reply politely.\n"
    )
    (folder / "checklist.md").write_text("- label\n- owner\n")
    (folder / "data" / "labels.json").write_text('["bug", "feature"]\n')
    (folder / ".hidden").write_text("not an asset")
    (folder / "__pycache__" / "x.pyc").write_bytes(b"\x00\xff")
    return folder


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=" ".join)
def test_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {' '.join(['agentws', *command])}")
    if len(command) == 2:  # leaf commands all take the common options
        assert "--database URL" in out
        assert "--json" in out


def test_top_level_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("library", "doc", "skill"):
        assert f"    {command} " in out


# --- stories, on both stores ----------------------------------------------------------


def test_library_create_list_attach_detach(any_cli: Cli) -> None:
    any_cli.ok("workspace", "create", "acme")
    any_cli.ok("group", "create", "acme", "ops")
    assert "No libraries in 'acme'" in any_cli.ok("library", "list", "acme")

    created = any_cli.json("library", "create", "acme", "handbook", "--name", "Team handbook")
    assert created["id"].startswith("lib_")
    assert (created["slug"], created["name"], created["groups"]) == (
        "handbook",
        "Team handbook",
        [],
    )
    assert "library 'handbook' already exists in workspace 'acme'" in any_cli.fails(
        "library", "create", "acme", "handbook"
    )

    attached = any_cli.json("library", "attach", "acme", "ops", "handbook")
    assert attached["id"].startswith("glb_")
    assert (attached["group"], attached["library_id"]) == ("ops", created["id"])
    # Attaching again is fine and changes nothing.
    again = any_cli.ok("library", "attach", "acme", "ops", "handbook")
    assert "is attached to acme/ops" in again

    (listed,) = any_cli.json("library", "list", "acme")
    assert (listed["id"], listed["groups"]) == (created["id"], ["ops"])
    lines = any_cli.ok("library", "list", "acme").splitlines()
    assert lines[0].split() == ["SLUG", "NAME", "GROUPS", "ID"]
    assert lines[1].split()[:1] == ["handbook"]
    assert " ops " in lines[1]

    detached = any_cli.json("library", "detach", "acme", "ops", "handbook")
    assert (detached["id"], detached["detached"]) == (attached["id"], True)
    assert "was not attached" in any_cli.ok("library", "detach", "acme", "ops", "handbook")
    assert any_cli.json("library", "list", "acme")[0]["groups"] == []


def test_doc_add_list_replace_remove(any_cli: Cli, tmp_path: Path) -> None:
    _with_library(any_cli)
    (tmp_path / "Refund_Policy.md").write_text(HANDBOOK)
    (tmp_path / "notes.txt").write_text("# not a heading in plain text\n")
    (tmp_path / "limits.json").write_text('{"refund_days":30,"currencies":["EUR","USD"]}')

    md = any_cli.json("doc", "add", "acme", "handbook", "Refund_Policy.md", "--policy", "spine")
    assert md["id"].startswith("doc_")
    assert (md["slug"], md["title"], md["mime_type"], md["policy"]) == (
        "refund-policy",
        "Refund policy",
        "text/markdown",
        "spine",
    )
    assert md["bytes"] == len(HANDBOOK.encode())
    text = any_cli.ok("doc", "add", "acme", "handbook", "notes.txt", "--policy", "never")
    assert "Added document 'notes' (doc_" in text
    data = any_cli.json(
        "doc", "add", "acme", "handbook", "limits.json", "--policy", "on_demand", "--title", "L"
    )
    assert (data["slug"], data["title"], data["mime_type"]) == ("limits", "L", "application/json")
    pretty = json.dumps({"refund_days": 30, "currencies": ["EUR", "USD"]}, indent=2) + "\n"
    assert data["bytes"] == len(pretty)

    listed = any_cli.json("doc", "list", "acme", "handbook")
    assert [(d["slug"], d["title"], d["policy"]) for d in listed] == [
        ("refund-policy", "Refund policy", "spine"),
        ("notes", "notes", "never"),
        ("limits", "L", "on_demand"),
    ]
    table = any_cli.ok("doc", "list", "acme", "handbook").splitlines()
    assert table[0].split() == ["SLUG", "TITLE", "POLICY", "MIME", "SIZE"]
    row = ["refund-policy", "Refund", "policy", "spine", "text/markdown", str(md["bytes"]), "bytes"]
    assert table[1].split() == row

    # A second add of the same slug is refused, unless it says --replace.
    add_again = ("doc", "add", "acme", "handbook", "Refund_Policy.md", "--policy", "spine")
    stderr = any_cli.fails(*add_again)
    assert "document 'refund-policy' already exists in library 'handbook'" in stderr
    assert "--replace" in stderr
    (tmp_path / "Refund_Policy.md").write_text("# Refunds, revised\n\n60 days now.\n")
    replaced = any_cli.json(
        "doc", "add", "acme", "handbook", "Refund_Policy.md", "--policy", "on_demand", "--replace"
    )
    assert replaced["id"] == md["id"]
    assert (replaced["title"], replaced["policy"]) == ("Refunds, revised", "on_demand")
    assert replaced["created_at"] == md["created_at"]
    assert replaced["updated_at"] > md["updated_at"]

    removed = any_cli.ok("doc", "remove", "acme", "handbook", "notes")
    assert "Removed document 'notes'" in removed
    stderr = any_cli.fails("doc", "remove", "acme", "handbook", "notes")
    assert "no document 'notes' in library 'handbook'" in stderr
    assert "agentws doc list acme handbook" in stderr
    assert [d["slug"] for d in any_cli.json("doc", "list", "acme", "handbook")] == [
        "refund-policy",
        "limits",
    ]


def test_skill_add_list_replace_remove(any_cli: Cli, tmp_path: Path) -> None:
    _with_library(any_cli)
    folder = _skill_folder(tmp_path)
    assert "No skills in acme/handbook" in any_cli.ok("skill", "list", "acme", "handbook")

    added = any_cli.json("skill", "add", "acme", "handbook", str(folder))
    assert added["id"].startswith("skl_")
    assert (added["slug"], added["description"]) == ("triage", "Triage an incoming issue")
    assert added["assets"] == [
        {"name": "checklist.md", "mime_type": "text/markdown", "bytes": 16},
        {"name": "data/labels.json", "mime_type": "application/json", "bytes": 19},
    ]

    stderr = any_cli.fails("skill", "add", "acme", "handbook", str(folder))
    assert "skill 'triage' already exists in library 'handbook'" in stderr
    assert "--replace" in stderr
    (folder / "checklist.md").unlink()
    text = any_cli.ok("skill", "add", "acme", "handbook", str(folder), "--replace")
    assert f"Replaced skill 'triage' ({added['id']})" in text
    assert "1 asset(s): data/labels.json" in text

    (listed,) = any_cli.json("skill", "list", "acme", "handbook")
    assert (listed["id"], len(listed["assets"])) == (added["id"], 1)
    table = any_cli.ok("skill", "list", "acme", "handbook").splitlines()
    assert table[0].split() == ["SLUG", "DESCRIPTION", "ASSETS", "ID"]
    assert table[1].split() == ["triage", "Triage", "an", "incoming", "issue", "1", added["id"]]

    assert "Removed skill 'triage'" in any_cli.ok("skill", "remove", "acme", "handbook", "triage")
    assert any_cli.json("skill", "list", "acme", "handbook") == []
    assert "no skill 'triage' in library 'handbook'" in any_cli.fails(
        "skill", "remove", "acme", "handbook", "triage"
    )


# --- SQLite only: input from stdin, errors ----------------------------------


def test_doc_from_stdin(cli: Cli, tmp_path: Path) -> None:
    _with_library(cli)
    body = "# Ignored heading\n\nOn-call rota: ✓ ünïcode.\n"
    doc = cli.json(
        "doc",
        "add",
        "acme",
        "handbook",
        "-",
        "--title",
        "On-call rota",
        "--policy",
        "spine",
        input=body,
    )
    assert (doc["slug"], doc["title"], doc["mime_type"]) == (
        "on-call-rota",
        "On-call rota",
        "text/markdown",
    )
    assert doc["bytes"] == len(body.encode())
    by_slug = cli.json(
        "doc",
        "add",
        "acme",
        "handbook",
        "-",
        "--slug",
        "raw",
        "--mime",
        "text/plain",
        "--policy",
        "never",
        input="plain text",
    )
    assert (by_slug["slug"], by_slug["title"], by_slug["mime_type"]) == ("raw", "raw", "text/plain")
    stderr = cli.fails("doc", "add", "acme", "handbook", "-", "--policy", "spine", input="x")
    assert "stdin (-) needs --slug or --title" in stderr

    with contextlib.closing(sqlite3.connect(tmp_path / "a.db")) as db:
        stored = dict(db.execute("SELECT slug, body FROM context_documents").fetchall())
    assert stored == {"on-call-rota": body, "raw": "plain text"}


def test_doc_errors_say_what_is_wrong(cli: Cli, tmp_path: Path) -> None:
    _with_library(cli)
    (tmp_path / "latin1.md").write_bytes("# Café\n".encode("latin-1"))
    (tmp_path / "slides.pdf").write_bytes(b"%PDF-1.7")
    (tmp_path / "ok.md").write_text("# Fine\n")

    result = cli.run("doc", "add", "acme", "handbook", "ok.md", "--policy", "sometimes")
    assert result.returncode == 2
    assert "invalid choice: 'sometimes'" in result.stderr
    assert "on_demand" in result.stderr

    stderr = cli.fails("doc", "add", "acme", "handbook", "latin1.md", "--policy", "spine")
    assert "'latin1.md' is not UTF-8 text" in stderr
    stderr = cli.fails("doc", "add", "acme", "handbook", "slides.pdf", "--policy", "spine")
    assert ".md, .markdown, .txt, .text, .json" in stderr
    assert "--mime" in stderr
    stderr = cli.fails("doc", "add", "acme", "nope", "ok.md", "--policy", "spine")
    assert "no library 'nope' in workspace 'acme'" in stderr
    assert "agentws library list acme" in stderr
    assert "no workspace 'zzz'" in cli.fails("doc", "list", "zzz", "handbook")
    error = cli.fails_json("doc", "add", "acme", "handbook", "latin1.md", "--policy", "spine")
    assert error["code"] == "invalid"
    assert cli.json("doc", "list", "acme", "handbook") == []


def test_skill_errors_say_what_is_wrong(cli: Cli, tmp_path: Path) -> None:
    _with_library(cli)
    no_front = tmp_path / "no-front"
    no_front.mkdir()
    (no_front / "SKILL.md").write_text("Just a prompt, no front matter.\n")
    binary = _skill_folder(tmp_path, "binary")
    (binary / "data" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")

    stderr = cli.fails("skill", "add", "acme", "handbook", str(no_front))
    assert "SKILL.md has no front matter" in stderr
    stderr = cli.fails("skill", "add", "acme", "handbook", str(binary))
    assert "'data/logo.png' is not UTF-8 text" in stderr
    assert "text files only" in stderr
    assert cli.json("skill", "list", "acme", "handbook") == []
