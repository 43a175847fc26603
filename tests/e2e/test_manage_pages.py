"""The Workspaces, Groups and Libraries pages over HTTP: what they refuse, and what they store.

A real agentws serves on loopback; httpx2 plays the browser. The journeys
are clicked through in Chromium in ``test_manage_browser.py``; here are the
refusals a browser would not send (a forged CSRF token, a zip that climbs
out of its folder, an oversize upload) and what each change leaves in the
store and the audit log.
"""

from __future__ import annotations

import html
import io
import re
import zipfile
from pathlib import Path

import httpx2

from agentws.admins.accounts import create_admin
from agentws.domain.models import AuditEntry, ContextDocument, Group, Library, Skill, Workspace
from agentws.libraries.checks import MAX_SKILL_BYTES
from tests.e2e.mcp_support import Running, running

PASSWORD = "correct horse battery staple"
SKILL_MD = b"---\nname: deploy\ndescription: Deploy a service\n---\nShip it carefully.\n"


def _hidden(page: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert match, f"no hidden field {name!r} in the page"
    return match.group(1)


async def _signed_in(server: Running, http: httpx2.AsyncClient) -> str:
    """Sign ``alice`` in; the session's CSRF token."""
    await create_admin(server.store, "alice", password=PASSWORD, actor="t")
    form = await http.get("/dashboard/login")
    fields = {"login_token": _hidden(form.text, "login_token"), "username": "alice"}
    signed = await http.post("/dashboard/login", data={**fields, "password": PASSWORD})
    assert signed.status_code == 302, signed.text
    page = await http.get("/dashboard/workspaces")
    assert page.status_code == 200
    return _hidden(page.text, "csrf")


async def _notice(http: httpx2.AsyncClient, answer: httpx2.Response) -> str:
    """The notice the page a change redirected to shows ('!' first for an error)."""
    assert answer.status_code == 302, answer.text
    page = await http.get(answer.headers["location"].split("#")[0])
    match = re.search(r'<p class="notice( error)?" role="status">(.*?)</p>', page.text, re.S)
    assert match, "no notice on the page"
    return ("!" if match.group(1) else "") + html.unescape(match.group(2))


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


async def test_forms_without_their_csrf_token_are_refused_and_change_nothing(
    tmp_path: Path,
) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http,
    ):
        await _signed_in(server, http)
        posts = [
            ("/dashboard/workspaces", {"slug": "beta"}, None),
            ("/dashboard/workspaces/acme/rename", {"name": "Forged"}, None),
            ("/dashboard/w/acme/groups", {"slug": "forged"}, None),
            ("/dashboard/w/acme/groups/sales/libraries", {"library": "handbook"}, None),
            ("/dashboard/w/acme/groups/ops/libraries/handbook/detach", {}, None),
            ("/dashboard/w/acme/libraries", {"slug": "forged"}, None),
            ("/dashboard/w/acme/libraries/handbook/documents/refunds/remove", {}, None),
            (
                "/dashboard/w/acme/libraries/handbook/documents/refunds/policy",
                {"policy": "never"},
                None,
            ),
            (
                "/dashboard/w/acme/libraries/handbook/skills",
                {},
                {"zip": ("deploy.zip", _zip({"SKILL.md": SKILL_MD}), "application/zip")},
            ),
            ("/dashboard/w/acme/libraries/handbook/skills/triage/remove", {}, None),
        ]
        before = await server.store.count(AuditEntry)
        for path, fields, files in posts:
            for data in (fields, {**fields, "csrf": "forged"}):
                refused = await http.post(path, data=data, files=files)
                assert refused.status_code == 403, (path, refused.status_code)
                assert "security token" in refused.text
        assert await server.store.count(AuditEntry) == before
        assert [w.name for w in await server.store.select(Workspace)] == ["Acme"]
        assert await server.store.count(Group) == 2 and await server.store.count(Library) == 1
        assert (
            await server.store.count(Skill) == 1 and await server.store.count(ContextDocument) == 3
        )


async def test_creating_renaming_and_attaching_are_stored_and_audited(tmp_path: Path) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http,
    ):
        csrf = await _signed_in(server, http)

        async def post(path: str, **fields: str) -> str:
            return await _notice(http, await http.post(path, data={"csrf": csrf, **fields}))

        created = await http.post(
            "/dashboard/workspaces", data={"csrf": csrf, "slug": "beta", "name": "Beta"}
        )
        assert created.headers["location"] == "/dashboard/w/beta/groups"
        assert "Created workspace 'beta'" in await _notice(http, created)
        taken = await post("/dashboard/workspaces", slug="beta")
        assert taken == "!workspace 'beta' already exists"
        bad = await post("/dashboard/workspaces", slug="Not A Slug")
        assert bad.startswith("!invalid workspace slug 'Not A Slug'")
        assert "is now called 'Beta Corp'" in await post(
            "/dashboard/workspaces/beta/rename", name="Beta Corp"
        )
        assert await post("/dashboard/workspaces/beta/rename", name=" ") == (
            "!workspace name must be 1 to 100 characters"
        )

        assert "Created group 'web'" in await post("/dashboard/w/beta/groups", slug="web")
        assert await post("/dashboard/w/beta/groups", slug="web") == (
            "!group 'web' already exists in workspace 'beta'"
        )
        await post("/dashboard/w/beta/groups/web/rename", name="Website")
        await post("/dashboard/w/beta/libraries", slug="faq", name="FAQ")
        assert await post("/dashboard/w/beta/libraries", slug="faq") == (
            "!library 'faq' already exists in workspace 'beta'"
        )
        await post("/dashboard/w/beta/libraries/faq/rename", name="Questions")
        attached = await post("/dashboard/w/beta/groups/web/libraries", library="faq")
        assert attached.startswith("Attached library 'faq' to 'web'")
        # Another workspace's library is not this one's to attach.
        other = await post("/dashboard/w/beta/groups/web/libraries", library="handbook")
        assert other.startswith("!no library 'handbook' in workspace 'beta'")
        groups = await http.get("/dashboard/w/beta/groups")
        assert "Website" in groups.text and "Questions" in groups.text
        # Its endpoint URL, …/mcp/g/beta/web, in the parts its lines may break between.
        url_end = "".join(f'<span class="url-part">{p}</span>' for p in ("g/", "beta/", "web"))
        assert f"{url_end}</code>" in groups.text
        await post("/dashboard/w/beta/groups/web/libraries/faq/detach")

        entries = await server.store.select(AuditEntry, actor="admin:alice")
        assert [(e.action, e.target) for e in entries if e.action != "admin.sign_in"] == [
            ("workspace.create", "beta"),
            ("workspace.rename", "beta"),
            ("group.create", "beta/web"),
            ("group.rename", "beta/web"),
            ("library.create", "beta/faq"),
            ("library.rename", "beta/faq"),
            ("library.attach", "beta/faq"),
            ("library.detach", "beta/faq"),
        ]
        # The slugs did not move: the endpoint URL is the one clients have.
        group = await server.store.group_by_slug("beta", "web")
        assert group.name == "Website"

        # A name with a hidden character is shown escaped, and its field sends it back as it is.
        await post("/dashboard/workspaces/beta/rename", name="Beta\u200bCorp")
        listing = (await http.get("/dashboard/workspaces")).text
        assert "<td>Beta\\u200bCorp</td>" in listing
        assert 'value="Beta\u200bCorp"' in listing


async def test_a_bad_skill_upload_is_refused_with_what_is_wrong(tmp_path: Path) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http,
    ):
        csrf = await _signed_in(server, http)
        path = "/dashboard/w/acme/libraries/handbook/skills"

        async def upload(files: list[tuple[str, tuple[str, bytes, str]]]) -> str:
            return await _notice(http, await http.post(path, data={"csrf": csrf}, files=files))

        def as_zip(files: dict[str, bytes]) -> list[tuple[str, tuple[str, bytes, str]]]:
            return [("zip", ("skill.zip", _zip(files), "application/zip"))]

        refusals = {
            "climbs out": (
                as_zip({"SKILL.md": SKILL_MD, "../../etc/cron.d/x": b"x"}),
                "!'../../etc/cron.d/x' is not a path inside the skill's folder",
            ),
            "absolute": (
                as_zip({"SKILL.md": SKILL_MD, "/etc/passwd": b"x"}),
                "!'/etc/passwd' is not a path inside the skill's folder",
            ),
            "no SKILL.md": (as_zip({"deploy/notes.md": b"x"}), "!no SKILL.md in the upload"),
            "not a zip": (
                [("zip", ("skill.zip", b"PK not really", "application/zip"))],
                "!the file is not a zip archive",
            ),
            "unpacks too big": (
                as_zip({"SKILL.md": SKILL_MD, "big.txt": b"a" * (MAX_SKILL_BYTES + 1)}),
                "!the skill's files hold more than 1.0 MiB in all",
            ),
            "a folder climbing out": (
                [
                    ("files", ("deploy/SKILL.md", SKILL_MD, "text/markdown")),
                    ("files", ("deploy/../../x", b"x", "text/plain")),
                ],
                "!'deploy/../../x' is not a path inside the skill's folder",
            ),
            "nothing chosen": (
                [("files", ("", b"", "application/octet-stream"))],
                "!choose a skill's folder, or a .zip of it",
            ),
            "both": (
                [
                    ("files", ("deploy/SKILL.md", SKILL_MD, "text/markdown")),
                    ("zip", ("skill.zip", _zip({"SKILL.md": SKILL_MD}), "application/zip")),
                ],
                "!choose a folder or a .zip, not both",
            ),
            "front matter": (
                as_zip({"SKILL.md": b"no front matter"}),
                "!SKILL.md has no front matter",
            ),
        }
        for what, (files, expected) in refusals.items():
            notice = await upload(files)
            assert notice.startswith(expected), (what, notice)
        # Over the request's cap: refused before the form is read.
        huge = [("zip", ("skill.zip", b"\x00" * (2 * MAX_SKILL_BYTES), "application/zip"))]
        assert (await upload(huge)).startswith("!the upload is larger than")
        assert [s.slug for s in await server.store.select(Skill)] == ["triage"]

        taken = await upload(as_zip({"SKILL.md": SKILL_MD.replace(b"deploy", b"triage")}))
        assert taken == (
            "!skill 'triage' already exists in library 'handbook': "
            "tick 'Replace a skill of the same name' to update it"
        )
        replaced = await http.post(
            path,
            data={"csrf": csrf, "replace": "yes"},
            files=as_zip({"SKILL.md": SKILL_MD.replace(b"deploy", b"triage")}),
        )
        assert await _notice(http, replaced) == "Replaced skill 'triage' with 0 assets in handbook."
        (triage,) = await server.store.select(Skill, slug="triage")
        assert triage.assets == () and triage.prompt == "Ship it carefully."
        added = await upload(as_zip({"deploy/SKILL.md": SKILL_MD, "deploy/a/b.md": b"# b\n"}))
        assert added == "Added skill 'deploy' with 1 asset in handbook."
        (deploy,) = await server.store.select(Skill, slug="deploy")
        assert [a.name for a in deploy.assets] == ["a/b.md"]


async def test_a_document_preview_is_escaped_and_cut_short(tmp_path: Path) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http,
    ):
        csrf = await _signed_in(server, http)
        body = "<script>alert(1)</script>\n" + "x" * 30_000
        uploaded = await http.post(
            "/dashboard/w/acme/libraries/handbook/documents",
            data={"csrf": csrf, "title": "Odd <b>page</b>", "policy": "on_demand"},
            files={"file": ("odd.txt", body.encode(), "text/plain")},
        )
        assert uploaded.status_code == 302
        page = await http.get("/dashboard/w/acme/libraries/handbook/documents/odd")
        assert page.status_code == 200
        assert "<script>alert" not in page.text and "&lt;script&gt;alert(1)" in page.text
        assert "Odd &lt;b&gt;page&lt;/b&gt;" in page.text
        assert "10026 more characters are left out" in page.text
        missing = await http.get("/dashboard/w/acme/libraries/handbook/documents/nope")
        assert missing.status_code == 404
        policy = await http.post(
            "/dashboard/w/acme/libraries/handbook/documents/odd/policy",
            data={"csrf": csrf, "policy": "always"},
        )
        assert (await _notice(http, policy)).startswith("!invalid policy 'always'")


async def test_a_finder_zip_is_counted_without_what_it_leaves_out(tmp_path: Path) -> None:
    """A skill of 150 files zipped by the Finder: 300 entries, each file with its ._ twin."""
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http,
    ):
        csrf = await _signed_in(server, http)
        path = "/dashboard/w/acme/libraries/handbook/skills"
        files = {"deploy/SKILL.md": SKILL_MD}
        files.update({f"deploy/notes/{n}.md": b"# note\n" for n in range(149)})
        finder = dict(files)
        for name in files:
            folder, _, leaf = name.rpartition("/")
            finder[f"__MACOSX/{folder}/._{leaf}"] = b"\0\5\26\7 resource fork"
        finder["deploy/.DS_Store"] = b"\0\0\0\1Bud1"
        added = await http.post(
            path,
            data={"csrf": csrf},
            files=[("zip", ("deploy.zip", _zip(finder), "application/zip"))],
        )
        assert await _notice(http, added) == "Added skill 'deploy' with 149 assets in handbook."
        # Past a few times the limit in raw entries, the zip is refused unread.
        many = {f"deploy/{n}.txt": b"" for n in range(800)}
        refused = await http.post(
            path,
            data={"csrf": csrf},
            files=[("zip", ("many.zip", _zip({**files, **many}), "application/zip"))],
        )
        assert (await _notice(http, refused)).startswith(
            "!the zip holds more than 800 entries: a skill holds at most 200 files"
        )
