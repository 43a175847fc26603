"""``agentws doctor`` against a fake Anthropic API and a fake Slack on loopback.

The command runs on a store seeded with webhooks posting to every kind of
channel, in this process as the program would (:mod:`tests.in_process`);
on a fresh install, ``init`` and ``doctor`` run as programs, as an operator
types them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet

from agentws.connectors.admin import ConnectorSecret, add_connector
from agentws.connectors.upstream_auth import UpstreamAuth
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import ConnectorKind, VerificationScheme
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys, SecretBox
from agentws.store import open_store
from agentws.webhooks.admin import WebhookOptions, create_webhook
from tests.e2e.fake_anthropic import API_KEY, Turn, fake_anthropic
from tests.e2e.fake_slack import BOT_TOKEN, fake_slack
from tests.e2e.mcp_support import seed
from tests.in_process import run_cli_beside
from tests.support import clean_env

LOOPBACK = Allowlist.parse("127.0.0.1/32")


async def _doctor(env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    done = await run_cli_beside(
        ["doctor", "--json", "--timeout", "5"], cwd=Path.cwd(), env=clean_env(**env)
    )
    assert done.stderr == "", done.stderr
    return done.returncode, json.loads(done.stdout)


async def test_doctor_reports_the_model_and_every_channel(tmp_path: Path) -> None:
    env = {
        "AGENTWS_DATABASE_URL": f"sqlite:///{tmp_path / 'doctor.db'}",
        "AGENTWS_SECRET_KEY": Fernet.generate_key().decode(),
        "AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32",
    }
    settings = Settings.from_env(env)
    box = SecretBox.from_settings(settings)
    async with (
        fake_slack(gone_hooks={"T0/B0/GONE"}) as slack,
        fake_anthropic(lambda request: Turn("unused")) as model,
    ):
        async with open_store(settings.database_url) as store:
            await seed(store, tmp_path, with_library=False)
            connectors = [
                ("slack", ConnectorKind.SLACK, slack.api_url, BOT_TOKEN),
                ("stale", ConnectorKind.SLACK, slack.api_url, "xoxb-revoked"),
                ("alerts", ConnectorKind.INCOMING_WEBHOOK, None, slack.hook_url()),
                ("old", ConnectorKind.INCOMING_WEBHOOK, None, slack.hook_url("T0/B0/GONE")),
            ]
            for name, kind, url, secret in connectors:
                await add_connector(
                    store,
                    "acme",
                    name,
                    kind=kind,
                    url=url,
                    headers={},
                    secret=ConnectorSecret(secret),
                    box=box,
                    allowlist=LOOPBACK,
                    actor="t",
                )
            # An OAuth connector nobody has authorized yet.
            await add_connector(
                store,
                "acme",
                "linear",
                kind=ConnectorKind.REMOTE_MCP,
                url="http://127.0.0.1:9/mcp",
                headers={},
                secret=None,
                box=None,
                allowlist=LOOPBACK,
                actor="t",
                auth=UpstreamAuth(mode="oauth"),
            )
            channels = {
                "ci": "local:ops",
                "deploys": "slack:slack/C0123456789",
                "billing": "slack:stale/C0123456789",
                "pages": "webhook:alerts",
                "legacy": "webhook:old",
            }
            for name, channel in channels.items():
                await create_webhook(
                    store,
                    settings,
                    Keys.load(settings),
                    "acme",
                    name=name,
                    channel=channel,
                    prompt="p",
                    options=WebhookOptions(),
                    actor="t",
                )

        with_model = {**env, "ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": model.base_url}
        status, report = await _doctor(with_model)
        bad_key = {**with_model, "ANTHROPIC_API_KEY": "sk-ant-wrong"}
        status_bad_key, report_bad_key = await _doctor(bad_key)

    checks = {c["check"]: (c["status"], c["detail"]) for c in report["checks"]}
    assert status == 1 and report["ok"] is False
    assert checks["store"] == ("ok", "sqlite answers")
    assert checks["secret key"][0] == "ok"
    assert checks["model"][0] == "ok"
    assert "claude-sonnet-4-5" in checks["model"][1] and "took the key" in checks["model"][1]
    assert checks["channel acme/local:ops"][0] == "ok"
    deploys = checks["channel acme/slack:slack/C0123456789"]
    assert deploys[0] == "ok" and "authenticated as agentws-bot in team Acme" in deploys[1]
    assert "webhooks: deploys" in deploys[1]
    billing = checks["channel acme/slack:stale/C0123456789"]
    assert billing[0] == "fail" and "invalid_auth" in billing[1]
    assert checks["channel acme/webhook:alerts"][0] == "ok"
    legacy = checks["channel acme/webhook:old"]
    assert legacy[0] == "fail" and "HTTP 404" in legacy[1]
    authorizations = checks["connector authorizations"]
    assert authorizations[0] == "warn"
    assert "acme/linear needs authorization (never connected)" in authorizations[1]
    assert "agentws connector authorize acme linear" in authorizations[1]
    assert "GONE" not in json.dumps(report)  # the URLs are secrets
    assert BOT_TOKEN not in json.dumps(report)
    # Nothing was posted by checking.
    assert slack.messages == [] and slack.hook_posts == []
    assert model.requests == []

    bad = {c["check"]: (c["status"], c["detail"]) for c in report_bad_key["checks"]}
    assert status_bad_key == 1
    assert bad["model"][0] == "fail" and "ANTHROPIC_API_KEY" in bad["model"][1]
    assert "sk-ant-wrong" not in json.dumps(report_bad_key)


def test_doctor_on_a_fresh_install_passes(tmp_path: Path) -> None:
    env = clean_env(AGENTWS_DATABASE_URL=f"sqlite:///{tmp_path / 'fresh.db'}")
    for command in ("init", "doctor"):
        done = subprocess.run(
            [sys.executable, "-m", "agentws", command],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    assert "offline digest" in done.stdout
    assert "Everything checked is ready." in done.stdout
    assert "ok    secret key" in done.stdout


async def test_doctor_fails_when_the_key_cannot_open_the_stored_secrets(tmp_path: Path) -> None:
    # It said "present" for any well-formed key, even one that opens nothing stored.
    database = f"sqlite:///{tmp_path / 'doctor.db'}"
    no_key = str(tmp_path / "no-key-here")
    sealed_with = Fernet.generate_key().decode()
    async with open_store(database) as store:
        await seed(store, tmp_path, with_library=False)

    # Nothing sealed yet: no key is worth a warning, not a failure.
    code, report = await _doctor({"AGENTWS_DATABASE_URL": database, "AGENTWS_DATA_DIR": no_key})
    assert code == 0
    assert _checks(report)["secret key"][0] == "warn"

    settings = Settings.from_env(
        {"AGENTWS_DATABASE_URL": database, "AGENTWS_SECRET_KEY": sealed_with}
    )
    async with open_store(database) as store:
        options = WebhookOptions(verification=VerificationScheme.GITHUB, secret="gh-secret")
        await create_webhook(
            store,
            settings,
            Keys.load(settings),
            "acme",
            name="signed",
            channel="ops",
            prompt="Say it.",
            options=options,
            actor="test",
        )
    other = Fernet.generate_key().decode()
    for env in ({"AGENTWS_SECRET_KEY": other}, {"AGENTWS_DATA_DIR": no_key}):
        code, report = await _doctor({"AGENTWS_DATABASE_URL": database, **env})
        assert code == 1, report
        status, detail = _checks(report)["secret key"]
        assert status == "fail"
        assert "stored secrets" in detail
        assert other not in json.dumps(report)

    code, report = await _doctor(
        {"AGENTWS_DATABASE_URL": database, "AGENTWS_SECRET_KEY": sealed_with}
    )
    assert _checks(report)["secret key"] == ["ok", "opens the stored secrets"]


def _checks(report: dict[str, Any]) -> dict[str, list[str]]:
    return {c["check"]: [c["status"], c["detail"]] for c in report["checks"]}


async def test_doctor_warns_of_a_database_other_users_can_read(tmp_path: Path) -> None:
    # Files made before agentws created them 0600 keep their mode: say so.
    path = tmp_path / "old.db"
    database = f"sqlite:///{path}"
    env = {"AGENTWS_DATABASE_URL": database, "AGENTWS_DATA_DIR": str(tmp_path)}
    async with open_store(database):
        pass
    code, report = await _doctor(env)
    assert _checks(report)["store"] == ["ok", "sqlite answers"]

    path.chmod(0o644)
    code, report = await _doctor(env)
    assert code == 0  # works: a warning, not a failure
    status, detail = _checks(report)["store"]
    assert status == "warn"
    assert str(path) in detail and "chmod 600" in detail
