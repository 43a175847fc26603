"""Reading documents and skills from disk: :func:`load_document_file`, :func:`load_skill_folder`."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from agentws.core.errors import ValidationError
from agentws.domain.models import SkillAsset
from agentws.libraries import (
    MAX_DOCUMENT_BYTES,
    MAX_SKILL_BYTES,
    DocumentFile,
    SkillFolder,
    load_document_file,
    load_skill_folder,
    slug_from,
)

# -- documents --------------------------------------------------------------------------


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_markdown_takes_its_title_from_the_first_heading(tmp_path: Path) -> None:
    body = (
        "Intro line\n\n```sh\n# a shell comment, not a heading\n```\n\n"
        "# Refund policy ##\n\n## Later\n"
    )
    got = load_document_file(_write(tmp_path / "Refund Policy_v2.MD", body))
    assert got == DocumentFile(
        slug="refund-policy-v2", title="Refund policy", body=body, mime_type="text/markdown"
    )


@pytest.mark.parametrize(
    ("name", "mime"),
    [
        ("a.md", "text/markdown"),
        ("a.markdown", "text/markdown"),
        ("a.txt", "text/plain"),
        ("a.TEXT", "text/plain"),
        ("a.json", "application/json"),
    ],
)
def test_the_extension_gives_the_type(tmp_path: Path, name: str, mime: str) -> None:
    assert load_document_file(_write(tmp_path / name, "{}")).mime_type == mime


def test_without_a_heading_the_title_is_the_file_stem(tmp_path: Path) -> None:
    assert load_document_file(_write(tmp_path / "on-call.md", "no heading\n")).title == "on-call"
    # Plain text has no headings: a leading '#' is just text.
    plain = load_document_file(_write(tmp_path / "notes.txt", "# not a heading\n"))
    assert (plain.title, plain.mime_type) == ("notes", "text/plain")


def test_flags_override_title_slug_and_type(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.csv", "a,b\n1,2\n")
    got = load_document_file(path, title="Numbers", slug="numbers-2024", mime_type="Text/CSV")
    assert got == DocumentFile(
        slug="numbers-2024", title="Numbers", body="a,b\n1,2\n", mime_type="text/csv"
    )


def test_json_is_checked_and_pretty_printed(tmp_path: Path) -> None:
    raw = '{"z": 1, "a": ["ü", 2.5, null, true], "nested": {"k": "v"}}'
    got = load_document_file(_write(tmp_path / "limits.json", raw))
    assert got.body == json.dumps(json.loads(raw), indent=2, ensure_ascii=False) + "\n"
    assert got.body.splitlines()[1] == '  "z": 1,'  # key order is the file's
    assert "ü" in got.body
    assert (got.title, got.slug) == ("limits", "limits")
    # --mime application/json on another extension checks it just the same.
    assert load_document_file(_write(tmp_path / "x.txt", "[1]"), mime_type="application/json")


@pytest.mark.parametrize("raw", ['{"a": ', "{'a': 1}", "NaN", '{"a": Infinity}', ""])
def test_invalid_json_is_refused(tmp_path: Path, raw: str) -> None:
    with pytest.raises(ValidationError, match=r"'.*bad\.json' is not valid JSON"):
        load_document_file(_write(tmp_path / "bad.json", raw))


def test_unknown_extension_needs_mime(tmp_path: Path) -> None:
    path = _write(tmp_path / "slides.pdf", "text really")
    with pytest.raises(ValidationError) as caught:
        load_document_file(path)
    assert ".md, .markdown, .txt, .text, .json" in caught.value.message
    assert "--mime" in caught.value.message
    for name in ("README", "archive.tar.gz"):
        with pytest.raises(ValidationError, match="--mime"):
            load_document_file(_write(tmp_path / name, "x"))
    assert load_document_file(path, mime_type="text/plain").body == "text really"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("Café".encode("latin-1"), r"'.*latin\.md' is not UTF-8 text \(invalid byte at offset 3\)"),
        (b"\xff\xfe#\x00 \x00", "is not UTF-8 text"),
        (b"a\x00b", "contains NUL bytes"),
    ],
    ids=["latin-1", "utf-16", "nul"],
)
def test_only_utf8_text_is_read(tmp_path: Path, content: bytes, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        load_document_file(_write(tmp_path / "latin.md", content))


def test_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    got = load_document_file(_write(tmp_path / "bom.md", "\ufeff# Title\n".encode()))
    assert (got.title, got.body) == ("Title", "# Title\n")


def test_size_limit_is_one_mebibyte(tmp_path: Path) -> None:
    exact = _write(tmp_path / "exact.txt", b"x" * MAX_DOCUMENT_BYTES)
    assert len(load_document_file(exact).body) == MAX_DOCUMENT_BYTES
    over = _write(tmp_path / "over.txt", b"x" * (MAX_DOCUMENT_BYTES + 1))
    with pytest.raises(ValidationError, match=r"'.*over\.txt' is larger than 1\.0 MiB"):
        load_document_file(over)


def test_missing_files_and_folders_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="no such file"):
        load_document_file(tmp_path / "missing.md")
    (tmp_path / "folder.md").mkdir()
    with pytest.raises(ValidationError, match="is a directory"):
        load_document_file(tmp_path / "folder.md")


def test_stdin_needs_a_slug_or_a_title() -> None:
    with pytest.raises(ValidationError, match=r"stdin \(-\) needs --slug or --title"):
        load_document_file("-", stdin=io.BytesIO(b"text"))
    by_title = load_document_file("-", title="On-call rota!", stdin=io.BytesIO(b"text"))
    assert by_title == DocumentFile(
        slug="on-call-rota", title="On-call rota!", body="text", mime_type="text/markdown"
    )
    # With only a slug, a Markdown heading still names it; else the slug does.
    by_slug = load_document_file("-", slug="rota", stdin=io.BytesIO(b"# Rota\n"))
    assert (by_slug.slug, by_slug.title) == ("rota", "Rota")
    plain = load_document_file("-", slug="raw", mime_type="text/plain", stdin=io.BytesIO(b"# x\n"))
    assert (plain.title, plain.mime_type) == ("raw", "text/plain")
    with pytest.raises(ValidationError, match=r"stdin is larger than 1\.0 MiB"):
        load_document_file("-", slug="big", stdin=io.BytesIO(b"x" * (MAX_DOCUMENT_BYTES + 1)))
    with pytest.raises(ValidationError, match="stdin is not UTF-8"):
        load_document_file("-", slug="bad", stdin=io.BytesIO(b"\xff"))


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Refund Policy", "refund-policy"),
        ("notes_2024.final", "notes-2024-final"),
        ("--Weird--Name--", "weird--name"),
        ("Ünïcode café", "n-code-caf"),
        ("a" * 80, "a" * 63),
        ("x" * 62 + "-y", "x" * 62),
    ],
)
def test_slug_from(text: str, slug: str) -> None:
    assert slug_from(text) == slug


@pytest.mark.parametrize("text", ["日本語", "---", "", "🎉"])
def test_slug_from_nothing_usable_asks_for_one(text: str) -> None:
    with pytest.raises(ValidationError, match="give one with --slug"):
        slug_from(text)


# -- skills -----------------------------------------------------------------------------

SKILL_MD = """---
name: triage
description: >-
  Triage an incoming issue:
  label, owner, reply.
---

Label the issue, find an owner, and reply politely.

Use data/labels.json for the labels.
"""


def _skill(
    root: Path, skill_md: str | bytes = SKILL_MD, files: dict[str, str | bytes] | None = None
) -> Path:
    folder = root / "triage"
    _write(folder / "SKILL.md", skill_md)
    for name, content in (files or {}).items():
        _write(folder / name, content)
    return folder


def test_a_skill_folder_is_read_with_its_assets(tmp_path: Path) -> None:
    folder = _skill(
        tmp_path,
        files={
            "checklist.md": "- label\n",
            "data/labels.json": '["bug"]\n',
            "data/deep/rules.yaml": "a: 1\n",
            "scripts/run.py": "print('✓')\n",
            "Makefile": "all:\n",
            "notes.unknownext": "x",
            ".env": "SECRET=1",
            ".git/config": "[core]",
            "scripts/__pycache__/run.cpython-311.pyc": b"\x00\xff",
        },
    )
    got = load_skill_folder(folder)
    assert got == SkillFolder(
        slug="triage",
        description="Triage an incoming issue: label, owner, reply.",
        prompt="Label the issue, find an owner, and reply politely.\n\n"
        "Use data/labels.json for the labels.",
        assets=(
            SkillAsset(name="Makefile", mime_type="text/plain", text="all:\n"),
            SkillAsset(name="checklist.md", mime_type="text/markdown", text="- label\n"),
            SkillAsset(name="notes.unknownext", mime_type="text/plain", text="x"),
            SkillAsset(name="data/labels.json", mime_type="application/json", text='["bug"]\n'),
            SkillAsset(name="data/deep/rules.yaml", mime_type="application/yaml", text="a: 1\n"),
            SkillAsset(name="scripts/run.py", mime_type="text/x-python", text="print('✓')\n"),
        ),
    )


def test_windows_line_endings_and_a_byte_order_mark_are_fine(tmp_path: Path) -> None:
    text = "\ufeff---\r\nname: triage\r\ndescription: d\r\n---\r\nPrompt.\r\n"
    got = load_skill_folder(_skill(tmp_path, text.encode()))
    assert (got.slug, got.description, got.prompt) == ("triage", "d", "Prompt.")


@pytest.mark.parametrize(
    ("skill_md", "message"),
    [
        ("Just a prompt.\n", "SKILL.md has no front matter: it must start with a line '---'"),
        ("", "SKILL.md has no front matter"),
        ("---\nname: triage\ndescription: d\nPrompt.\n", "no closing '---' line"),
        ("---\nname: [unclosed\n---\nPrompt\n", "the front matter is not valid YAML"),
        ("---\n- a\n- b\n---\nPrompt\n", "must be 'key: value' lines"),
        ("---\n---\nPrompt\n", "must be 'key: value' lines"),
        ("---\ndescription: d\n---\nPrompt\n", "needs 'name: SLUG'"),
        ("---\nname: 42\ndescription: d\n---\nPrompt\n", "needs 'name: SLUG'"),
        ("---\nname: Triage Bot\ndescription: d\n---\nP\n", "invalid skill name in SKILL.md"),
        ("---\nname: triage\n---\nPrompt\n", "needs 'description: ...'"),
        ("---\nname: triage\ndescription: '  '\n---\nPrompt\n", "needs 'description: ...'"),
        ("---\nname: x\ndescription: !!python/object:os.system x\n---\nP\n", "not valid YAML"),
    ],
    ids=[
        "no-front-matter",
        "empty",
        "unclosed",
        "bad-yaml",
        "list",
        "empty-front-matter",
        "no-name",
        "number-name",
        "bad-name",
        "no-description",
        "blank-description",
        "unsafe-yaml",
    ],
)
def test_front_matter_problems_are_named(tmp_path: Path, skill_md: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        load_skill_folder(_skill(tmp_path, skill_md))


def test_binary_assets_are_refused_by_name(tmp_path: Path) -> None:
    folder = _skill(tmp_path / "a", files={"img/logo.png": b"\x89PNG\r\n\x1a\n\xff"})
    with pytest.raises(ValidationError, match=r"'img/logo\.png' is not UTF-8 text.*text files"):
        load_skill_folder(folder)
    nul = _skill(tmp_path / "b", files={"data.bin": b"a\x00b"})
    with pytest.raises(ValidationError, match=r"'data\.bin' contains NUL bytes"):
        load_skill_folder(nul)


def test_symbolic_links_are_refused(tmp_path: Path) -> None:
    secret = _write(tmp_path / "outside" / "id_rsa", "PRIVATE KEY")
    folder = _skill(tmp_path)
    os.symlink(secret, folder / "key.txt")
    with pytest.raises(ValidationError, match=r"'key\.txt' in the skill folder is a symbolic link"):
        load_skill_folder(folder)
    (folder / "key.txt").unlink()
    os.symlink(secret.parent, folder / "linked")
    with pytest.raises(ValidationError, match=r"'linked' .* symbolic link"):
        load_skill_folder(folder)


def test_skill_size_limit_counts_every_file(tmp_path: Path) -> None:
    half = "x" * (MAX_SKILL_BYTES // 2)
    assert load_skill_folder(_skill(tmp_path / "a", files={"a.txt": half}))
    folder = _skill(tmp_path / "b", files={"a.txt": half, "b.txt": half})
    with pytest.raises(ValidationError, match=r"holds more than 1\.0 MiB"):
        load_skill_folder(folder)


def test_not_a_skill_folder(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="is not a folder"):
        load_skill_folder(tmp_path / "missing")
    with pytest.raises(ValidationError, match="is not a folder"):
        load_skill_folder(_write(tmp_path / "file.md", "x"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValidationError, match=r"no SKILL\.md in"):
        load_skill_folder(tmp_path / "empty")
