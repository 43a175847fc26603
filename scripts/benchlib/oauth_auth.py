"""The ``oauth`` row of ``scripts/bench mcp``: an OAuth access token's cost per request.

Every request to a group endpoint authenticates its bearer token afresh.
This row measures what that costs for an OAuth access token beside a
static token: one agentws serving, the same load client, 16 workers each
sending 2026-07-28 ``tools/list`` requests back to back (self-contained:
no session, so every request is authenticated, and cheap, so the token's
part of it shows), alternately with the static token and with an OAuth
token issued by agentws's own authorization-server steps
(:mod:`benchlib.add_oauth_token`), in ABBA rounds. Target: the OAuth
token's calls/s at least 0.9 times the static token's (no more than 10%
slower).
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib.agentws_setup import AgentwsSite, agentws_env
from benchlib.modern import ERA
from benchlib.procs import BenchError, read_json
from benchlib.report import fmt, verdict

__all__ = ["TARGET", "issue_oauth_token", "measure", "notes", "passed", "rows"]

TARGET = 0.9  # OAuth token calls/s / static token calls/s
_LABEL = f"tools/list, {ERA}, token authenticated on every request (calls/s)"


def issue_oauth_token(site: AgentwsSite) -> str:
    """An OAuth access token for the site's group (``agwo_…``)."""
    script = Path(__file__).with_name("add_oauth_token.py")
    argv = [sys.executable, str(script), site.database_url, site.workspace, site.group]
    env = agentws_env(site.database_url)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"issuing an OAuth token failed:\n{done.stderr.strip()[-3000:]}")
    token: str = read_json(done.stdout, "add_oauth_token.py output")["token"]
    return token


def measure(
    job: dict[str, Any],
    tokens: dict[str, str],
    rounds: int,
    run_load: Callable[[dict[str, Any]], dict[str, Any]],
    note: Callable[[str, dict[str, Any]], None],
) -> dict[str, Any]:
    """ABBA rounds of ``job`` with each of ``tokens`` (``static``, ``oauth``); the best of each."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in tokens}
    names = list(tokens)
    for n in range(1, rounds + 1):
        for name in names if n % 2 else reversed(names):
            result = run_load({**job, "token": tokens[name], "era": ERA, "method": "tools/list"})
            result.pop("answers", None)
            note(f"{name} token, round {n}", result)
            runs[name].append(result)
    summary: dict[str, Any] = {}
    for name, results in runs.items():
        best = dict(max(results, key=lambda r: r["throughput_rps"]))
        best["throughput_all_rounds"] = [r["throughput_rps"] for r in results]
        best["errors_all_rounds"] = sum(r["errors"] for r in results)
        summary[name] = best
    static = summary["static"]["throughput_rps"]
    summary["ratio"] = summary["oauth"]["throughput_rps"] / static if static else math.nan
    return summary


def passed(result: dict[str, Any]) -> bool:
    ratio = result["ratio"]
    return not math.isnan(ratio) and ratio >= TARGET


def _cpu_ms(run: dict[str, Any]) -> float:
    cpu = run.get("server_cpu_s")
    return 1000 * cpu / run["calls"] if cpu is not None and run["calls"] else math.nan


def rows(result: dict[str, Any]) -> list[list[str]]:
    static, oauth, ratio = result["static"], result["oauth"], result["ratio"]
    return [
        [
            _LABEL + " — static | OAuth",
            fmt(static["throughput_rps"]),
            fmt(oauth["throughput_rps"]),
            f">= {TARGET:g}x static",
            f"{verdict(passed(result))} ({ratio:.2f}x)",
        ],
        [
            f"{ERA} tools/list p50 / p99 (ms) — static | OAuth",
            f"{fmt(static['p50_ms'])} / {fmt(static['p99_ms'])}",
            f"{fmt(oauth['p50_ms'])} / {fmt(oauth['p99_ms'])}",
            "— (reported)",
            "—",
        ],
        [
            f"{ERA} tools/list server CPU per call (ms) — static | OAuth",
            fmt(_cpu_ms(static), 2),
            fmt(_cpu_ms(oauth), 2),
            "— (reported)",
            "—",
        ],
    ]


def notes(result: dict[str, Any], config: dict[str, Any]) -> list[str]:
    lines = [
        f"- OAuth row: one agentws, {config['concurrency']} workers sending {ERA} "
        "`tools/list` back to back (every request authenticated; the group's 2 context "
        "tools), alternately with a static `agws_` token and an OAuth `agwo_` access token "
        "issued through agentws's own registration, consent and code exchange (PKCE), in "
        "ABBA rounds; the table's two columns are the static and the OAuth token, not "
        "agentws and a reference. Calls/s in each round: "
        + "; ".join(
            f"{name} " + " / ".join(fmt(v) for v in result[name]["throughput_all_rounds"])
            for name in ("static", "oauth")
        )
        + "."
    ]
    for name in ("static", "oauth"):
        for error in result[name].get("error_samples", [])[:3]:
            lines.append(f"- OAuth row, {name} token error: {error}")
    return lines
