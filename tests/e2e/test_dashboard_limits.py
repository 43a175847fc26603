"""How large a dashboard form's body may be, over plain HTTP against the real app.

The app sets no overall body limit, so each form page holds its own: the
sign-in form (read before anyone is signed in) to 16 KiB, answered 413; a
document upload to its file's 5 MiB and a skill upload to its cap, answered
with the library page and a notice saying why. A body sent without a length
(chunked) is held to the same cap as it arrives, and a folder of more files
than Quart parses in one form gets a notice too, not a bare 413.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2

from agentws.domain.models import ContextDocument, Skill
from agentws.doors.dashboard.libraries import MAX_DOCUMENT_REQUEST_BYTES
from agentws.doors.dashboard.library_skills import MAX_SKILL_REQUEST_BYTES
from agentws.doors.dashboard.pages import LOGIN_BODY_BYTES
from tests.e2e.mcp_support import running
from tests.e2e.test_manage_pages import SKILL_MD, _notice, _signed_in

SKILLS = "/dashboard/w/acme/libraries/handbook/skills"
DOCUMENTS = "/dashboard/w/acme/libraries/handbook/documents"


def _multipart(fields: dict[str, str], files: list[tuple[str, str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body, as a browser sends it; and its content type."""
    boundary = secrets.token_hex(12)
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    for name, filename, data in files:
        head = (
            f"--{boundary}\r\nContent-Disposition: form-data; "
            f'name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        )
        parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


async def _chunked(body: bytes) -> AsyncIterator[bytes]:
    """``body`` in pieces, sent without a Content-Length (Transfer-Encoding: chunked)."""
    for start in range(0, len(body), 64 * 1024):
        yield body[start : start + 64 * 1024]


async def test_the_sign_in_form_is_held_to_a_few_kib_before_anyone_signs_in(
    tmp_path: Path,
) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as stranger,
    ):
        padding = "x" * (LOGIN_BODY_BYTES + 1)
        declared = await stranger.post(
            "/dashboard/login", data={"username": "alice", "password": padding}
        )
        assert declared.status_code == 413, declared.text
        assert "The sign-in form is larger than 16.0 KiB." in declared.text
        # The body is left unread, so the connection cannot carry the next request:
        # the answer says so, and the client opens another.
        assert declared.headers["connection"] == "close"
        body = f"username=alice&password={padding}".encode()
        chunked = await stranger.post(
            "/dashboard/login",
            content=_chunked(body),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert chunked.status_code == 413, chunked.text
        assert "The sign-in form is larger than" in chunked.text
        assert chunked.headers["connection"] == "close"
        # A multipart body of many files is refused alike.
        form, kind = _multipart({"username": "alice"}, [("f", "big.bin", b"\0" * 200_000)])
        multipart = await stranger.post(
            "/dashboard/login", content=_chunked(form), headers={"Content-Type": kind}
        )
        assert multipart.status_code == 413
        assert multipart.headers["connection"] == "close"
        # A sign-in form of an ordinary size is read as before (its token is missing here).
        small = await stranger.post("/dashboard/login", data={"username": "alice"})
        assert small.status_code == 403


async def test_uploads_over_their_cap_get_the_page_and_a_notice(tmp_path: Path) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=30) as http,
    ):
        csrf = await _signed_in(server, http)
        store = server.store

        # A document: declared over 5 MiB, refused unread; sent chunked, refused as it arrives.
        big = b"a" * (MAX_DOCUMENT_REQUEST_BYTES + 4096)
        form, kind = _multipart({"csrf": csrf}, [("file", "big.md", big)])
        declared = await http.post(DOCUMENTS, content=form, headers={"Content-Type": kind})
        assert await _notice(http, declared) == "!the upload is larger than 5.0 MiB"
        chunked = await http.post(DOCUMENTS, content=_chunked(form), headers={"Content-Type": kind})
        assert await _notice(http, chunked) == "!the upload is larger than 5.0 MiB"
        assert await store.find(ContextDocument, slug="big") is None

        # A skill's zip sent chunked, over the cap.
        over = b"\0" * (MAX_SKILL_REQUEST_BYTES + 1024)
        form, kind = _multipart({"csrf": csrf}, [("zip", "skill.zip", over)])
        chunked = await http.post(SKILLS, content=_chunked(form), headers={"Content-Type": kind})
        assert (await _notice(http, chunked)).startswith("!the upload is larger than")

        # A folder of more files than a form may hold (Quart parses 1,000 parts).
        files = [("files", "deploy/SKILL.md", SKILL_MD)]
        files += [("files", f"deploy/n/{n}.md", b"x") for n in range(1000)]
        form, kind = _multipart({"csrf": csrf}, files)
        many = await http.post(SKILLS, content=form, headers={"Content-Type": kind})
        assert await _notice(http, many) == (
            "!the upload holds more than 1,000 files: a skill holds at most 200, "
            "so choose the skill's own folder"
        )
        assert [s.slug for s in await store.select(Skill)] == ["triage"]
