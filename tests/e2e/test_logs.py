"""A full run's logs: JSON lines with the work's ids on them, and none of its secrets.

``agentws serve`` runs as a separate process at DEBUG, its stderr a file (so
it writes JSON lines), configured with every kind of secret the service
holds: MCP tokens, a webhook URL and its signing secret, a chat
incoming-webhook URL, a Slack bot token, the Anthropic API key (a fake
Messages API on loopback), the service key, an admin password and API
token, and the metrics token. A workload uses each of them, rightly and
wrongly. Then the whole log is searched for every one of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from cryptography.fernet import Fernet
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.connectors.admin import ConnectorSecret, add_connector
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import ConnectorKind, Event, EventStatus, VerificationScheme
from agentws.domain.signatures import sign_github
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys, SecretBox
from agentws.store import open_store
from agentws.webhooks.admin import WebhookOptions, create_webhook
from tests.e2e.fake_anthropic import API_KEY, Turn, fake_anthropic
from tests.e2e.fake_slack import BOT_TOKEN, fake_slack
from tests.e2e.mcp_support import seed
from tests.e2e.polling import wait_until
from tests.e2e.process_support import POLL_S, alive, serve_process
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

HOOK_SECRET = "github-hook-secret-5a1t"
ADMIN_PASSWORD = "correct horse battery staple 9"
METRICS_TOKEN = "metrics-token-7c0ffee"
HOOK_PATH = "T000/B000/XXXXSECRETXXXX"
LOOPBACK = Allowlist.parse("127.0.0.1/32")


async def test_a_full_runs_logs_are_json_with_ids_and_carry_no_secret(tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    database = f"sqlite:///{tmp_path / 'agentws.db'}"
    settings = Settings.from_env(
        {
            "AGENTWS_DATABASE_URL": database,
            "AGENTWS_SECRET_KEY": key,
            "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",  # the chat's fake is on loopback
        }
    )
    async with (
        fake_slack() as chat,
        fake_anthropic(lambda request: Turn("Deploy 42 is done.")) as model,
    ):
        async with open_store(database) as store:
            token, other_token = await seed(store, tmp_path, with_library=True)
            box = SecretBox.from_settings(settings)
            await add_connector(
                store,
                "acme",
                "alerts",
                kind=ConnectorKind.INCOMING_WEBHOOK,
                url=None,
                headers={},
                secret=ConnectorSecret(chat.hook_url(HOOK_PATH)),
                box=box,
                allowlist=LOOPBACK,
                actor="t",
            )
            await add_connector(
                store,
                "acme",
                "slack",
                kind=ConnectorKind.SLACK,
                url=chat.api_url,
                headers={},
                secret=ConnectorSecret(BOT_TOKEN),
                box=box,
                allowlist=LOOPBACK,
                actor="t",
            )
            issued = await create_webhook(
                store,
                settings,
                Keys.load(settings),
                "acme",
                name="ci",
                channel="webhook:alerts",
                prompt="Summarise the deploy.",
                options=WebhookOptions(verification=VerificationScheme.GITHUB, secret=HOOK_SECRET),
                actor="t",
            )
            await create_admin(store, "alice", password=ADMIN_PASSWORD, actor="t")
            _, admin_token = await create_admin_token(store, "alice", "tests", actor="t")
        hook_token = issued.url.rsplit("/hooks/", 1)[1]
        secrets = {
            "MCP token": token,
            "other MCP token": other_token,
            "webhook URL token": hook_token,
            "webhook signing secret": HOOK_SECRET,
            "incoming-webhook URL": HOOK_PATH,
            "Slack bot token": BOT_TOKEN,
            "Anthropic API key": API_KEY,
            "service key": key,
            "admin password": ADMIN_PASSWORD,
            "admin API token": admin_token,
            "metrics token": METRICS_TOKEN,
        }
        env = {
            "AGENTWS_LOG_LEVEL": "DEBUG",
            "AGENTWS_SECRET_KEY": key,
            "AGENTWS_METRICS_TOKEN": METRICS_TOKEN,
            "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
            "AGENTWS_CONNECTOR_REFRESH_S": "0",
            "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": model.base_url,
        }
        async with (
            serve_process(tmp_path, database, "inst-logs", **env) as server,
            httpx2.AsyncClient(timeout=10) as http,
        ):
            endpoint = f"{server.base_url}/mcp/g/acme/ops"
            # MCP: a session that lists and calls; a wrong token; another group's token.
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as mcp,
                streamable_http_client(endpoint, http_client=mcp) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.list_tools()
                assert not (await session.call_tool("search_context", {"query": "refund"})).is_error
            for bearer in (token[:-4] + "zzzz", other_token):
                refused = await http.post(
                    endpoint, json={}, headers={"Authorization": f"Bearer {bearer}"}
                )
                assert refused.status_code == 401
            # Webhooks: signed and posted to the incoming webhook; a bad signature.
            url = f"{server.base_url}/hooks/{hook_token}"
            body = b'{"deploy": 42, "status": "success"}'
            headers = {"Content-Type": "application/json", **sign_github(HOOK_SECRET, body)}
            accepted = await http.post(url, content=body, headers=headers)
            assert accepted.status_code == 202, accepted.text
            event_id = accepted.json()["event_id"]
            forged = {**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64}
            assert (await http.post(url, content=body, headers=forged)).status_code == 401
            # Admin: the API with its token; a sign-in with the password (no form token).
            api = await http.get(
                f"{server.base_url}/api/v1/workspaces",
                headers={"Authorization": f"Bearer {admin_token}"},
            )
            assert api.status_code == 200
            await http.post(
                f"{server.base_url}/dashboard/login",
                data={"username": "alice", "password": ADMIN_PASSWORD},
            )
            scraped = await http.get(
                f"{server.base_url}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
            )
            assert scraped.status_code == 200

            async def done() -> bool:
                async with open_store(database) as store:
                    event = await store.get(Event, event_id)
                return event.status is EventStatus.DONE

            await wait_until(
                done,
                timeout_s=15,
                what="the event to be posted",
                interval_s=POLL_S,
                still_worth_it=alive([server]),
            )
        log_text = server.stderr()

    assert chat.hook_posts and chat.hook_posts[0][0] == HOOK_PATH
    leaked = [name for name, secret in secrets.items() if secret in log_text]
    assert not leaked, f"secrets in the log: {leaked}"

    lines = [json.loads(line) for line in log_text.splitlines() if line.strip()]
    assert lines and all({"ts", "level", "logger", "message"} <= set(line) for line in lines)
    assert any(line["level"] == "DEBUG" for line in lines)  # DEBUG really was on
    opened = [line for line in lines if " opened (streamable)" in line["message"]]
    assert opened and {"request_id", "workspace", "group", "session"} <= set(opened[0])
    assert (opened[0]["workspace"], opened[0]["group"]) == ("acme", "ops")
    posted = [line for line in lines if line["message"].startswith(f"event {event_id} done")]
    assert posted and posted[0]["event"] == event_id and posted[0]["webhook"] == issued.webhook.id
    assert "Traceback" not in log_text
