"""``scripts/bench gateway``: a remote MCP tool called directly, through agentws and ContextForge.

One upstream MCP server (the ``mcp`` SDK's ``MCPServer`` with one ``echo``
tool, on uvicorn, answering each POST the SDK's default way: see
:mod:`benchlib.gateway_upstream`) serves three ways of calling it, on
loopback, in a temp directory of its own:

1. **direct**: the load client calls the upstream itself (the floor);
2. **agentws**: ``agentws serve`` (SQLite store, offline model) with the
   upstream added as a remote MCP connector (``agentws connector add
   --kind remote_mcp``, allowed by ``AGENTWS_CONNECTOR_ALLOWLIST``),
   attached to a group, its tool labelled ``read``, called with a token of
   ``read`` scope: every call is authenticated, checked against the
   permissions, audited and forwarded over the connector's link;
3. **ContextForge** (IBM's MCP gateway, PyPI ``mcp-contextforge-gateway``),
   when it can be installed into a venv of its own (``--contextforge-venv``):
   its default settings, the upstream registered as a gateway and a virtual
   server holding its tools (see :mod:`benchlib.contextforge`).

The same load client (:mod:`benchlib.mcp_load`: ``--concurrency`` workers, an
initialized Streamable HTTP session each, ``tools/call`` back to back, each
answer checked to echo what was sent) runs against each in turn, in
interleaved rounds (direct, agentws, ContextForge, then the reverse order,
...); every server stays up for all rounds. For each window it takes
calls/s, p50/p99 latency, and the CPU time of the gateway process and of
the upstream (so CPU per call of each), and at the end the resident
memory of each process. Results are printed as Markdown and written as
JSON (``--json-out``).

Targets (issue "performance at gateway scale"): agentws's calls/s >= 0.6x
the upstream called directly; agentws's CPU per proxied call no more than
the upstream's own per call (in the same window); agentws >= 20x
ContextForge's calls/s where ContextForge runs.

Two more rows say what one client cannot do to agentws
(:mod:`benchlib.gateway_bounds`): its RSS over ``--stateless-calls``
sustained stateless (2026-07-28) calls stays within 10% of where it
started, and ``/healthz`` answers within 100 ms (p99) while one client
loops tool calls whose schemas used to freeze the process. Two more
(:mod:`benchlib.gateway_oauth`): an OAuth connector whose access token
expires every ``--oauth-ttl`` seconds loses no call, and keeps at least
0.95x the calls/s of the same upstream through a static-token connector. The report is
:mod:`benchlib.gateway_report`'s.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cli, contextforge, gateway_bounds, gateway_oauth
from benchlib.agentws_setup import agentws_env, run_cli, serve_agentws
from benchlib.gateway_report import (
    CONTEXTFORGE_TARGET,
    CPU_TARGET,
    DIRECT_TARGET,
    TITLES,
    WAYS,
    passed,
    render,
)
from benchlib.load import best_round, say_round
from benchlib.machine import describe_machine
from benchlib.procs import BenchError, Child, Processes, rss_kb, start_server

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "gateway.json"
DEFAULT_CONTEXTFORGE_VENV = REPO / ".bench-venvs" / "contextforge"

# Seconds a server gets to start answering.
_START_TIMEOUT_S = 60.0
_WORKSPACE, _GROUP, _CONNECTOR = "acme", "ops", "upstream"
_TOOL = f"{_CONNECTOR}_echo"
_PACKAGES = ["agentws", "mcp", "uvicorn", "hypercorn", "trio", "httpx2"]

_say = cli.logger("gateway")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench gateway",
        description=(
            "Benchmark proxied tools/call: one upstream MCP server (the mcp SDK's MCPServer "
            "with an echo tool) called directly, through agentws (a remote MCP connector, "
            "the tool labelled read, a read token) and, when it can be installed, through "
            "IBM ContextForge (default settings, a virtual server of the same tool); the "
            "same load client, interleaved rounds."
        ),
        epilog=(
            "Targets: agentws calls/s >= 0.6x direct; agentws CPU per proxied call <= the "
            "upstream's own; agentws >= 20x ContextForge's calls/s where it runs. Exit status "
            "0 when the run completed (see --check), 1 when it failed (including any failed "
            "call through agentws or directly)."
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
        help="stateless calls through agentws between its two RSS readings (0: no such row)",
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
    if min(args.warmup, args.stateless_calls, args.healthz_seconds, args.oauth_ttl) < 0:
        parser.error(
            "--warmup, --stateless-calls, --healthz-seconds and --oauth-ttl must not be negative"
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
            "healthz_seconds": args.healthz_seconds,
            "oauth_ttl_s": args.oauth_ttl,
        },
        "targets": {
            "direct_ratio": DIRECT_TARGET,
            "cpu_ratio": CPU_TARGET,
            "contextforge_ratio": CONTEXTFORGE_TARGET,
        },
    }
    with cli.workdir("gateway", args.keep) as work, Processes(work) as procs:
        _say(f"upstream, agentws{' and ContextForge' if args.contextforge == 'auto' else ''}")
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
        measures = {
            way: functools.partial(_measure, procs, jobs[way], way) for way in WAYS if way in jobs
        }
        runs = cli.abba_rounds(args.rounds, measures, lambda _: None)
        results["rss_kb"] = {"upstream": rss_kb(upstream.pid)} | {
            way: rss_kb(child.pid) for way, child in gateways.items()
        }
        if args.stateless_calls:
            _say(f"agentws: {args.stateless_calls:,} stateless calls, RSS before and after")
            results["stateless_memory"] = gateway_bounds.memory(
                procs, agentws, jobs["agentws"], args.stateless_calls, _say
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
    for way in ("agentws", "contextforge"):
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
    if results["direct"]["errors_all_rounds"] or results["agentws"]["errors_all_rounds"]:
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
