"""What one client cannot do to agentws as a gateway: rows of ``scripts/bench gateway``.

- **Memory over sustained stateless calls.** Stateless (2026-07-28) calls of
  a remote tool run as pending calls, which once outlived their outcome by
  a question's time (300 s): RSS grew with every call (24 KB each). The row
  warms agentws up, takes its RSS, sends ``calls`` more stateless calls of
  the upstream's ``echo`` through it and takes its RSS again. Target: the
  anonymous memory (what a leak grows) within 10% of where it started. The
  whole RSS is shown beside it: it also counts the pages of the SQLite
  database that readers map, which grow with the audit log the calls write.
- **/healthz under hostile calls.** A second upstream
  (:mod:`benchlib.hostile_upstream`) lists tools whose input schemas used to
  freeze the process when checked. ``/healthz`` is timed for ``seconds``
  with no other load, then again while one client sends the hostile calls
  in a loop (:mod:`benchlib.hostile_load`). Target: p99 under 100 ms with
  the hostile client.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from benchlib import cli
from benchlib.agentws_setup import run_cli
from benchlib.hostile_upstream import PAYLOADS
from benchlib.modern import ERA
from benchlib.procs import BenchError, Child, Processes, rss_kb, start_server
from benchlib.report import fmt, verdict

__all__ = ["HEALTHZ_TARGET_MS", "RSS_TARGET", "add_hostile", "healthz_rows", "memory", "rss_rows"]

RSS_TARGET = 0.10  # growth of agentws's RSS over the sustained calls, at most
HEALTHZ_TARGET_MS = 100.0  # /healthz p99 while hostile calls loop
_LIB = Path(__file__).resolve().parent
_START_TIMEOUT_S = 60.0
_HOSTILE = "hostile"


def add_hostile(procs: Processes, env: dict[str, str], workspace: str, group: str) -> str:
    """Start the hostile upstream, add it to agentws as connector ``hostile``; a write token."""
    _, line = start_server(
        procs,
        "hostile",
        [sys.executable, str(_LIB / "hostile_upstream.py")],
        timeout_s=_START_TIMEOUT_S,
        ready=lambda line: str(line["url"]).rsplit("/", 1)[0] + "/",
    )
    url = str(line["url"])
    run_cli(env, "connector", "add", workspace, _HOSTILE, "--kind", "remote_mcp", "--url", url)
    run_cli(env, "connector", "attach", workspace, group, _HOSTILE)
    made = run_cli(env, "token", "create", workspace, group, "--name", "hostile")
    return str(made["token"])


def memory(
    procs: Processes, agentws: Child, job: dict[str, Any], calls: int, say: Any
) -> dict[str, Any]:
    """agentws's RSS before and after ``calls`` stateless calls of ``job``'s tool."""
    stateless = {**job, "era": ERA, "warmup_s": 0.0, "seconds": 3.0}
    cli.run_load_client(procs, "mcp_load.py", stateless, 120)  # warm-up: caches, pools, links
    before = rss_kb(agentws.pid)
    anon_before = rss_kb(agentws.pid, "RssAnon")
    sent = 0
    while sent < calls:
        result = cli.run_load_client(procs, "mcp_load.py", stateless, 120)
        if result["errors"]:
            raise BenchError(f"stateless calls failed: {result.get('error_samples')}")
        sent += int(result["calls"])
    after = rss_kb(agentws.pid)
    anon_after = rss_kb(agentws.pid, "RssAnon")
    say(
        f"  RSS {before / 1024:.1f} MB -> {after / 1024:.1f} MB (anonymous "
        f"{anon_before / 1024:.1f} -> {anon_after / 1024:.1f}) over {sent:,} stateless calls"
    )
    return {
        "calls": sent,
        "rss_before_kb": before,
        "rss_after_kb": after,
        "anon_before_kb": anon_before,
        "anon_after_kb": anon_after,
    }


def healthz(
    procs: Processes, base_url: str, mcp_url: str, token: str, seconds: float, say: Any
) -> dict[str, Any]:
    """``/healthz`` latency alone, then with one client looping the hostile calls."""
    tools = {f"{_HOSTILE}_{name}": arguments for name, arguments in PAYLOADS.items()}
    job = {"base_url": base_url, "mcp_url": mcp_url, "token": token, "tools": tools}
    found: dict[str, Any] = {}
    for label, hostile in (("alone", False), ("hostile", True)):
        result = cli.run_load_client(
            procs, "hostile_load.py", {**job, "seconds": seconds, "hostile": hostile}, 300
        )
        if result["failures"]:
            raise BenchError(f"/healthz or the hostile calls failed: {result['failure_samples']}")
        found[label] = result
        say(
            f"  /healthz {label}: p99 {result['healthz']['p99_ms']:.1f} ms over "
            f"{result['healthz_count']} probes; {result['hostile_calls']} hostile calls"
        )
    return found


def rss_rows(found: dict[str, Any]) -> list[list[str]]:
    growth = found["anon_after_kb"] / found["anon_before_kb"] - 1
    whole = found["rss_after_kb"] / found["rss_before_kb"] - 1
    return [
        [
            f"anonymous RSS over {found['calls']:,} stateless remote calls (MB)",
            "—",
            f"{found['anon_before_kb'] / 1024:,.1f} → {found['anon_after_kb'] / 1024:,.1f}",
            "—",
            f"growth <= {RSS_TARGET:.0%}",
            f"{verdict(growth <= RSS_TARGET)} ({growth:+.1%})",
        ],
        [
            "RSS, mapped database pages included (MB)",
            "—",
            f"{found['rss_before_kb'] / 1024:,.1f} → {found['rss_after_kb'] / 1024:,.1f}",
            "—",
            "— (reported)",
            f"— ({whole:+.1%})",
        ],
    ]


def healthz_rows(found: dict[str, Any]) -> list[list[str]]:
    alone, hostile = found["alone"], found["hostile"]
    p99 = hostile["healthz"]["p99_ms"]
    calls = hostile["hostile"] or {}
    return [
        [
            "/healthz p99 (ms): alone / while hostile calls loop",
            "—",
            f"{fmt(alone['healthz']['p99_ms'])} / {fmt(p99)}",
            "—",
            f"< {HEALTHZ_TARGET_MS:g} with the hostile client",
            f"{verdict(p99 < HEALTHZ_TARGET_MS)}",
        ],
        [
            "hostile calls refused (count; p50 / max ms to the refusal)",
            "—",
            f"{hostile['hostile_calls']:,}; "
            f"{fmt(calls.get('p50_ms'))} / {fmt(calls.get('max_ms'))}",
            "—",
            "— (reported)",
            "—",
        ],
    ]
