"""The report of ``scripts/bench gateway``: its table rows, its notes, its targets.

``render`` turns the results of ``scripts/bench_gateway.py`` (the upstream
called directly, through the lean proxy that is a gateway's floor, through
agentws and through ContextForge; agentws under stateless calls; the rows
of :mod:`benchlib.gateway_bounds` and :mod:`benchlib.gateway_oauth`) into
the Markdown the mode prints; ``passed`` says whether every target was met.
Every figure is set against its peer of the same run: a gateway's CPU per
call against the upstream's over the same calls, agentws's calls/s
against the upstream called directly, and agentws against the lean proxy.
"""

from __future__ import annotations

import math
from typing import Any

from benchlib import gateway_bounds, gateway_oauth
from benchlib.modern import ERA
from benchlib.raw_http import CONNECTION_NOTE
from benchlib.report import fmt, machine_line, markdown_table, verdict

__all__ = [
    "CONTEXTFORGE_TARGET",
    "CPU_TARGET",
    "DIRECT_TARGET",
    "RSS_GROWTH_TARGET_KB",
    "TITLES",
    "WAYS",
    "passed",
    "render",
]

DIRECT_TARGET = 0.6  # agentws calls/s / the upstream called directly
# agentws CPU per call / the upstream's over the same calls, session and stateless callers.
CPU_TARGET = 1.2
CONTEXTFORGE_TARGET = 20.0  # agentws calls/s / ContextForge's
# agentws's anonymous RSS growth over the second half of the stateless calls, at most (KiB).
RSS_GROWTH_TARGET_KB = 1024
# What each way of calling is called in the results, in round order.
WAYS = ("direct", "floor", "agentws", "contextforge")
# The ways that may be left out of a run (--no-floor, ContextForge not installed).
_OPTIONAL = ("floor", "contextforge")
TITLES = {
    "direct": "direct",
    "floor": "lean proxy",
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
        return "not run" if way in _OPTIONAL else "—"
    return text or "—"


def _widen(row: list[str]) -> list[str]:
    """A row of another module (measure, direct, agentws, ContextForge, target, result)
    with the lean proxy's column added, empty."""
    return [*row[:2], "—", *row[2:]]


def _cpu_ratio(found: dict[str, Any]) -> float:
    """A gateway's CPU per call over the upstream's, in the same window."""
    return _ratio(found["gateway_cpu_ms_per_call_all"], found["upstream_cpu_ms_per_call"])


def _rows(results: dict[str, Any]) -> list[list[str]]:
    direct, agentws = results["direct"], results["agentws"]
    floor, forge = results.get("floor"), results.get("contextforge")
    direct_ratio = _ratio(agentws["throughput_rps"], direct["throughput_rps"])
    cpu_ratio = _cpu_ratio(agentws)
    forge_ratio = _ratio(agentws["throughput_rps"], forge["throughput_rps"]) if forge else None
    ran = [way for way in ("direct", "floor", "agentws") if way in results]

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
            "0 (direct, lean proxy, agentws)",
            verdict(all(results[way]["errors_all_rounds"] == 0 for way in ran)),
        ],
        [
            "gateway CPU per call, ms, all threads (over the upstream's)",
            "—",
            *[
                _cell(
                    results,
                    way,
                    f"{fmt(results[way]['gateway_cpu_ms_per_call_all'], 3)} "
                    f"({_cpu_ratio(results[way]):.2f}x)"
                    if way in results
                    else None,
                )
                for way in ("floor", "agentws", "contextforge")
            ],
            f"agentws <= {CPU_TARGET:g}x the upstream's",
            f"{verdict(cpu_ratio <= CPU_TARGET)} ({cpu_ratio:.2f}x)",
        ],
        [
            "upstream CPU per call (ms)",
            *per_way("upstream_cpu_ms_per_call", 3),
            "— (reported)",
            "—",
        ],
    ]
    if floor is not None:
        rate = _ratio(agentws["throughput_rps"], floor["throughput_rps"])
        cpu = _ratio(agentws["gateway_cpu_ms_per_call_all"], floor["gateway_cpu_ms_per_call_all"])
        rows.append(
            [
                "agentws over the lean proxy: calls/s; gateway CPU per call",
                "—",
                "1.00x; 1.00x",
                f"{rate:.2f}x; {cpu:.2f}x",
                "—",
                "— (the floor)",
                "—",
            ]
        )
    if forge is not None and forge_ratio is not None:
        rows.append(
            [
                "agentws calls/s over ContextForge's",
                "—",
                "—",
                f"{forge_ratio:,.1f}x",
                "1.0x",
                f">= {CONTEXTFORGE_TARGET:g}x",
                verdict(forge_ratio >= CONTEXTFORGE_TARGET),
            ]
        )
    if "stateless" in results:
        rows += _stateless_rows(results["stateless"], results["config"]["concurrency"])
    if "oauth" in results:
        rows += [
            _widen(row)
            for row in gateway_oauth.oauth_rows(results["oauth"], results["config"]["concurrency"])
        ]
    if "healthz" in results:
        rows += [_widen(row) for row in gateway_bounds.healthz_rows(results["healthz"])]
    rss = results["rss_kb"]
    rows.append(
        [
            "RSS at the end (MB)",
            f"{rss['upstream'] / 1024:,.1f} (upstream)",
            *[
                _cell(results, way, f"{rss[way] / 1024:,.1f}" if way in rss else None)
                for way in ("floor", "agentws", "contextforge")
            ],
            "— (reported)",
            "—",
        ]
    )
    return rows


def _stateless_rows(found: dict[str, Any], concurrency: int) -> list[list[str]]:
    """agentws under stateless calls: calls/s, CPU per call against the upstream's, RSS."""
    cpu_ratio = _ratio(found["gateway_cpu_ms_per_call"], found["upstream_cpu_ms_per_call"])
    second_kb = found["anon_after_kb"] - found.get("anon_half_kb", found["anon_before_kb"])
    anon_growth = _ratio(found["anon_after_kb"], found["anon_before_kb"]) - 1
    half = found.get("rss_half_kb")
    flat = second_kb <= RSS_GROWTH_TARGET_KB and anon_growth <= gateway_bounds.RSS_TARGET
    calls = f"{found['calls']:,} stateless calls after {found['warmup_calls']:,}"
    return [
        [
            f"stateless tools/call through agentws, {concurrency} clients (calls/s)",
            "—",
            "—",
            fmt(found["throughput_rps"]),
            "—",
            "— (reported)",
            "—",
        ],
        [
            "stateless: agentws / upstream CPU per call (ms, same calls)",
            "—",
            "—",
            f"{fmt(found['gateway_cpu_ms_per_call'], 3)} / "
            f"{fmt(found['upstream_cpu_ms_per_call'], 3)}",
            "—",
            f"agentws <= {CPU_TARGET:g}x the upstream's",
            f"{verdict(cpu_ratio <= CPU_TARGET)} ({cpu_ratio:.2f}x)",
        ],
        [
            f"agentws RSS (VmRSS) over {calls}: before → halfway → after (MB)",
            "—",
            "—",
            f"{found['rss_before_kb'] / 1024:,.1f} → "
            + (f"{half / 1024:,.1f} → " if half is not None else "")
            + f"{found['rss_after_kb'] / 1024:,.1f}",
            "—",
            "— (reported: mapped database pages included)",
            "—",
        ],
        [
            "agentws anonymous RSS (RssAnon), same readings (MB)",
            "—",
            "—",
            f"{found['anon_before_kb'] / 1024:,.1f} → "
            + (f"{found['anon_half_kb'] / 1024:,.1f} → " if "anon_half_kb" in found else "")
            + f"{found['anon_after_kb'] / 1024:,.1f}",
            "—",
            f"second half <= {RSS_GROWTH_TARGET_KB / 1024:g} MB; all <= "
            f"{gateway_bounds.RSS_TARGET:.0%}",
            f"{verdict(flat)} ({second_kb / 1024:+.1f} MB; {anon_growth:+.1%})",
        ],
    ]


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
    stateless = results.get("stateless")
    noise = max(results[w]["other_cpu_cores_max"] for w in WAYS if w in results)
    client = max(results[w]["client_cpu_cores_max"] for w in WAYS if w in results)
    lines = [
        f"## scripts/bench gateway — {results['date']}",
        "",
        markdown_table(
            ["measure", "direct", "lean proxy", "agentws", "ContextForge", "target", "result"],
            _rows(results),
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
        (
            f"- Lean proxy (the floor, `benchlib/lean_proxy.py`): a bare ASGI app on Hypercorn "
            f"{packages['hypercorn']} (trio worker) forwarding each request over a pool of "
            f"keep-alive HTTP/1.1 connections spoken with h11 {packages.get('h11', '?')}: the "
            "body and the Mcp-Session-Id, Mcp-Protocol-Version, Accept and Content-Type headers "
            "up; the status, the headers an MCP client reads and the body (an SSE stream, "
            "relayed to its end) back. No SDK, no auth, no JSON parsing: what forwarding costs "
            "on agentws's own stack."
            if "floor" in results
            else "- Lean proxy: not run (--no-floor)."
        ),
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
        f"initialized Streamable HTTP session calling tools/call back to back over "
        f"{CONNECTION_NOTE}, each answer "
        f"checked to echo its text; {config['warmup_s']:g} s warm-up, then "
        f"{config['seconds']:g} s measured; {config['rounds']} round(s), each running every "
        "way once (odd rounds in order, even rounds reversed), servers up throughout; best "
        "round shown (all rounds in the JSON). CPU per call: each process's CPU time over the "
        "measured window divided by the calls measured in it.",
        *(
            [
                f"- Stateless section, after the rounds: {stateless['warmup_calls']:,} stateless "
                f"({ERA}) calls through agentws to warm it up, its RSS read (VmRSS and RssAnon of "
                f"/proc/PID/status), {stateless['calls']:,} more, read halfway and again; the "
                f"same client ({config['concurrency']} workers, each call a POST of its own, "
                "no session). "
                "CPU per call: agentws's and the upstream's CPU time over the measured windows "
                "of those calls, divided by the calls measured in them."
            ]
            if stateless
            else []
        ),
        f"- Calls/s in each round: {rounds}. The load client used up to {client:.2f} cores; "
        f"other processes up to {noise:.2f} cores during the measured windows.",
    ]
    for way in WAYS:
        for error in results.get(way, {}).get("error_samples", [])[:3]:
            lines.append(f"- {TITLES[way]} error: {error}")
    return "\n".join(lines)
