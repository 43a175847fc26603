"""``scripts/bench gateway``: one remote MCP tool, direct and through three gateways.

One upstream MCP server (the ``mcp`` SDK's ``MCPServer`` with one ``echo``
tool, on uvicorn, answering each POST the SDK's default way: see
:mod:`benchlib.gateway_upstream`) serves four ways of calling it, on
loopback, in a temp directory of its own:

1. **direct**: the load client calls the upstream itself;
2. **lean proxy** (the floor of a gateway; ``--no-floor`` leaves it out):
   :mod:`benchlib.lean_proxy`, a bare ASGI app on Hypercorn's trio worker
   forwarding each request over a small pool of keep-alive HTTP/1.1
   connections spoken with h11: no SDK, no auth, no JSON parsing. What
   forwarding costs on agentws's own stack, so what agentws adds shows;
3. **agentws**: ``agentws serve`` (SQLite store, offline model) with the
   upstream added as a remote MCP connector (``agentws connector add
   --kind remote_mcp``, allowed by ``AGENTWS_CONNECTOR_ALLOWLIST``),
   attached to a group, its tool labelled ``read``, called with a token of
   ``read`` scope: every call is authenticated, checked against the
   permissions, audited and forwarded over the connector's link;
4. **ContextForge** (IBM's MCP gateway, PyPI ``mcp-contextforge-gateway``),
   when it can be installed into a venv of its own (``--contextforge-venv``):
   its default settings, the upstream registered as a gateway and a virtual
   server holding its tools (see :mod:`benchlib.contextforge`).

The same load client (:mod:`benchlib.mcp_load`: ``--concurrency`` workers, an
initialized Streamable HTTP session each, ``tools/call`` back to back, each
answer checked to echo what was sent) runs against each in turn, in
interleaved rounds (direct, lean proxy, agentws, ContextForge, then the
reverse order, ...); every server stays up for all rounds. For each window
it takes calls/s, p50/p99 latency, and the CPU time of the gateway process
and of the upstream (so CPU per call of each), and at the end the resident
memory of each process. Results are printed as Markdown and written as
JSON (``--json-out``).

Targets (issue "performance against measured floors"): agentws's calls/s
>= 0.6x the upstream called directly; agentws's CPU per proxied call <=
1.2x the upstream's own per call (in the same window), the lean proxy's
shown beside it; agentws >= 20x ContextForge's calls/s where ContextForge
runs.

Then the stateless section: ``--stateless-warmup-calls`` stateless
(2026-07-28) calls through agentws, its RSS (VmRSS, and its anonymous
part) read, ``--stateless-calls`` more, read again. Targets: agentws's CPU
per stateless call <= 1.2x the upstream's per call over the same calls;
its anonymous RSS grows by at most 1 MB over the second half of the calls
(about 200 bytes a call: nothing kept per call; the first half fills caches
up to their bounds), and by at most 10% over all of them.

Two more rows say what one client cannot do to agentws
(:mod:`benchlib.gateway_bounds`): ``/healthz`` answers within 100 ms (p99)
while one client loops tool calls whose schemas used to freeze the
process. Two more (:mod:`benchlib.gateway_oauth`): an OAuth connector
whose access token expires every ``--oauth-ttl`` seconds loses no call,
and keeps at least 0.95x the calls/s of the same upstream through a
static-token connector. The report is :mod:`benchlib.gateway_report`'s.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cli, contextforge, gateway_bounds, gateway_oauth
from benchlib.agentws_setup import agentws_env, run_cli, serve_agentws
from benchlib.gateway_report import (
    CONTEXTFORGE_TARGET,
    CPU_TARGET,
    DIRECT_TARGET,
    RSS_GROWTH_TARGET_KB,
    TITLES,
    WAYS,
    passed,
    render,
)
from benchlib.load import best_round, say_round
from benchlib.machine import describe_machine
from benchlib.modern import ERA
from benchlib.procs import BenchError, Child, Processes, rss_kb, start_server

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "gateway.json"
DEFAULT_CONTEXTFORGE_VENV = REPO / ".bench-venvs" / "contextforge"

# Seconds a server gets to start answering.
_START_TIMEOUT_S = 60.0
_WORKSPACE, _GROUP, _CONNECTOR = "acme", "ops", "upstream"
_TOOL = f"{_CONNECTOR}_echo"
_PACKAGES = ["agentws", "mcp", "uvicorn", "hypercorn", "trio", "h11", "httpx2"]
# Seconds of one load run of the stateless section, at the least and at the
# most: each is sized to the calls still to send at the rate of the last.
_STATELESS_RUN_S = (0.5, 30.0)

_say = cli.logger("gateway")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench gateway",
        description=(
            "Benchmark proxied tools/call: one upstream MCP server (the mcp SDK's MCPServer "
            "with an echo tool) called directly, through a lean proxy (the floor: Hypercorn's "
            "trio worker and pooled h11 connections, no SDK, no auth), through agentws (a "
            "remote MCP connector, the tool labelled read, a read token) and, when it can be "
            "installed, through IBM ContextForge (default settings, a virtual server of the "
            "same tool); the same load client, interleaved rounds. Then stateless calls "
            "through agentws: its CPU per call and its RSS before and after."
        ),
        epilog=(
            "Targets: agentws calls/s >= 0.6x direct; agentws CPU per proxied call <= 1.2x the "
            "upstream's own, with session callers and with stateless callers (the lean "
            "proxy's shown as the floor); agentws >= 20x ContextForge's calls/s where it runs; "
            "agentws's anonymous RSS grows by <= 1 MB over the second half of "
            "--stateless-calls stateless calls after --stateless-warmup-calls. Exit status 0 "
            "when the run completed (see --check), 1 when it failed (including any failed call "
            "directly, through the lean proxy or through agentws)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds per run")
    parser.add_argument(
        "--concurrency", type=int, default=16, help="client workers, one MCP session each"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="rounds; each runs every way once, odd rounds in order, even rounds reversed",
    )
    parser.add_argument(
        "--upstream-response",
        choices=["sse", "json"],
        default="sse",
        help="how the upstream answers POSTs: 'sse' (the SDK's default) or 'json'",
    )
    parser.add_argument(
        "--stateless-calls",
        type=int,
        default=10_000,
        help="stateless calls through agentws between its two RSS readings (0: no such rows)",
    )
    parser.add_argument(
        "--stateless-warmup-calls",
        type=int,
        default=1_000,
        help="stateless calls through agentws before its first RSS reading",
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="leave out the lean proxy (the floor a gateway's CPU per call is read against)",
    )
    parser.add_argument(
        "--healthz-seconds",
        type=float,
        default=10.0,
        help="seconds /healthz is timed alone, then with hostile calls looping (0: no such row)",
    )
    parser.add_argument(
        "--oauth-ttl",
        type=float,
        default=5.0,
        help="seconds the OAuth row's access tokens live (0: no OAuth row)",
    )
    parser.add_argument(
        "--contextforge",
        choices=["auto", "off"],
        default="auto",
        help="'auto': install ContextForge (once) and measure it; 'off': leave it out",
    )
    parser.add_argument(
        "--contextforge-venv",
        type=Path,
        default=DEFAULT_CONTEXTFORGE_VENV,
        help="the venv ContextForge is installed into (made when missing)",
    )
    parser.add_argument(
        "--contextforge-workers", type=int, default=1, help="ContextForge's worker processes"
    )
    cli.add_output_args(parser, DEFAULT_JSON_OUT)
    args = parser.parse_args(argv)
    if min(args.seconds, args.concurrency, args.rounds, args.contextforge_workers) <= 0:
        parser.error("--seconds, --concurrency, --rounds and --contextforge-workers must be > 0")
    if (
        min(
            args.warmup,
            args.stateless_calls,
            args.stateless_warmup_calls,
            args.healthz_seconds,
            args.oauth_ttl,
        )
        < 0
    ):
        parser.error(
            "--warmup, --stateless-calls, --stateless-warmup-calls, --healthz-seconds and "
            "--oauth-ttl must not be negative"
        )
    return args


def _start_upstream(procs: Processes, response: str) -> tuple[Child, str]:
    argv = [sys.executable, str(SCRIPTS / "benchlib" / "gateway_upstream.py")]
    if response == "json":
        argv.append("--json-response")
    child, line = start_server(
        procs,
        "upstream",
        argv,
        timeout_s=_START_TIMEOUT_S,
        ready=lambda line: str(line["url"]).rsplit("/", 1)[0] + "/",
    )
    return child, str(line["url"])


def _start_floor(procs: Processes, upstream_url: str) -> tuple[Child, str]:
    """Start the lean proxy in front of the upstream; the child and its MCP URL."""
    origin, path = upstream_url.rsplit("/", 1)
    argv = [sys.executable, str(SCRIPTS / "benchlib" / "lean_proxy.py"), "--upstream", origin]
    # Ready once a request through it reaches the upstream (any answer will do).
    child, line = start_server(procs, "lean-proxy", argv, timeout_s=_START_TIMEOUT_S)
    return child, f"{line['base_url']}/{path}"


def _start_agentws(
    procs: Processes, work: Path, upstream_url: str, hostile: bool
) -> tuple[Child, str, str, str | None]:
    """Set up agentws with the upstream as a connector and serve it.

    With ``hostile``, the hostile upstream is a connector of the group too.
    Returns the child, the MCP URL, a read token and (with ``hostile``) a write token.
    """
    database_url = f"sqlite:///{work / 'agentws.db'}"
    env = agentws_env(
        database_url,
        AGENTWS_CONNECTOR_ALLOWLIST="127.0.0.1",
        AGENTWS_DATA_DIR=str(work),
    )
    run_cli(env, "init")
    run_cli(env, "workspace", "create", _WORKSPACE)
    run_cli(env, "group", "create", _WORKSPACE, _GROUP)
    run_cli(
        env,
        "connector",
        "add",
        _WORKSPACE,
        _CONNECTOR,
        "--kind",
        "remote_mcp",
        "--url",
        upstream_url,
    )
    run_cli(env, "connector", "attach", _WORKSPACE, _GROUP, _CONNECTOR)
    run_cli(env, "tool", "label", _WORKSPACE, _TOOL, "read")
    token = str(
        run_cli(env, "token", "create", _WORKSPACE, _GROUP, "--name", "bench", "--scope", "read")[
            "token"
        ]
    )
    writer = gateway_bounds.add_hostile(procs, env, _WORKSPACE, _GROUP) if hostile else None
    child, base_url = serve_agentws(procs, "agentws", env, _say)
    return child, f"{base_url}/mcp/g/{_WORKSPACE}/{_GROUP}", token, writer


def _job(
    args: argparse.Namespace, url: str, token: str | None, tool: str, pids: dict[str, int]
) -> dict[str, Any]:
    return {
        "url": url,
        "token": token,
        "tool": tool,
        "echo": True,
        "queries": [f"echo {n}: the quick brown fox jumps over the lazy dog" for n in range(64)],
        "concurrency": args.concurrency,
        "warmup_s": args.warmup,
        "seconds": args.seconds,
        "server_pid": None,
        "other_pids": pids,
    }


def _measure(procs: Processes, job: dict[str, Any], way: str, n: int) -> dict[str, Any]:
    _say(f"{TITLES[way]}, round {n}: load for {job['warmup_s']:g}+{job['seconds']:g} s")
    timeout = job["warmup_s"] + job["seconds"] + 120
    result = cli.run_load_client(procs, "mcp_load.py", job, timeout)
    result.pop("answers", None)
    calls = max(1, result["calls"])
    for pid_name in job["other_pids"]:
        result[f"{pid_name}_cpu_ms_per_call"] = result[f"{pid_name}_cpu_s"] * 1000 / calls
    say_round(_say, result, "throughput_rps", "calls/s")
    return result


def _stateless_calls(
    procs: Processes, job: dict[str, Any], calls: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """At least ``calls`` stateless calls of ``job``'s tool, back to back; their figures summed.

    The load client runs for a time, not a count: each run is sized to the
    calls still to send at the rate of the run before, so the count is
    overshot by less than one run's tail. CPU per call is each process's
    CPU time over the measured windows divided by the calls measured in them.

    :raises BenchError: a call failed.
    """
    stateless = {**job, "era": ERA, "warmup_s": 0.0}
    sent = measured = 0
    window_s = gateway_s = upstream_s = 0.0
    low, high = _STATELESS_RUN_S
    seconds = low
    while sent < calls:
        result = cli.run_load_client(
            procs, "mcp_load.py", {**stateless, "seconds": seconds}, seconds + 120
        )
        if result["errors"]:
            raise BenchError(f"stateless calls failed: {result.get('error_samples')}")
        sent += int(result["calls_total"])
        measured += int(result["calls"])
        window_s += result["seconds"]
        gateway_s += result["gateway_cpu_s"]
        upstream_s += result["upstream_cpu_s"]
        rate = max(1.0, result["calls_total"] / result["seconds"])
        seconds = min(high, max(low, (calls - sent) / rate))
    per_call = 1000 / max(1, measured)
    found = {
        "calls": sent,
        "throughput_rps": measured / window_s,
        "gateway_cpu_ms_per_call": gateway_s * per_call,
        "upstream_cpu_ms_per_call": upstream_s * per_call,
    }
    say(
        f"  {sent:,} calls, {found['throughput_rps']:,.0f} calls/s; CPU per call "
        f"{found['gateway_cpu_ms_per_call']:.3f} ms (agentws), "
        f"{found['upstream_cpu_ms_per_call']:.3f} ms (upstream)"
    )
    return found


def _stateless(
    procs: Processes, agentws: Child, job: dict[str, Any], warmup_calls: int, calls: int
) -> dict[str, Any]:
    """agentws under stateless calls: its CPU per call, its RSS after a warm-up and after more.

    The warm-up fills what is filled once (caches, pools, the connector's
    link); what the RSS does over the calls after it is what stays per call.
    """
    _say(f"agentws: {warmup_calls:,} stateless calls to warm up")
    warmup = _stateless_calls(procs, job, warmup_calls, _say) if warmup_calls else {"calls": 0}
    before, anon_before = rss_kb(agentws.pid), rss_kb(agentws.pid, "RssAnon")
    # Read halfway too: caches that fill up to a bound (SQLite's page caches as
    # the audit log grows) grow in the first half; what grows in the second as
    # much as in the first is kept per call.
    _say(f"agentws: {calls:,} stateless calls, RSS before, halfway and after")
    first = _stateless_calls(procs, job, calls // 2, _say)
    half, anon_half = rss_kb(agentws.pid), rss_kb(agentws.pid, "RssAnon")
    second = _stateless_calls(procs, job, calls - first["calls"], _say)
    after, anon_after = rss_kb(agentws.pid), rss_kb(agentws.pid, "RssAnon")
    _say(
        f"  RSS {before / 1024:.1f} -> {half / 1024:.1f} -> {after / 1024:.1f} MB (anonymous "
        f"{anon_before / 1024:.1f} -> {anon_half / 1024:.1f} -> {anon_after / 1024:.1f})"
    )
    total = first["calls"] + second["calls"]
    return {
        "calls": total,
        "second_half_calls": second["calls"],
        # Weighted by the calls of each half.
        **{
            key: (first[key] * first["calls"] + second[key] * second["calls"]) / total
            for key in ("throughput_rps", "gateway_cpu_ms_per_call", "upstream_cpu_ms_per_call")
        },
        "warmup_calls": warmup["calls"],
        "rss_before_kb": before,
        "rss_half_kb": half,
        "rss_after_kb": after,
        "anon_before_kb": anon_before,
        "anon_half_kb": anon_half,
        "anon_after_kb": anon_after,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "mode": "gateway",
        "date": cli.now_utc(),
        "machine": describe_machine(_PACKAGES),
        "config": {
            "seconds": args.seconds,
            "warmup_s": args.warmup,
            "concurrency": args.concurrency,
            "rounds": args.rounds,
            "upstream_response": args.upstream_response,
            "contextforge": args.contextforge,
            "contextforge_workers": args.contextforge_workers,
            "stateless_calls": args.stateless_calls,
            "stateless_warmup_calls": args.stateless_warmup_calls,
            "floor": not args.no_floor,
            "healthz_seconds": args.healthz_seconds,
            "oauth_ttl_s": args.oauth_ttl,
        },
        "targets": {
            "direct_ratio": DIRECT_TARGET,
            "cpu_ratio": CPU_TARGET,
            "contextforge_ratio": CONTEXTFORGE_TARGET,
            "stateless_rss_growth_kb": RSS_GROWTH_TARGET_KB,
        },
    }
    with cli.workdir("gateway", args.keep) as work, Processes(work) as procs:
        floor_name = "" if args.no_floor else ", the lean proxy"
        forge_name = " and ContextForge" if args.contextforge == "auto" else ""
        _say(f"upstream{floor_name}, agentws{forge_name}")
        upstream, upstream_url = _start_upstream(procs, args.upstream_response)
        agentws, agentws_url, token, writer = _start_agentws(
            procs, work, upstream_url, args.healthz_seconds > 0
        )
        jobs: dict[str, dict[str, Any]] = {
            "direct": _job(args, upstream_url, None, "echo", {"upstream": upstream.pid}),
            "agentws": _job(
                args, agentws_url, token, _TOOL, {"gateway": agentws.pid, "upstream": upstream.pid}
            ),
        }
        gateways: dict[str, Child] = {"agentws": agentws}
        if not args.no_floor:
            floor, floor_url = _start_floor(procs, upstream_url)
            jobs["floor"] = _job(
                args, floor_url, None, "echo", {"gateway": floor.pid, "upstream": upstream.pid}
            )
            gateways["floor"] = floor
        if args.contextforge == "auto":
            problem = contextforge.install(args.contextforge_venv, _say)
            if problem is None:
                forge = contextforge.start(
                    procs,
                    work,
                    args.contextforge_venv,
                    upstream_url,
                    workers=args.contextforge_workers,
                )
                results["contextforge_version"] = forge.version
                pids = {f"gateway{i}" if i else "gateway": pid for i, pid in enumerate(forge.pids)}
                jobs["contextforge"] = _job(
                    args, forge.url, forge.token, forge.tool, {**pids, "upstream": upstream.pid}
                )
                gateways["contextforge"] = forge.child
            else:
                _say(f"ContextForge left out: {problem}")
                results["contextforge_problem"] = problem
        measures: dict[str, Callable[[int], dict[str, Any]]] = {
            way: functools.partial(_measure, procs, jobs[way], way) for way in WAYS if way in jobs
        }
        runs = cli.abba_rounds(args.rounds, measures, lambda _: None)
        results["rss_kb"] = {"upstream": rss_kb(upstream.pid)} | {
            way: rss_kb(child.pid) for way, child in gateways.items()
        }
        if args.stateless_calls:
            results["stateless"] = _stateless(
                procs, agentws, jobs["agentws"], args.stateless_warmup_calls, args.stateless_calls
            )
        if args.oauth_ttl:
            _say(f"agentws: an OAuth connector, its token expiring every {args.oauth_ttl:g} s")
            results["oauth"] = gateway_oauth.run_oauth(procs, work, args, _say, _measure)
        if writer is not None:
            _say("agentws: /healthz alone, then while one client loops hostile calls")
            results["healthz"] = gateway_bounds.healthz(
                procs,
                agentws_url.split("/mcp/", 1)[0],
                agentws_url,
                writer,
                args.healthz_seconds,
                _say,
            )
    for way, way_runs in runs.items():
        results[way] = best_round(way_runs, "throughput_rps")
        results[f"{way}_rounds"] = way_runs
    _gateway_cpu(results)
    return results


def _gateway_cpu(results: dict[str, Any]) -> None:
    """Sum the CPU per call of every process of a gateway (ContextForge may run several)."""
    for way in ("floor", "agentws", "contextforge"):
        best = results.get(way)
        if best is None:
            continue
        best["gateway_cpu_ms_per_call_all"] = sum(
            v for k, v in best.items() if k.startswith("gateway") and k.endswith("_ms_per_call")
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = cli.run_and_report("gateway", args, run, render)
    if isinstance(results, int):
        return results
    if any(
        results[way]["errors_all_rounds"]
        for way in ("direct", "floor", "agentws")
        if way in results
    ):
        return 1
    oauth = results.get("oauth")
    if oauth and (oauth["oauth"]["errors_all_rounds"] or oauth["static"]["errors_all_rounds"]):
        return 1
    if args.check and not passed(results):
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:  # pragma: no cover - run_and_report reports its own
        print(f"scripts/bench gateway: {exc}", file=sys.stderr)
        sys.exit(1)
