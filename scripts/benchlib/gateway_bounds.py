"""What one client cannot do to agentws as a gateway: rows of ``scripts/bench gateway``.

- **Memory over sustained stateless calls**: measured in the stateless
  section of ``scripts/bench gateway``; :data:`RSS_TARGET` is its bound on
  anonymous memory (what a leak grows).
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
from benchlib.procs import BenchError, Processes, start_server
from benchlib.report import fmt, verdict

__all__ = ["HEALTHZ_TARGET_MS", "RSS_TARGET", "add_hostile", "healthz_rows"]

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
