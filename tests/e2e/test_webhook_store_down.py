"""A store that cannot take the event: the sender gets 503 with Retry-After, never a 4xx.

Another process holds SQLite's write lock (``BEGIN EXCLUSIVE``) past the
store deadline, as a stuck migration or a backup would: the delivery cannot
be committed, so it is not acknowledged. Once the lock goes, deliveries are
accepted again.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx2
from cryptography.fernet import Fernet

from agentws.webhooks.admin import WebhookOptions, create_webhook
from tests.e2e.mcp_support import running


async def test_a_locked_store_answers_503_with_retry_after(tmp_path: Path) -> None:
    env = {"AGENTWS_SECRET_KEY": Fernet.generate_key().decode(), "AGENTWS_STORE_TIMEOUT_S": "0.5"}
    async with running(tmp_path, with_library=False, **env) as server:
        issued = await create_webhook(
            server.store,
            server.runtime.settings,
            server.runtime.keys,
            "acme",
            name="ci",
            channel="ops",
            prompt="Summarise.",
            options=WebhookOptions(),
            actor="test",
        )
        url = f"{server.base_url}/hooks/{issued.url.rsplit('/', 1)[1]}"
        path = server.runtime.settings.database_url.removeprefix("sqlite:///")
        blocker = sqlite3.connect(path, isolation_level=None)
        try:
            blocker.execute("BEGIN EXCLUSIVE")
            async with httpx2.AsyncClient(timeout=10) as http:
                refused = await http.post(url, json={"event": "deploy"})
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "store_unavailable"
            assert int(refused.headers["retry-after"]) >= 1
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        async with httpx2.AsyncClient(timeout=10) as http:
            accepted = await http.post(url, json={"event": "deploy", "retry": True})
        assert accepted.status_code == 202, accepted.text
