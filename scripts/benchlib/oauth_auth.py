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
from collections.abc import Callable
from typing import Any

from benchlib.agentws_setup import AgentwsSite, agentws_env, run_script
from benchlib.cli import abba_rounds
from benchlib.load import best_round
from benchlib.modern import ERA
from benchlib.report import fmt, verdict

__all__ = ["TARGET", "issue_oauth_token", "measure", "notes", "passed", "rows"]

TARGET = 0.9  # OAuth token calls/s / static token calls/s
_LABEL = f"tools/list, {ERA}, token authenticated on every request (calls/s)"


def issue_oauth_token(site: AgentwsSite) -> str:
    """An OAuth access token for the site's group (``agwo_…``)."""
    args = [site.database_url, site.workspace, site.group]
    env = agentws_env(site.database_url, site.checkout)
    token: str = run_script("add_oauth_token.py", args, env)["token"]
    return token


def measure(
    job: dict[str, Any],
    tokens: dict[str, str],
    rounds: int,
    run_load: Callable[[dict[str, Any]], dict[str, Any]],
    note: Callable[[str, dict[str, Any]], None],
) -> dict[str, Any]:
    """ABBA rounds of ``job`` with each of ``tokens`` (``static``, ``oauth``); the best of each."""

    def measure_one(name: str) -> Callable[[int], dict[str, Any]]:
        def one(n: int) -> dict[str, Any]:
            result = run_load({**job, "token": tokens[name], "era": ERA, "method": "tools/list"})
            result.pop("answers", None)
            note(f"{name} token, round {n}", result)
            return result

        return one

    runs = abba_rounds(rounds, {name: measure_one(name) for name in tokens}, lambda _: None)
    summary: dict[str, Any] = {
        name: best_round(results, "throughput_rps") for name, results in runs.items()
    }
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
            f"{name} " + " / ".join(fmt(v) for v in result[name]["throughput_rps_all_rounds"])
            for name in ("static", "oauth")
        )
        + "."
    ]
    for name in ("static", "oauth"):
        for error in result[name].get("error_samples", [])[:3]:
            lines.append(f"- OAuth row, {name} token error: {error}")
    return lines
