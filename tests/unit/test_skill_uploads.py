"""A skill uploaded as a folder's files or as a zip (:mod:`agentws.libraries.uploads`)."""

from __future__ import annotations

import io
import re
import stat
import zipfile
from contextlib import AbstractContextManager
from typing import Any

import pytest

from agentws.core.errors import ValidationError
from agentws.libraries.checks import MAX_SKILL_BYTES
from agentws.libraries.uploads import MAX_SKILL_FILES, skill_from_files, skill_from_zip

SKILL_MD = b"---\nname: triage\ndescription: Triage an issue\n---\nLabel it, find an owner.\n"


def _refused(text: str) -> AbstractContextManager[Any]:
    return pytest.raises(ValidationError, match=re.escape(text))


def _zip(files: dict[str, bytes], *, infos: list[zipfile.ZipInfo] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        for info in infos or []:
            archive.writestr(info, b"x")
    return buffer.getvalue()


def test_a_folders_files_make_the_skill_under_its_top_folder() -> None:
    skill = skill_from_files(
        [
            ("triage/SKILL.md", SKILL_MD),
            ("triage/data/labels.json", b'["bug"]\n'),
            ("triage/checklist.md", b"- label\n"),
            ("triage/.DS_Store", b"\x00\x01"),
            ("triage/__pycache__/x.pyc", b"\x00"),
        ]
    )
    assert (skill.slug, skill.description, skill.prompt) == (
        "triage",
        "Triage an issue",
        "Label it, find an owner.",
    )
    assert [(a.name, a.mime_type) for a in skill.assets] == [
        ("checklist.md", "text/markdown"),
        ("data/labels.json", "application/json"),
    ]


@pytest.mark.parametrize("top", ["", "triage/", "./triage/"])
def test_a_zip_with_or_without_its_top_folder(top: str) -> None:
    data = _zip(
        {
            f"{top}SKILL.md": SKILL_MD,
            f"{top}notes/a.txt": b"a\n",
            "__MACOSX/._SKILL.md": b"\x00\x05",
        }
    )
    skill = skill_from_zip(data)
    assert skill.slug == "triage"
    assert [a.name for a in skill.assets] == ["notes/a.txt"]


@pytest.mark.parametrize(
    "name", ["../SKILL.md", "triage/../../etc/passwd", "/etc/passwd", "C:/x.txt", "a\\..\\b"]
)
def test_a_path_that_climbs_out_is_refused(name: str) -> None:
    with _refused("is not a path inside the skill's folder"):
        skill_from_zip(_zip({"SKILL.md": SKILL_MD, name: b"x"}))
    with _refused("is not a path inside the skill's folder"):
        skill_from_files([("SKILL.md", SKILL_MD), (name, b"x")])


def test_a_symbolic_link_or_an_encrypted_entry_is_refused() -> None:
    link = zipfile.ZipInfo("link.txt")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with _refused("'link.txt' in the zip is a symbolic link"):
        skill_from_zip(_zip({"SKILL.md": SKILL_MD}, infos=[link]))
    locked = bytearray(_zip({"SKILL.md": SKILL_MD, "locked.txt": b"x"}))
    # zipfile writes no encrypted entry: set the flag in locked.txt's central record.
    at = locked.rindex(b"PK\x01\x02")
    locked[at + 8] |= 0x1
    with _refused("'locked.txt' in the zip is encrypted"):
        skill_from_zip(bytes(locked))


def test_what_is_too_big_or_too_many_is_refused() -> None:
    big = b"a" * (MAX_SKILL_BYTES + 1)
    # Deflated, this is a few KiB: the unpacked size is what counts.
    with _refused("hold more than 1.0 MiB in all"):
        skill_from_zip(_zip({"SKILL.md": SKILL_MD, "big.txt": big}))
    halves = {f"{i}.txt": b"a" * (MAX_SKILL_BYTES // 2) for i in range(3)}
    with _refused("hold more than 1.0 MiB in all"):
        skill_from_zip(_zip({"SKILL.md": SKILL_MD, **halves}))
    with _refused("hold more than 1.0 MiB in all"):
        skill_from_files([("SKILL.md", SKILL_MD), ("big.txt", big)])
    many = {f"{i}.txt": b"x" for i in range(MAX_SKILL_FILES)}
    with _refused(f"at most {MAX_SKILL_FILES} files"):
        skill_from_zip(_zip({"SKILL.md": SKILL_MD, **many}))
    with _refused(f"at most {MAX_SKILL_FILES} files"):
        skill_from_files([("SKILL.md", SKILL_MD), *many.items()])
    with _refused("the zip is larger than"):
        skill_from_zip(b"PK" + b"\x00" * (2 * MAX_SKILL_BYTES))


def test_a_zip_whose_headers_understate_its_size_is_refused() -> None:
    data = bytearray(_zip({"SKILL.md": SKILL_MD, "big.txt": b"a" * (MAX_SKILL_BYTES + 10)}))
    # Claim a tiny uncompressed size in the central directory's record of big.txt.
    at = data.rindex(b"PK\x01\x02")  # the last central record is big.txt's
    data[at + 24 : at + 28] = (5).to_bytes(4, "little")
    with pytest.raises(ValidationError, match=r"cannot unpack 'big\.txt': Bad CRC-32"):
        skill_from_zip(bytes(data))


def test_skill_md_missing_doubled_or_with_files_beside_its_folder() -> None:
    with _refused("no SKILL.md in the upload"):
        skill_from_zip(_zip({"triage/notes.txt": b"x"}))
    with _refused("no SKILL.md in the upload"):
        skill_from_files([])
    with _refused("SKILL.md in several folders"):
        skill_from_zip(_zip({"a/SKILL.md": SKILL_MD, "b/SKILL.md": SKILL_MD}))
    with _refused("'README.md' is outside the skill's folder"):
        skill_from_zip(_zip({"triage/SKILL.md": SKILL_MD, "README.md": b"x"}))
    with _refused("the file is not a zip archive"):
        skill_from_zip(b"not a zip")
    # The checks of a folder on disk: the front matter, text only.
    with _refused("SKILL.md has no front matter"):
        skill_from_files([("t/SKILL.md", b"just a prompt")])
    with _refused("'bin.dat' is not UTF-8 text"):
        skill_from_files([("t/SKILL.md", SKILL_MD), ("t/bin.dat", b"\xff\xfe\x00")])


def test_a_deeper_skill_md_is_an_asset_of_the_shallowest() -> None:
    skill = skill_from_zip(
        _zip({"triage/SKILL.md": SKILL_MD, "triage/examples/other/SKILL.md": SKILL_MD})
    )
    assert [a.name for a in skill.assets] == ["examples/other/SKILL.md"]
