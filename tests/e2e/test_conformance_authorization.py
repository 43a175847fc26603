"""agentws's own authorization server against the conformance suite's ``authorization`` mode.

The suite (0.2.x) checks the server's metadata (RFC 8414:
``authorization-server-metadata-endpoint``) and runs an authorization code
grant as a client would (``authorization-code-grant``): it prints the
authorization URL and waits for the browser to come back to its loopback
redirect URI. Here that browser is headless Chromium: an administrator
signs in to the dashboard and approves on the consent page; the suite then
exchanges the code (PKCE, ``resource``) and judges the answers.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import trio
from playwright.sync_api import expect

from agentws.admins.accounts import create_admin
from agentws.oauth.operator_clients import register_client
from tests.e2e.browser_support import Tab, open_browser
from tests.e2e.conformance_support import NODE, NODE_CACHE, SUITES, require
from tests.e2e.mcp_support import running
from tests.e2e.node_support import free_port
from tests.e2e.oauth_support import PASSWORD

#: The suite waits up to five minutes for the browser; a run takes seconds.
SUITE_S = 120.0
PAGE_MS = 20_000
SCENARIOS = ("authorization-server-metadata-endpoint", "authorization-code-grant")


def _consent(tab: Tab, authorization_url: str, base_url: str) -> None:
    """(Browser thread.) Sign in, approve, and let the browser reach the suite's callback."""
    page = tab.page
    page.goto(authorization_url)
    expect(page).to_have_url(re.compile(re.escape(f"{base_url}/dashboard/login?next=")))
    page.fill("#username", "alice")
    page.fill("#password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Approve")).to_be_visible(timeout=PAGE_MS)
    page.get_by_role("button", name="Approve").click()
    page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:\d+/callback\?"), timeout=PAGE_MS)


def _results(out: Path) -> dict[str, list[dict[str, object]]]:
    """Each scenario's folder (its name and when it ran) -> its checks; small local files."""
    return {
        path.parent.relative_to(out).as_posix(): json.loads(path.read_text())
        for path in sorted(out.glob("**/checks.json"))
    }


async def test_agentws_s_authorization_server_passes_the_suite(tmp_path: Path) -> None:
    entry = require(SUITES["v2"]) / "dist" / "index.js"
    port = free_port()
    async with running(tmp_path) as server, open_browser("conformance-as") as browser:
        await create_admin(server.store, "alice", password=PASSWORD, actor="t")
        registered = await register_client(
            server.store,
            None,
            name="conformance suite",
            redirect_uris=[f"http://127.0.0.1:{port}/callback"],
            actor="t",
        )
        out = Path(tempfile.mkdtemp(prefix="conformance-as-", dir=tmp_path))
        command = [
            str(NODE),
            str(entry),
            "authorization",
            "--url",
            f"{server.base_url}/oauth",
            "--client-id",
            registered.client.client_id,
            "--resource",
            server.url,
            "-p",
            str(port),
            "-o",
            str(out),
        ]
        tab = await browser.new_tab()
        async with trio.open_nursery() as nursery:
            suite: trio.Process = await nursery.start(
                functools.partial(
                    trio.run_process,
                    command,
                    env={**os.environ, **NODE_CACHE},
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    check=False,
                )
            )
            printed = b""
            assert suite.stdout is not None
            with trio.fail_after(SUITE_S):
                while b"/oauth/authorize?" not in printed:
                    chunk = await suite.stdout.receive_some(4096)
                    assert chunk, f"the suite ended before asking for consent:\n{printed!r}"
                    printed += chunk
                url = re.search(rb"(http://\S+/oauth/authorize\?\S+)", printed)
                assert url is not None, printed
                await browser.run(_consent, tab, url[1].decode(), server.base_url)
                while chunk := await suite.stdout.receive_some(4096):
                    printed += chunk
                await suite.wait()
        found = _results(out)
    said = printed.decode(errors="replace")[-3000:]
    for scenario in SCENARIOS:
        assert any(scenario in folder for folder in found), (scenario, list(found), said)
    checks = [check for each in found.values() for check in each]
    assert any(c["status"] == "SUCCESS" for c in checks), said
    failing = [c for c in checks if c["status"] in ("FAILURE", "WARNING")]
    assert not failing, json.dumps(failing, indent=1)
    assert suite.returncode == 0, printed.decode(errors="replace")[-3000:]
