"""The report of ``scripts/bench gateway``: its table rows, its notes, its targets.

``render`` turns the results of ``scripts/bench_gateway.py`` (the upstream
called directly, through agentws and through ContextForge, and the rows
of :mod:`benchlib.gateway_bounds`) into the Markdown the mode prints;
``passed`` says whether every target was met.
"""

from __future__ import annotations

import math
from typing import Any

from benchlib import gateway_bounds, gateway_oauth
from benchlib.report import fmt, machine_line, markdown_table, verdict

__all__ = [
    "CONTEXTFORGE_TARGET",
    "CPU_TARGET",
    "DIRECT_TARGET",
    "TITLES",
    "WAYS",
    "passed",
    "render",
]

DIRECT_TARGET = 0.6  # agentws calls/s / the upstream called directly
CPU_TARGET = 1.0  # agentws CPU per call / the upstream's CPU per call
CONTEXTFORGE_TARGET = 20.0  # agentws calls/s / ContextForge's
# What each way of calling is called in the results, in round order.
WAYS = ("direct", "agentws", "contextforge")
TITLES = {
    "direct": "direct",
    "agentws": "agentws",
    "contextforge": "ContextForge",
    # The OAuth row's two connectors (benchlib.gateway_oauth).
    "static": "agentws, static-token connector",
    "oauth": "agentws, OAuth connector",
}


def _ratio(a: float | None, b: float | None) -> float:
    return a / b if a is not None and b else math.nan


def _cell(results: dict[str, Any], way: str, text: str | None) -> str:
    if way not in results:
        return "not run" if way == "contextforge" else "—"
    return text or "—"


def _rows(results: dict[str, Any]) -> list[list[str]]:
    direct, agentws = results["direct"], results["agentws"]
    forge = results.get("contextforge")
    direct_ratio = _ratio(agentws["throughput_rps"], direct["throughput_rps"])
    cpu_ratio = _ratio(agentws["gateway_cpu_ms_per_call_all"], agentws["upstream_cpu_ms_per_call"])
    forge_ratio = _ratio(agentws["throughput_rps"], forge["throughput_rps"]) if forge else None

    def per_way(key: str, digits: int = 1) -> list[str]:
        return [
            _cell(results, way, fmt(results[way].get(key), digits) if way in results else None)
            for way in WAYS
        ]

    rows = [
        [
            f"tools/call echo, {results['config']['concurrency']} clients (calls/s)",
            *per_way("throughput_rps"),
            f">= {DIRECT_TARGET}x direct",
            f"{verdict(direct_ratio >= DIRECT_TARGET)} ({direct_ratio:.2f}x)",
        ],
        [
            "latency p50 / p99 (ms)",
            *[
                _cell(
                    results,
                    way,
                    f"{fmt(results[way]['p50_ms'])} / {fmt(results[way]['p99_ms'])}"
                    if way in results
                    else None,
                )
                for way in WAYS
            ],
            "— (reported)",
            "—",
        ],
        [
            "failed calls (all rounds)",
            *[
                _cell(
                    results, way, str(results[way]["errors_all_rounds"]) if way in results else None
                )
                for way in WAYS
            ],
            "0 (direct, agentws)",
            verdict(direct["errors_all_rounds"] == 0 and agentws["errors_all_rounds"] == 0),
        ],
        [
            "gateway CPU per call (ms, all threads)",
            "—",
            *[
                _cell(
                    results,
                    way,
                    fmt(results[way]["gateway_cpu_ms_per_call_all"], 2) if way in results else None,
                )
                for way in ("agentws", "contextforge")
            ],
            "agentws <= the upstream's",
            f"{verdict(cpu_ratio <= CPU_TARGET)} ({cpu_ratio:.2f}x)",
        ],
        [
            "upstream CPU per call (ms)",
            *per_way("upstream_cpu_ms_per_call", 2),
            "— (reported)",
            "—",
        ],
    ]
    if forge is not None and forge_ratio is not None:
        rows.append(
            [
                "agentws calls/s over ContextForge's",
                "—",
                f"{forge_ratio:,.1f}x",
                "1.0x",
                f">= {CONTEXTFORGE_TARGET:g}x",
                verdict(forge_ratio >= CONTEXTFORGE_TARGET),
            ]
        )
    if "oauth" in results:
        rows += gateway_oauth.oauth_rows(results["oauth"], results["config"]["concurrency"])
    if "stateless_memory" in results:
        rows += gateway_bounds.rss_rows(results["stateless_memory"])
    if "healthz" in results:
        rows += gateway_bounds.healthz_rows(results["healthz"])
    rss = results["rss_kb"]
    rows.append(
        [
            "RSS at the end (MB)",
            f"{rss['upstream'] / 1024:,.1f} (upstream)",
            f"{rss['agentws'] / 1024:,.1f}",
            _cell(
                results,
                "contextforge",
                f"{rss['contextforge'] / 1024:,.1f}" if "contextforge" in rss else None,
            ),
            "— (reported)",
            "—",
        ]
    )
    return rows


def passed(results: dict[str, Any]) -> bool:
    """Whether every target of the run was met."""
    return all(row[-1].startswith("PASS") or row[-1] == "—" for row in _rows(results))


def render(results: dict[str, Any]) -> str:
    machine = results["machine"]
    config = results["config"]
    packages = machine["packages"]
    rounds = "; ".join(
        f"{TITLES[way]} " + " / ".join(fmt(v) for v in results[way]["throughput_rps_all_rounds"])
        for way in WAYS
        if way in results
    )
    noise = max(results[w]["other_cpu_cores_max"] for w in WAYS if w in results)
    client = max(results[w]["client_cpu_cores_max"] for w in WAYS if w in results)
    lines = [
        f"## scripts/bench gateway — {results['date']}",
        "",
        markdown_table(
            ["measure", "direct", "agentws", "ContextForge", "target", "result"], _rows(results)
        ),
        "",
        machine_line(machine),
        f"- Upstream: mcp {packages['mcp']} `MCPServer` with one tool, `echo(text)`, on uvicorn "
        f"{packages['uvicorn']} (Streamable HTTP, stateful sessions, each POST answered "
        + (
            "with a short SSE stream, the SDK's default"
            if config["upstream_response"] == "sse"
            else "in JSON"
        )
        + "); every way below calls this one process.",
        f"- agentws {packages['agentws']} (`agentws serve`: Hypercorn {packages['hypercorn']}, "
        f"trio {packages['trio']}, SQLite store): the upstream is a remote MCP connector "
        "attached to the group, its tool labelled read; each call is authenticated (a read "
        "token), checked against the group's permissions, audited, and forwarded over the "
        "connector's link.",
        (
            f"- ContextForge {results['contextforge_version']} (`mcp-contextforge-gateway`, "
            f"its default settings, {config['contextforge_workers']} worker(s), in a venv of its "
            "own) but two: loopback upstreams allowed (`SSRF_ALLOW_LOCALHOST`) and its rate "
            "limiter off (by default 100 MCP requests a minute per user, which is what would "
            "be measured); the upstream registered as a gateway, a virtual server of its tools."
            if "contextforge" in results
            else "- ContextForge: not run "
            f"({results.get('contextforge_problem', '--contextforge off')})."
        ),
        f"- Load: one client process, {config['concurrency']} workers, each with its own "
        "initialized Streamable HTTP session calling tools/call back to back, each answer "
        f"checked to echo its text; {config['warmup_s']:g} s warm-up, then "
        f"{config['seconds']:g} s measured; {config['rounds']} round(s), each running every "
        "way once (odd rounds in order, even rounds reversed), servers up throughout; best "
        "round shown (all rounds in the JSON). CPU per call: each process's CPU time over the "
        "measured window divided by the calls measured in it.",
        f"- Calls/s in each round: {rounds}. The load client used up to {client:.2f} cores; "
        f"other processes up to {noise:.2f} cores during the measured windows.",
    ]
    for way in WAYS:
        for error in results.get(way, {}).get("error_samples", [])[:3]:
            lines.append(f"- {TITLES[way]} error: {error}")
    return "\n".join(lines)
