"""A skill sent over HTTP: the files of a chosen folder, or a ``.zip`` of one.

A browser sends a folder (``<input type=file webkitdirectory>``) as one
file per part, each named by its path relative to the folder's parent
(``triage/SKILL.md``, ``triage/data/labels.json``); a zip holds the same
paths, with or without the top folder. Either way :func:`skill_from_files`
and :func:`skill_from_zip` find ``SKILL.md``, take the files under its
folder as the assets, and hand them to
:func:`~agentws.libraries.loading.build_skill_folder`, which checks them as
``agentws skill add`` checks a folder on disk. Hidden files and
``__pycache__`` are left out as there; so are ``__MACOSX`` folders, which
the Finder adds to the zips it makes.

What an upload may not hold, each refused with a
:class:`~agentws.core.errors.ValidationError` saying so: a path that climbs out
of the folder (``..``, an absolute path, a drive, a backslash), a
symbolic link, an encrypted entry, a file outside the folder holding
``SKILL.md``, more than :data:`MAX_SKILL_FILES` files once those left out are
(and a zip of more than :data:`MAX_ZIP_ENTRIES` entries in all),
more than :data:`~agentws.libraries.checks.MAX_SKILL_BYTES` in all once
unpacked (read with that cap, whatever a zip's headers claim), no
``SKILL.md``, or ``SKILL.md`` in more than one folder.
"""

from __future__ import annotations

import io
import stat
import zipfile
from collections.abc import Iterable
from pathlib import PurePosixPath

from agentws.core.errors import ValidationError
from agentws.libraries.checks import MAX_SKILL_BYTES, format_bytes
from agentws.libraries.loading import SKILL_FILE, SkillFolder, build_skill_folder

__all__ = [
    "MAX_SKILL_FILES",
    "MAX_SKILL_ZIP_BYTES",
    "MAX_ZIP_ENTRIES",
    "skill_from_files",
    "skill_from_zip",
]

#: Files in one skill: SKILL.md and its assets. A skill is a prompt with a few
#: references; hundreds of files is a folder chosen by mistake.
MAX_SKILL_FILES = 200
#: A zip as uploaded: its text unpacked may be :data:`MAX_SKILL_BYTES`, and a
#: zip of text is smaller than the text, so this leaves room for stored entries.
MAX_SKILL_ZIP_BYTES = MAX_SKILL_BYTES + 256 * 1024
#: Entries a zip may hold before anything is left out: the Finder adds a ``._``
#: twin of each file under ``__MACOSX``, so a skill at the limit has twice as
#: many; this bounds the work on a zip of many empty entries.
MAX_ZIP_ENTRIES = 4 * MAX_SKILL_FILES
_SKIPPED_DIRECTORIES = frozenset({"__pycache__", "__MACOSX"})
_TOO_MANY = f"a skill holds at most {MAX_SKILL_FILES} files"
_TOO_BIG = f"the skill's files hold more than {format_bytes(MAX_SKILL_BYTES)} in all"


def _path(name: str) -> PurePosixPath:
    """``name`` as a relative path inside the folder; ValidationError if it climbs out."""
    parts = name.split("/")
    if (
        not name
        or "\\" in name
        or "\x00" in name
        or name.startswith("/")
        or ".." in parts
        or (len(parts[0]) >= 2 and parts[0][1] == ":")
    ):
        raise ValidationError(
            f"{name!r} is not a path inside the skill's folder: "
            "no '..', absolute paths, drives or backslashes"
        )
    return PurePosixPath(*[p for p in parts if p not in ("", ".")])


def _kept(path: PurePosixPath) -> bool:
    return not any(p.startswith(".") or p in _SKIPPED_DIRECTORIES for p in path.parts)


def _skill(files: dict[PurePosixPath, bytes]) -> SkillFolder:
    homes = sorted(p.parent for p in files if p.name == SKILL_FILE)
    if not homes:
        raise ValidationError(
            f"no {SKILL_FILE} in the upload: a skill is a folder holding {SKILL_FILE} "
            "(front matter with name and description, then the prompt) and its files"
        )
    # The skill's folder is the shallowest one with a SKILL.md (a skill may
    # carry another skill's SKILL.md as an example, deeper down).
    home = min(homes, key=lambda p: len(p.parts))
    if sum(1 for h in homes if len(h.parts) == len(home.parts)) > 1:
        raise ValidationError(
            f"the upload holds {SKILL_FILE} in several folders: upload one skill at a time"
        )
    outside = sorted(p.as_posix() for p in files if not p.is_relative_to(home))
    if outside:
        raise ValidationError(
            f"{outside[0]!r} is outside the skill's folder ({home.as_posix() or 'the top'}, "
            f"which holds {SKILL_FILE}): upload that folder only"
        )
    assets = sorted(
        (p.relative_to(home).as_posix(), data)
        for p, data in files.items()
        if p != home / SKILL_FILE
    )
    return build_skill_folder(files[home / SKILL_FILE], assets)


def skill_from_files(files: Iterable[tuple[str, bytes]]) -> SkillFolder:
    """A skill from a folder's files, each ``(path relative to the folder's parent, bytes)``.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` (see the module's docstring).
    """
    kept: dict[PurePosixPath, bytes] = {}
    total = 0
    for name, data in files:
        path = _path(name)
        if not _kept(path) or not path.parts:
            continue
        total += len(data)
        if total > MAX_SKILL_BYTES:
            raise ValidationError(_TOO_BIG)
        kept[path] = data
        if len(kept) > MAX_SKILL_FILES:
            raise ValidationError(_TOO_MANY)
    return _skill(kept)


def skill_from_zip(data: bytes) -> SkillFolder:
    """A skill from a ``.zip`` of its folder (the folder itself at the top, or its files).

    Error handling:
        :class:`~agentws.core.errors.ValidationError` (see the module's docstring).
    """
    if len(data) > MAX_SKILL_ZIP_BYTES:
        raise ValidationError(f"the zip is larger than {format_bytes(MAX_SKILL_ZIP_BYTES)}")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError):
        raise ValidationError("the file is not a zip archive") from None
    with archive:
        listed = archive.infolist()
        if len(listed) > MAX_ZIP_ENTRIES:
            raise ValidationError(f"the zip holds more than {MAX_ZIP_ENTRIES} entries: {_TOO_MANY}")
        entries = []
        for entry in listed:
            path = _path(entry.filename)
            # Counted once what is left out is left out: a Finder zip has a
            # __MACOSX/._ twin of each file.
            if not entry.is_dir() and _kept(path) and path.parts:
                entries.append((entry, path))
        if len(entries) > MAX_SKILL_FILES:
            raise ValidationError(_TOO_MANY)
        kept: dict[PurePosixPath, bytes] = {}
        budget = MAX_SKILL_BYTES
        for entry, path in entries:
            if stat.S_ISLNK(entry.external_attr >> 16):
                raise ValidationError(
                    f"{entry.filename!r} in the zip is a symbolic link: put the file in instead"
                )
            if entry.flag_bits & 0x1:
                raise ValidationError(f"{entry.filename!r} in the zip is encrypted")
            if entry.file_size > budget:
                raise ValidationError(_TOO_BIG)
            try:
                with archive.open(entry) as file:
                    # Capped: the size in the headers is the sender's claim.
                    content = file.read(budget + 1)
            except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError) as exc:
                raise ValidationError(f"cannot unpack {entry.filename!r}: {exc}") from None
            if len(content) > budget:
                raise ValidationError(_TOO_BIG)
            budget -= len(content)
            kept[path] = content
    return _skill(kept)
