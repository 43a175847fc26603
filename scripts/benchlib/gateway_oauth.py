"""The OAuth row of ``scripts/bench gateway``: a connector whose access token keeps expiring.

One OAuth-protected upstream (:mod:`benchlib.oauth_upstream`: the echo
server behind bearer tokens, with its own authorization server, access
tokens living ``--oauth-ttl`` seconds, refresh tokens rotated) is attached
to one agentws twice:

- ``static_up``: a static token (``--secret-env``), the baseline;
- ``oauth_up``: ``--auth oauth``, authorized once as an admin would (the
  CLI prints the upstream's page; its authorization server approves at
  once and sends the browser, here an HTTP client signed in to the
  dashboard, back to agentws's callback).

The same load client calls each connector's ``echo`` in interleaved rounds;
over a run, the OAuth connector's token is refreshed every half of its
life by the service's link. Targets: no failed call, and the OAuth
connector's calls/s at least 0.95x the static one's in the same run.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

from benchlib import cli
from benchlib.agentws_setup import agentws_bin, agentws_env, run_cli, serve_agentws, sign_in
from benchlib.load import best_round, say_round
from benchlib.procs import BenchError, Processes, start_server
from benchlib.report import fmt, verdict

__all__ = ["OAUTH_TARGET", "oauth_rows", "run_oauth"]

OAUTH_TARGET = 0.95  # the OAuth connector's calls/s / the static one's
_WORKSPACE, _GROUP = "acme", "ops"
_STATIC_TOKEN = "bench-static-token-0123456789"  # noqa: S105 - the upstream's own test token
_PASSWORD = "bench password, long enough"  # noqa: S105 - a throwaway admin's
_CONSENT_S = 60.0
SCRIPTS = Path(__file__).resolve().parent.parent


def _start_upstream(procs: Processes, ttl_s: float) -> str:
    argv = [
        sys.executable,
        str(SCRIPTS / "benchlib" / "oauth_upstream.py"),
        "--static-token",
        _STATIC_TOKEN,
        "--ttl",
        f"{ttl_s:g}",
    ]
    _, line = start_server(
        procs, "oauth-upstream", argv, timeout_s=60.0, ready=lambda line: str(line["url"])
    )
    return str(line["url"])


def _authorize(env: dict[str, str], base_url: str, say: Callable[[str], None]) -> None:
    """``connector add --auth oauth`` in the background; consent given as its page asks."""
    argv = [
        str(agentws_bin()),
        "connector",
        "add",
        _WORKSPACE,
        "oauth_up",
        "--kind",
        "remote_mcp",
        "--url",
        env["BENCH_OAUTH_UPSTREAM"],
        "--auth",
        "oauth",
    ]
    adding = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if adding.stderr is None:  # pragma: no cover - stderr=PIPE
        raise BenchError("no stderr to read")
    printed = ""
    deadline = time.monotonic() + _CONSENT_S
    while "authorize?" not in printed and time.monotonic() < deadline:
        line = adding.stderr.readline()
        if not line:
            break
        printed += line
    found = re.search(r"(http://\S+/authorize\?\S+)", printed)
    if found is None:
        adding.kill()
        raise BenchError(f"`connector add --auth oauth` printed no page to open:\n{printed}")
    with httpx2.Client(base_url=base_url, timeout=30, follow_redirects=False) as http:
        sign_in(http, "alice", _PASSWORD)
        upstream = http.get(found[1])  # its authorization server approves at once
        back = http.get(upstream.headers["location"])  # agentws's callback, signed in
        if back.status_code != 302:
            raise BenchError(f"agentws's callback answered {back.status_code}: {back.text[:300]}")
    try:
        adding.wait(timeout=_CONSENT_S)
    except subprocess.TimeoutExpired:
        adding.kill()
        raise BenchError("`connector add --auth oauth` did not finish after consent") from None
    if adding.returncode != 0:
        raise BenchError(f"`connector add --auth oauth` failed:\n{adding.stderr.read()[-2000:]}")
    say("oauth_up is authorized")


def run_oauth(
    procs: Processes,
    work: Path,
    args: Any,
    say: Callable[[str], None],
    measure: Callable[[Processes, dict[str, Any], str, int], dict[str, Any]],
) -> dict[str, Any]:
    """Both connectors measured in interleaved rounds; the results of each and the config."""
    upstream_url = _start_upstream(procs, args.oauth_ttl)
    folder = work / "oauth"
    folder.mkdir()
    env = agentws_env(
        f"sqlite:///{folder / 'agentws.db'}",
        AGENTWS_CONNECTOR_ALLOWLIST="127.0.0.1",
        AGENTWS_DATA_DIR=str(folder),
        STATIC_UPSTREAM_TOKEN=_STATIC_TOKEN,
        BENCH_OAUTH_UPSTREAM=upstream_url,
    )
    run_cli(env, "init")
    run_cli(env, "workspace", "create", _WORKSPACE)
    run_cli(env, "group", "create", _WORKSPACE, _GROUP)
    run_cli(env, "admin", "create", "alice", "--password-stdin", stdin=_PASSWORD + "\n")
    run_cli(
        env,
        "connector",
        "add",
        _WORKSPACE,
        "static_up",
        "--kind",
        "remote_mcp",
        "--url",
        upstream_url,
        "--secret-env",
        "STATIC_UPSTREAM_TOKEN",
    )
    child, base_url = serve_agentws(procs, "agentws-oauth", env, say)
    _authorize({**env, "AGENTWS_BASE_URL": base_url}, base_url, say)
    token = ""
    for name in ("static_up", "oauth_up"):
        run_cli(env, "connector", "attach", _WORKSPACE, _GROUP, name)
        run_cli(env, "tool", "label", _WORKSPACE, f"{name}_echo", "read")
    token = str(
        run_cli(env, "token", "create", _WORKSPACE, _GROUP, "--name", "bench", "--scope", "read")[
            "token"
        ]
    )
    url = f"{base_url}/mcp/g/{_WORKSPACE}/{_GROUP}"
    jobs = {
        way: {
            "url": url,
            "token": token,
            "tool": f"{way}_up_echo",
            "echo": True,
            "queries": [f"echo {n}: through an {way} connector" for n in range(64)],
            "concurrency": args.concurrency,
            "warmup_s": args.warmup,
            "seconds": args.seconds,
            "server_pid": None,
            "other_pids": {"gateway": child.pid},
        }
        for way in ("static", "oauth")
    }
    measures = {way: functools.partial(measure, procs, jobs[way], way) for way in jobs}
    runs = cli.abba_rounds(args.rounds, measures, lambda _: None)
    found: dict[str, Any] = {"ttl_s": args.oauth_ttl}
    for way, way_runs in runs.items():
        found[way] = best_round(way_runs, "throughput_rps")
        found[f"{way}_rounds"] = way_runs
        for result in way_runs:
            say_round(say, result, "throughput_rps", f"{way} calls/s")
    return found


def oauth_rows(oauth: dict[str, Any], concurrency: int) -> list[list[str]]:
    """The row's cells: measure, direct, agentws, ContextForge, target, result."""
    static, through = oauth["static"], oauth["oauth"]
    ratio = through["throughput_rps"] / static["throughput_rps"] if static["throughput_rps"] else 0
    failed = through["errors_all_rounds"] + static["errors_all_rounds"]
    return [
        [
            f"OAuth connector, {concurrency} clients, token expiring every "
            f"{oauth['ttl_s']:g} s (calls/s; static token: {fmt(static['throughput_rps'])})",
            "—",
            fmt(through["throughput_rps"]),
            "—",
            f">= {OAUTH_TARGET}x the static token's",
            f"{verdict(ratio >= OAUTH_TARGET)} ({ratio:.2f}x)",
        ],
        [
            "OAuth connector: failed calls (all rounds, both connectors)",
            "—",
            str(failed),
            "—",
            "0",
            verdict(failed == 0),
        ],
    ]
