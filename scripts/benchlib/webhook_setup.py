"""A benchmark's own agentws for webhooks: database, workspace, one webhook.

Everything goes through the ``agentws`` CLI as an operator would do it,
into a fresh SQLite database in the run's temp directory (the secret key
file goes there too: ``AGENTWS_DATA_DIR``). The webhook takes every
delivery the benchmark sends: the highest rate and burst agentws allows
(100,000 a minute, 100,000 at once), 16 events run at once, no signature,
the offline model (no network, answers at once), messages to ``local:ops``.

Each measured server gets a copy of the database as it is after set-up
(:func:`fresh_copy`), so no run starts with another's backlog of events.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from benchlib.agentws_setup import agentws_env, run_cli
from benchlib.procs import BenchError

__all__ = ["WebhookSite", "fresh_copy", "set_up_webhook", "site_env"]

WORKSPACE = "acme"
WEBHOOK = "bench"
CHANNEL = "local:ops"
PROMPT = "Summarise"
# agentws's ceilings for a webhook's rate limit: the bucket never runs dry in a run.
RATE = "100000/min"
BURST = "100000"
WEBHOOK_CONCURRENCY = "16"


@attrs.frozen
class WebhookSite:
    directory: Path
    database_path: Path
    #: ``/hooks/<token>``: the webhook URL's path, served on whatever port the server binds.
    path: str
    webhook_id: str
    channel: str = CHANNEL


def site_env(directory: Path, database_path: Path, **extra: str) -> dict[str, str]:
    """The environment of an agentws child on ``database_path``, data dir ``directory``."""
    return agentws_env(f"sqlite:///{database_path}", AGENTWS_DATA_DIR=str(directory), **extra)


def set_up_webhook(directory: Path) -> WebhookSite:
    """Create ``directory/agentws.db`` with a workspace and the benchmark's webhook."""
    database_path = directory / "agentws.db"
    # The URL is printed with the bind address; only its path is used.
    env = site_env(directory, database_path, AGENTWS_BIND="127.0.0.1:0")
    run_cli(env, "init", cwd=directory)
    run_cli(env, "workspace", "create", WORKSPACE, cwd=directory)
    created = run_cli(
        env,
        "webhook",
        "create",
        WORKSPACE,
        "--name",
        WEBHOOK,
        "--channel",
        CHANNEL,
        "--prompt",
        PROMPT,
        "--rate",
        RATE,
        "--burst",
        BURST,
        "--concurrency",
        WEBHOOK_CONCURRENCY,
        cwd=directory,
    )
    path = urlsplit(str(created.get("url", ""))).path
    if not path.startswith("/hooks/"):
        raise BenchError(f"`agentws webhook create` printed no webhook URL: {created!r}")
    return WebhookSite(
        directory=directory, database_path=database_path, path=path, webhook_id=created["id"]
    )


def fresh_copy(site: WebhookSite, name: str) -> Path:
    """A consistent copy of the set-up database, ``<directory>/<name>.db``."""
    target = site.directory / f"{name}.db"
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{target}{suffix}").unlink()
    with (
        contextlib.closing(sqlite3.connect(site.database_path)) as src,
        contextlib.closing(sqlite3.connect(target)) as dst,
    ):
        src.backup(dst)
    return target
