"""The measures of ``scripts/bench mcp`` made on agentws alone, and how it serves them.

:func:`start_agentws` serves a site (its checkout's agentws) for any
measure of the mode; :func:`run_load` runs :mod:`benchlib.mcp_load` on a
job. The measures here have no reference server: idle legacy SSE sessions
(:func:`measure_sessions`), ``tools/list`` with 200 cached tools
(:func:`measure_toolslist`) and an OAuth token's cost (:func:`measure_oauth`).
"""

from __future__ import annotations

import argparse
from typing import Any

from benchlib import cli, oauth_auth
from benchlib.agentws_setup import AgentwsSite, add_connectors, agentws_env, serve_agentws
from benchlib.load import say_round
from benchlib.procs import Child, Processes, stop_server

__all__ = [
    "measure_oauth",
    "measure_sessions",
    "measure_toolslist",
    "note_noise",
    "run_load",
    "start_agentws",
]

TOOLSLIST_CONNECTORS = 5
TOOLSLIST_TOOLS_EACH = 40
# The built-ins the group offers: the two context tools (it has a library) and
# get_approval (it has connector tools).
_BUILTIN_TOOLS = 3

_say = cli.logger("mcp")


def start_agentws(
    procs: Processes, site: AgentwsSite, name: str, sessions: int
) -> tuple[Child, str]:
    """``agentws serve`` on ``site`` (its checkout's agentws); the child and its base URL."""
    cap = str(max(1000, sessions * 2))
    env = agentws_env(
        site.database_url,
        site.checkout,
        AGENTWS_MCP_MAX_SESSIONS=cap,
        AGENTWS_MCP_MAX_SESSIONS_PER_TOKEN=cap,
    )
    return serve_agentws(procs, name, env, _say, ready_path="/healthz")


def run_load(procs: Processes, job: dict[str, Any]) -> dict[str, Any]:
    return cli.run_load_client(procs, "mcp_load.py", job, job["warmup_s"] + job["seconds"] + 120)


def note_noise(result: dict[str, Any]) -> None:
    say_round(_say, result, "throughput_rps", "calls/s")


def measure_sessions(
    args: argparse.Namespace, procs: Processes, site: AgentwsSite
) -> dict[str, Any]:
    import trio

    from benchlib.sse_idle import measure_idle_sessions

    _say(f"agentws: {args.sessions} idle legacy SSE sessions")
    server, base_url = start_agentws(procs, site, "agentws-sessions", args.sessions)
    result: dict[str, Any] = trio.run(
        measure_idle_sessions, base_url + site.path, site.token, server.pid, args.sessions
    )
    result["server_exit_status"] = procs.stop(server)
    return result


def measure_toolslist(
    args: argparse.Namespace, procs: Processes, site: AgentwsSite
) -> dict[str, Any]:
    _say(
        f"agentws: {TOOLSLIST_CONNECTORS} connectors with {TOOLSLIST_TOOLS_EACH} cached "
        "tools each, attached to the group"
    )
    added = add_connectors(site, TOOLSLIST_CONNECTORS, TOOLSLIST_TOOLS_EACH)
    expected = added["tools"] + _BUILTIN_TOOLS
    server, base_url = start_agentws(procs, site, "agentws-toolslist", args.sessions)
    job = {
        "url": base_url + site.path,
        "token": site.token,
        "method": "tools/list",
        "expect_tools": expected,
        "concurrency": args.concurrency,
        "warmup_s": args.warmup,
        "seconds": args.seconds,
        "server_pid": server.pid,
    }
    result: dict[str, Any] = {
        "connectors": added["connectors"],
        "cached_tools": added["tools"],
        "tools_listed": expected,
    }
    runs = [("paced", args.list_rate), ("saturated", None)]
    for name, rate in runs:
        pace = f"{rate:g} calls/s each" if rate else "back to back"
        _say(
            f"agentws: tools/list ({expected} tools), {args.concurrency} clients {pace}, "
            f"load for {args.warmup:g}+{args.seconds:g} s"
        )
        run = run_load(procs, {**job, "rate_per_client": rate})
        run.pop("answers", None)
        note_noise(run)
        result[name] = run
    result["server_exit_status"] = stop_server(procs, server, _say)
    result["errors"] = sum(result[name]["errors"] for name, _ in runs)
    return result


def measure_oauth(args: argparse.Namespace, procs: Processes, site: AgentwsSite) -> dict[str, Any]:
    _say("agentws: an OAuth access token for the group (registration, consent, code exchange)")
    tokens = {"static": site.token, "oauth": oauth_auth.issue_oauth_token(site)}
    server, base_url = start_agentws(procs, site, "agentws-oauth", args.sessions)
    job = {
        "url": base_url + site.path,
        # The 2026-07-28 listing has no get_approval: a stateless caller reads approvals.
        "expect_tools": _BUILTIN_TOOLS - 1,
        "concurrency": args.concurrency,
        "warmup_s": args.warmup,
        "seconds": args.seconds,
        "server_pid": server.pid,
    }

    def note(what: str, result: dict[str, Any]) -> None:
        _say(f"agentws, {what}:")
        note_noise(result)

    try:
        result = oauth_auth.measure(job, tokens, args.rounds, lambda j: run_load(procs, j), note)
    finally:
        status = stop_server(procs, server, _say)
    result["server_exit_status"] = status
    return result
