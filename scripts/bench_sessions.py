"""``scripts/bench sessions``: what many concurrent MCP sessions cost, agentws beside the SDK.

For each number of sessions N (``--sessions``, by default 200 and 1,000),
on loopback, in a temp directory of its own, one fresh server at a time:

1. ``agentws serve`` (SQLite store, the offline model, the database seeded
   as ``scripts/bench mcp`` seeds it: a workspace, a group with a library of
   ``--documents`` generated Markdown documents). The client opens N
   sessions on one token, half over Streamable HTTP (initialize, then the
   session's ``GET`` stream), half over legacy HTTP+SSE (2024-11-05), at
   most ``--open-concurrency`` handshakes at a time, and holds every stream
   open: each on a socket of its own, handed once open to one of a few
   watcher processes (``--streams-per-watcher`` each) that wait on their
   sockets with epoll and stamp each stream's end with ``time.time()``
   (``benchlib/session_watch.py``), so the client keeps up however many
   streams end at once. It measures the initialize latency (p50/p99) and the
   time to open them all; the server's VmRSS (/proc/<pid>/status) before
   and after each half, hence the resident memory per open session; the
   ``tools/list`` latency (p50/p99) of ``--list-clients`` other sessions (a
   token of their own) each calling ``--list-rate`` times a second at random
   times, before the N sessions open and while they are open. Then it
   revokes the N sessions' token with ``agentws token revoke`` (another
   process, as an operator would) and times how long after the revocation
   (the token's ``revoked_at``) every one of the N streams has ended;
   checks the other token's sessions are untouched and the revoked token is
   refused; opens N sessions again on a second token and revokes it through
   the admin API (``DELETE /api/v1/.../tokens/<id>``), timed the same way.
   Around each of the two, from 1 s before to 10 s after, the server's CPU
   is sampled every 20 ms (with the client's own) and ``GET /healthz`` is
   sent every 10 ms on a kept-alive connection: when the server went idle,
   what it spent, and its event loop's longest stall
   (``benchlib/session_observe.py``). Last it revokes the listers' token
   (admin API) and, once the client has closed all its connections, counts
   the sockets the server still holds (/proc/<pid>/fd). With ``--stores
   sqlite,postgres`` (the default) the same again on PostgreSQL, in a
   database of its own created for the run (``--database-url`` names the
   server), where revocations are announced with ``NOTIFY``.
2. The reference: the ``mcp`` SDK's ``MCPServer`` (the server ``scripts/bench
   mcp`` measures) on uvicorn, serving Streamable HTTP
   (``streamable_http_app(json_response=True)``) and legacy SSE
   (``sse_app()``), holding the same sessions under the same load. It has
   no tokens, so nothing to revoke.
3. The stack's floor under a revocation (``benchlib/stream_floor.py``; not
   with ``--no-floor``): N bare SSE streams of a QuartTrio route on
   Hypercorn, ended at once and timed by the same watchers; the floor the
   targets compare with has the collector's objects frozen once every
   stream is open (as agentws's collector steward does); the same with the
   collector off throughout is reported beside it, and the same ended 100
   at a time, each batch once the last one has ended, as agentws closes a
   revoked token's sessions to keep other requests from waiting (the floor
   under the loop-stall target too). The floor answers the same loop-stall
   probe.

The servers run in ABBA order over the levels (agentws first at the first
level, the reference first at the second, ...). Results are printed as
Markdown and written as JSON (``--json-out``), with each revocation's CPU
timeline. Targets (issue 41), on SQLite and on PostgreSQL: every stream of
a revoked token ended, through the CLI and through the admin API, within
500 ms of the revocation up to 1,000 sessions, and within 2x the floor
measured at the same number in the same run above that (10,000); no
event-loop stall over 100 ms in the 10 s after; at most 50 KB of resident
memory per open session at each level; tools/list p99 under 20 ms at 16
clients x 5/s with every session open. Reported without a target: the ratio
of memory to the reference's, open latency, the server's CPU after a
revocation. The report is :mod:`benchlib.sessions_report`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cli
from benchlib.agentws_setup import (
    AgentwsSite,
    agentws_bin,
    agentws_env,
    run_cli,
    serve_agentws,
    set_up_agentws,
)
from benchlib.corpus import SEED, make_corpus, write_corpus
from benchlib.machine import describe_machine
from benchlib.postgres import fresh_database
from benchlib.procs import (
    BenchError,
    Child,
    Processes,
    cpu_cores,
    log_findings,
    open_sockets,
    raise_nofile_limit,
    start_server,
    stop_server,
)
from benchlib.session_hold import (
    LevelPlan,
    Revocation,
    Revoker,
    Target,
    measure_level,
    wall_time,
)
from benchlib.session_watch import STREAMS_PER_WATCHER
from benchlib.sessions_report import (
    FLOOR_FACTOR,
    FLOOR_FROM_SESSIONS,
    LIST_P99_TARGET_MS,
    REVOKE_TARGET_MS,
    RSS_TARGET_KB,
    STALL_TARGET_MS,
    failed,
    passed,
    render,
)
from benchlib.stream_floor import COLLECTORS
from benchlib.stream_floor import measure as measure_stream_floor

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "sessions.json"

# Opening one transport's sessions may take this long, plus this much a session.
_OPEN_TIMEOUT_S = 60.0
_OPEN_TIMEOUT_PER_SESSION_S = 0.05
# File descriptors each process needs beyond one a session (pools, the store, logs).
_SPARE_FDS = 2048
_START_TIMEOUT_S = 30.0
# agentws's shutdown grace: it has no session left to drain when stopped.
_SHUTDOWN_GRACE_S = "2"
# Attempts at starting agentws (others may be editing it: a failed import is retried).
_ATTEMPTS = 3
_PACKAGES = ["agentws", "mcp", "uvicorn", "hypercorn", "trio", "anyio", "starlette", "httpx2"]

_say = cli.logger("sessions")


def _levels(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None
    if not levels or min(levels) < 2:
        raise argparse.ArgumentTypeError("each number of sessions must be at least 2")
    return levels


def _stores(text: str) -> list[str]:
    stores = [part.strip() for part in text.split(",") if part.strip()]
    if "sqlite" not in stores or any(store not in ("sqlite", "postgres") for store in stores):
        raise argparse.ArgumentTypeError(f"expected sqlite or sqlite,postgres, got {text!r}")
    return stores


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench sessions",
        description=(
            "Benchmark many concurrent MCP sessions on one agentws process, beside the mcp "
            "SDK's MCPServer on uvicorn holding the same sessions: time to open them "
            "(initialize p50/p99), resident memory per open session, tools/list latency "
            "while they are open, and (agentws) the time for every stream of a revoked "
            "token to end (through the CLI, then the admin API), with the server's CPU "
            "timeline and event-loop stalls around it, beside the stack's floor (bare "
            "QuartTrio streams ended at once). Half the sessions use Streamable HTTP (with "
            "their GET stream open), half legacy HTTP+SSE; the streams are held by watcher "
            "processes that stamp each end. About 4 minutes with the defaults."
        ),
        epilog=(
            "Targets, on each store: every stream of a revoked token ended, through the CLI "
            f"and through the admin API, < {REVOKE_TARGET_MS:g} ms after revoked_at with up "
            f"to {FLOOR_FROM_SESSIONS:,} sessions, < {FLOOR_FACTOR:g}x the floor (bare "
            "QuartTrio streams, the collector frozen once open, same N, same run) above; "
            f"no event-loop stall (GET /healthz every 10 ms) over {STALL_TARGET_MS:g} ms in "
            f"the 10 s after; <= {RSS_TARGET_KB:g} KB of RSS per open session; tools/list "
            f"p99 < {LIST_P99_TARGET_MS:g} ms at --list-clients x --list-rate (16 x 5/s) "
            "with every session open. Exit status 0 when the run completed (2 with --check "
            "when a target was missed), 1 when it failed (a session that did not open, a "
            "failed tools/list call)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--sessions",
        type=_levels,
        default=[200, 1000],
        metavar="N[,N...]",
        help="numbers of sessions to hold, one fresh server each (half of each transport)",
    )
    parser.add_argument(
        "--open-concurrency", type=int, default=20, help="handshakes in flight at once"
    )
    parser.add_argument(
        "--open-timeout",
        type=float,
        default=None,
        help="seconds opening one transport's sessions may take; the rest are skipped "
        f"(default: {_OPEN_TIMEOUT_S:g} s, plus {_OPEN_TIMEOUT_PER_SESSION_S:g} s a session)",
    )
    parser.add_argument(
        "--stores",
        type=_stores,
        default=["sqlite", "postgres"],
        metavar="STORE[,STORE]",
        help="agentws's stores, a fresh agentws run on each at each level: sqlite, postgres",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "AGENTWS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
        help="a PostgreSQL database to connect to; each postgres run creates a database of "
        "its own beside it, and drops it after",
    )
    parser.add_argument(
        "--list-clients", type=int, default=16, help="sessions calling tools/list (own token)"
    )
    parser.add_argument(
        "--list-rate", type=float, default=5.0, help="tools/list calls per second of each client"
    )
    parser.add_argument(
        "--list-seconds", type=float, default=10.0, help="measured seconds of each tools/list run"
    )
    parser.add_argument(
        "--list-warmup", type=float, default=1.0, help="seconds of each tools/list run not measured"
    )
    parser.add_argument(
        "--settle", type=float, default=2.0, help="seconds of quiet before each RSS reading"
    )
    parser.add_argument(
        "--revoke-wait",
        type=float,
        default=None,
        help="seconds to wait for a revoked token's streams to end (default: 10 s, plus 1 s "
        "a thousand sessions)",
    )
    parser.add_argument(
        "--streams-per-watcher",
        type=int,
        default=STREAMS_PER_WATCHER,
        help="held streams per watcher process (a process more for each this many)",
    )
    parser.add_argument("--documents", type=int, default=200, help="context documents to index")
    parser.add_argument(
        "--no-reference", action="store_true", help="measure agentws only (no MCPServer runs)"
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="skip the stack's floor (bare SSE streams on QuartTrio, ended at once; "
        "see benchlib/stream_floor.py): revocations above 1,000 sessions then have no target "
        "(--check counts them as missed)",
    )
    cli.add_output_args(parser, DEFAULT_JSON_OUT)
    args = parser.parse_args(argv)
    if min(args.open_concurrency, args.list_clients, args.documents, args.streams_per_watcher) <= 0:
        parser.error(
            "--open-concurrency, --list-clients, --documents and --streams-per-watcher "
            "must be positive"
        )
    if min(args.open_timeout or 1, args.list_rate, args.list_seconds, args.revoke_wait or 1) <= 0:
        parser.error("--open-timeout, --list-rate, --list-seconds and --revoke-wait must be > 0")
    if min(args.list_warmup, args.settle) < 0:
        parser.error("--list-warmup and --settle cannot be negative")
    return args


# --- agentws: tokens, server, revocations ---------------------------------------------------


def _new_token(site: AgentwsSite, name: str) -> dict[str, Any]:
    env = agentws_env(site.database_url)
    token: dict[str, Any] = run_cli(
        env, "token", "create", site.workspace, site.group, "--name", name
    )
    return token


def _admin_token(site: AgentwsSite) -> str:
    env = agentws_env(site.database_url)
    admins = run_cli(env, "admin", "list")
    if not isinstance(admins, list) or not admins:
        raise BenchError("`agentws admin list` lists no admin (agentws init makes one)")
    created = run_cli(env, "admin", "token", "create", admins[0]["username"], "--name", "b")
    return str(created["token"])


def _start_agentws(
    procs: Processes, site: AgentwsSite, name: str, sessions: int
) -> tuple[Child, str]:
    env = agentws_env(
        site.database_url,
        AGENTWS_MCP_MAX_SESSIONS=str(2 * sessions + 1000),
        AGENTWS_MCP_MAX_SESSIONS_PER_TOKEN=str(sessions + 500),
        AGENTWS_SHUTDOWN_GRACE_S=_SHUTDOWN_GRACE_S,
    )
    return serve_agentws(procs, name, env, _say, attempts=_ATTEMPTS)


def _revoke_with_cli(site: AgentwsSite, token_id: str) -> Revoker:
    async def revoke() -> tuple[float, dict[str, Any]]:
        argv = [str(agentws_bin()), "token", "revoke", site.workspace, site.group, token_id]
        started = time.time()
        done = await trio.run_process(
            [*argv, "--json"],
            env=agentws_env(site.database_url),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        cli_s = time.time() - started
        if done.returncode != 0:
            return math.nan, {"via": "cli", "error": done.stderr.decode()[-500:]}
        revoked = json.loads(done.stdout)
        return wall_time(revoked["revoked_at"]), {"via": "cli", "cli_s": cli_s}

    return revoke


def _revoke_with_api(site: AgentwsSite, base_url: str, admin: str, token_id: str) -> Revoker:
    async def revoke() -> tuple[float, dict[str, Any]]:
        url = f"{base_url}/api/v1/workspaces/{site.workspace}/groups/{site.group}/tokens/{token_id}"
        started = time.time()
        async with httpx2.AsyncClient(timeout=30) as client:
            response = await client.delete(url, headers={"authorization": f"Bearer {admin}"})
        request_s = time.time() - started
        if response.status_code != 200:
            error = f"HTTP {response.status_code}: {response.text[:300]}"
            return math.nan, {"via": "admin API", "error": error}
        revoked = response.json()
        return wall_time(revoked["revoked_at"]), {"via": "admin API", "request_s": request_s}

    return revoke


# --- one level on each server ------------------------------------------------------------------


def _plan(args: argparse.Namespace, sessions: int, lister: str | None) -> LevelPlan:
    return LevelPlan(
        streamable=sessions // 2,
        legacy=sessions - sessions // 2,
        open_concurrency=args.open_concurrency,
        open_timeout_s=args.open_timeout
        or _OPEN_TIMEOUT_S + _OPEN_TIMEOUT_PER_SESSION_S * (sessions - sessions // 2),
        list_clients=args.list_clients,
        list_rate=args.list_rate,
        list_warmup_s=args.list_warmup,
        list_seconds=args.list_seconds,
        settle_s=args.settle,
        revoke_wait_s=args.revoke_wait or 10.0 + sessions / 1000,
        streams_per_watcher=args.streams_per_watcher,
        lister_token=lister,
    )


def _finish(
    result: dict[str, Any], procs: Processes, server: Child, settle_s: float
) -> dict[str, Any]:
    # The client has closed every connection: what the server still holds of them.
    time.sleep(settle_s)
    with contextlib.suppress(OSError):
        result["sockets_after_client_closed"] = open_sockets(server.pid)
    result["server_exit_status"] = stop_server(procs, server, _say)
    result["server_log"] = log_findings(server)
    for key in ("list_idle", "list_loaded"):
        if key in result:
            cpu_cores(result[key])
    return result


def _measure_agentws(
    args: argparse.Namespace,
    procs: Processes,
    site: AgentwsSite,
    admin: str,
    sessions: int,
    store: str = "sqlite",
) -> dict[str, Any]:
    bulk = _new_token(site, f"bulk-{sessions}")
    bulk_api = _new_token(site, f"bulk-api-{sessions}")
    lister = _new_token(site, f"lister-{sessions}")
    name = "agentws" if store == "sqlite" else f"agentws ({store})"
    _say(f"{name}, {sessions} sessions: serving")
    server, base_url = _start_agentws(procs, site, f"agentws-{store}-{sessions}", sessions)
    url = base_url + site.path
    target = Target(name, url, url, server.pid, healthz_url=f"{base_url}/healthz")
    revocations = [
        Revocation("revocation", "CLI", bulk["token"], _revoke_with_cli(site, bulk["id"])),
        Revocation(
            "revocation_api",
            "admin API",
            bulk_api["token"],
            _revoke_with_api(site, base_url, admin, bulk_api["id"]),
        ),
    ]
    run = functools.partial(
        measure_level,
        procs,
        target,
        _plan(args, sessions, lister["token"]),
        _say,
        revocations=revocations,
        revoke_listers=_revoke_with_api(site, base_url, admin, lister["id"]),
    )
    try:
        result = cli.run_trio(run)
    except BaseException:
        procs.stop(server)
        raise
    return _finish(result, procs, server, args.settle)


def _measure_reference(
    args: argparse.Namespace, procs: Processes, site: AgentwsSite, sessions: int
) -> dict[str, Any]:
    _say(f"reference, {sessions} sessions: serving (MCPServer on uvicorn)")
    argv = [
        sys.executable,
        str(SCRIPTS / "benchlib" / "reference_sessions.py"),
        "--database",
        str(site.database_path),
        "--library",
        site.library,
    ]
    server, urls = start_server(
        procs,
        f"reference-{sessions}",
        argv,
        timeout_s=_START_TIMEOUT_S,
        ready=lambda line: str(line["url"]),
    )
    target = Target("reference", urls["url"], urls["sse_url"], server.pid)
    run = functools.partial(measure_level, procs, target, _plan(args, sessions, None), _say)
    try:
        result = cli.run_trio(run)
    except BaseException:
        procs.stop(server)
        raise
    return _finish(result, procs, server, args.settle)


def run(args: argparse.Namespace) -> dict[str, Any]:
    most = max(args.sessions)
    # The client and the server each hold a socket a session (and a few more):
    # each process needs the limit, they do not share it.
    nofile = raise_nofile_limit(max(4096, most * 2 + _SPARE_FDS))
    if nofile < most + _SPARE_FDS:
        raise BenchError(
            f"the open-files limit is {nofile}: too low for {most} sessions "
            "(raise the hard limit, or pass smaller --sessions)"
        )
    corpus = make_corpus(documents=args.documents, seed=SEED)
    results: dict[str, Any] = {
        "mode": "sessions",
        "date": cli.now_utc(),
        "machine": describe_machine(_PACKAGES),
        "config": {
            "sessions": args.sessions,
            "open_concurrency": args.open_concurrency,
            "open_timeout_s": args.open_timeout,
            "list_clients": args.list_clients,
            "list_rate": args.list_rate,
            "list_seconds": args.list_seconds,
            "list_warmup_s": args.list_warmup,
            "settle_s": args.settle,
            "revoke_wait_s": args.revoke_wait,
            "streams_per_watcher": args.streams_per_watcher,
            "documents": args.documents,
            "seed": SEED,
            "reference": not args.no_reference,
            "floor": not args.no_floor,
            "nofile_limit": nofile,
        },
        "targets": {
            "revocation_close_ms": REVOKE_TARGET_MS,
            "revocation_floor_from_sessions": FLOOR_FROM_SESSIONS,
            "revocation_floor_factor": FLOOR_FACTOR,
            "loop_stall_ms": STALL_TARGET_MS,
            "rss_per_session_kb": RSS_TARGET_KB,
            "list_p99_ms": LIST_P99_TARGET_MS,
        },
        "levels": [],
    }
    with cli.workdir("sessions", args.keep) as work, Processes(work) as procs:
        _say(f"setting up agentws in {work}")
        paths = write_corpus(corpus, work / "corpus")
        site = set_up_agentws(work, paths)
        admin = _admin_token(site)
        for index, sessions in enumerate(args.sessions):
            level: dict[str, Any] = {"sessions": sessions}
            order = ["agentws", "reference"] if index % 2 == 0 else ["reference", "agentws"]
            for name in order:
                if name == "reference":
                    if not args.no_reference:
                        level["reference"] = _measure_reference(args, procs, site, sessions)
                    continue
                for store in args.stores:
                    if store == "sqlite":
                        level["agentws"] = _measure_agentws(args, procs, site, admin, sessions)
                        continue
                    directory = work / f"postgres-{sessions}"
                    directory.mkdir()
                    with _postgres_site(args.database_url, directory, paths) as pg_site:
                        level["agentws_postgres"] = _measure_agentws(
                            args, procs, pg_site, _admin_token(pg_site), sessions, "postgres"
                        )
            if not args.no_floor:
                _say(
                    f"stream floor, {sessions} bare SSE streams on QuartTrio: ended at once, "
                    "then paced"
                )
                level["floor"] = [
                    measure_stream_floor(
                        procs, sessions, collector=collector, per_watcher=args.streams_per_watcher
                    )
                    for collector in COLLECTORS
                ]
            results["levels"].append(level)
    return results


@contextlib.contextmanager
def _postgres_site(base_url: str, directory: Path, documents: list[Path]) -> Iterator[AgentwsSite]:
    """A new PostgreSQL database beside ``base_url``'s, set up as the SQLite one; dropped after."""
    with fresh_database(base_url, "bench_sessions") as url:
        yield set_up_agentws(directory, documents, url)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = cli.run_and_report("sessions", args, run, render)
    if isinstance(results, int):
        return results
    if failed(results):
        return 1
    if args.check and not passed(results):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
