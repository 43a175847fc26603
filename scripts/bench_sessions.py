"""``scripts/bench sessions``: what many concurrent MCP sessions cost, agentws beside the SDK.

For each number of sessions N (``--sessions``, by default 200 and 1,000),
on loopback, in a temp directory of its own, one fresh server at a time:

1. ``agentws serve`` (SQLite store, the offline model, the database seeded
   as ``scripts/bench mcp`` seeds it: a workspace, a group with a library of
   ``--documents`` generated Markdown documents). The client opens N
   sessions on one token, half over Streamable HTTP (initialize, then the
   session's ``GET`` stream), half over legacy HTTP+SSE (2024-11-05), at
   most ``--open-concurrency`` handshakes at a time, and holds every stream
   open. It measures the initialize latency (p50/p99) and the time to open
   them all; the server's VmRSS (/proc/<pid>/status) before and after each
   half, hence the resident memory per open session; the ``tools/list``
   latency (p50/p99) of ``--list-clients`` other sessions (a token of their
   own) calling at random times, before the N sessions open and while they
   are open. Then it revokes the N sessions' token with ``agentws token
   revoke`` (another process, as an operator would) and times how long after
   the revocation (the token's ``revoked_at``) every one of the N streams
   has ended; checks the other token's sessions are untouched and the
   revoked token is refused; and revokes the listers' token through the
   admin API (``DELETE /api/v1/.../tokens/<id>``), timing its streams too.
   Last, once the client has closed all its connections, it counts the
   sockets the server still holds (/proc/<pid>/fd). With ``--stores
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
   Hypercorn, ended at once, with the cycle collector on and off: what
   ending N streams costs before agentws does anything of its own.

The servers run in ABBA order over the levels (agentws first at the first
level, the reference first at the second, ...). Results are printed as
Markdown and written as JSON (``--json-out``). Targets (gateway scale):
every stream of a revoked token closed within 500 ms of the revocation,
through the CLI and through the admin API; at most 50 KB of resident
memory per open session; tools/list p99 under 20 ms with every session
open. Reported without a target: the ratio of memory to the reference's,
open latency.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cli
from benchlib.agentws_setup import AgentwsSite, agentws_bin, agentws_env, set_up_agentws
from benchlib.corpus import SEED, make_corpus, write_corpus
from benchlib.instances import psql
from benchlib.machine import describe_machine
from benchlib.procs import BenchError, Child, Processes, raise_nofile_limit, read_json
from benchlib.report import QUIET_CORES, cpu_cores, fmt, report_head, verdict
from benchlib.session_hold import LevelPlan, Revoker, Target, measure_level, wall_time
from benchlib.stream_floor import measure as measure_stream_floor

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "sessions.json"

REVOKE_TARGET_MS = 500.0  # every stream of a revoked token closed (issue: gateway scale)
RSS_TARGET_KB = 50.0  # resident memory per open session
LIST_P99_TARGET_MS = 20.0  # tools/list p99 of the paced clients with every session open
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
_RETRY_PAUSE_S = 3.0
_PACKAGES = ["agentws", "mcp", "uvicorn", "hypercorn", "trio", "anyio", "starlette", "httpx2"]
# Server log lines worth reporting.
_LOG_MARKERS = ("ERROR", "CRITICAL", "Traceback", "WARNING")
_LOG_SAMPLES = 5

T = TypeVar("T")

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
            "token to close. Half the sessions use Streamable HTTP (with their GET stream "
            "open), half legacy HTTP+SSE. About 2.5 minutes with the defaults."
        ),
        epilog=(
            f"Targets: every stream of a revoked token closed < {REVOKE_TARGET_MS:g} ms after "
            f"the revocation, through the CLI and the admin API; <= {RSS_TARGET_KB:g} KB of "
            f"RSS per open session; tools/list p99 < {LIST_P99_TARGET_MS:g} ms with every "
            "session open. Exit status 0 when the run "
            "completed (see --check), 1 when it failed (a session that did not open, a "
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
    parser.add_argument("--documents", type=int, default=200, help="context documents to index")
    parser.add_argument(
        "--no-reference", action="store_true", help="measure agentws only (no MCPServer runs)"
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="skip the stack's floor (bare SSE streams on QuartTrio, ended at once; "
        "see benchlib/stream_floor.py)",
    )
    cli.add_output_args(parser, DEFAULT_JSON_OUT)
    args = parser.parse_args(argv)
    if min(args.open_concurrency, args.list_clients, args.documents) <= 0:
        parser.error("--open-concurrency, --list-clients and --documents must be positive")
    if min(args.open_timeout or 1, args.list_rate, args.list_seconds, args.revoke_wait or 1) <= 0:
        parser.error("--open-timeout, --list-rate, --list-seconds and --revoke-wait must be > 0")
    if min(args.list_warmup, args.settle) < 0:
        parser.error("--list-warmup and --settle cannot be negative")
    return args


# --- agentws: tokens, server, revocations ---------------------------------------------------


def _agentws_cli(site: AgentwsSite, *args: str) -> Any:
    argv = [str(agentws_bin()), *args, "--json"]
    env = agentws_env(site.database_url)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"`agentws {' '.join(args)}` failed:\n{done.stderr.strip()[-2000:]}")
    return read_json(done.stdout, f"`agentws {' '.join(args)}` output")


def _new_token(site: AgentwsSite, name: str) -> dict[str, Any]:
    return _agentws_cli(site, "token", "create", site.workspace, site.group, "--name", name)


def _admin_token(site: AgentwsSite) -> str:
    admins = _agentws_cli(site, "admin", "list")
    if not isinstance(admins, list) or not admins:
        raise BenchError("`agentws admin list` lists no admin (agentws init makes one)")
    created = _agentws_cli(site, "admin", "token", "create", admins[0]["username"], "--name", "b")
    return str(created["token"])


def _retrying(what: str, attempt: Callable[[], T]) -> T:
    for n in range(1, _ATTEMPTS + 1):
        try:
            return attempt()
        except BenchError as exc:
            if n == _ATTEMPTS:
                raise
            _say(f"{what} failed (attempt {n} of {_ATTEMPTS}), retrying: {str(exc)[-300:]}")
            time.sleep(_RETRY_PAUSE_S)
    raise AssertionError("unreachable")


def _start_agentws(
    procs: Processes, site: AgentwsSite, name: str, sessions: int
) -> tuple[Child, str]:
    env = agentws_env(
        site.database_url,
        AGENTWS_BIND="127.0.0.1:0",
        AGENTWS_MCP_MAX_SESSIONS=str(2 * sessions + 1000),
        AGENTWS_MCP_MAX_SESSIONS_PER_TOKEN=str(sessions + 500),
        AGENTWS_SHUTDOWN_GRACE_S=_SHUTDOWN_GRACE_S,
    )

    def start() -> tuple[Child, str]:
        child = procs.start(name, [str(agentws_bin()), "serve", "--json"], env=env)
        try:
            base_url = str(child.read_json_line(_START_TIMEOUT_S)["base_url"])
            cli.wait_until_answering(child, base_url + "/readyz", _START_TIMEOUT_S, want_status=200)
        except BenchError:
            procs.stop(child)
            raise
        return child, base_url

    return _retrying(f"starting {name}", start)


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


def _log_findings(child: Child) -> dict[str, Any]:
    """Warnings and errors in a server's log (stderr)."""
    try:
        lines = child.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {"lines": 0, "flagged": 0, "samples": []}
    flagged = [line for line in lines if any(marker in line for marker in _LOG_MARKERS)]
    return {"lines": len(lines), "flagged": len(flagged), "samples": flagged[:_LOG_SAMPLES]}


# --- one level on each server ------------------------------------------------------------------


def _plan(
    args: argparse.Namespace, sessions: int, bulk: str | None, lister: str | None
) -> LevelPlan:
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
        bulk_token=bulk,
        lister_token=lister,
    )


def _run_trio(function: Callable[[], Any]) -> dict[str, Any]:
    """``trio.run(function)``; a group of one exception is raised as that exception."""
    try:
        result: dict[str, Any] = trio.run(function)
    except BaseExceptionGroup as group:
        leaves: list[BaseException] = []

        def flatten(error: BaseException) -> None:
            if isinstance(error, BaseExceptionGroup):
                for inner in error.exceptions:
                    flatten(inner)
            else:
                leaves.append(error)

        flatten(group)
        for leaf in leaves:
            if isinstance(leaf, KeyboardInterrupt | BenchError):
                raise leaf from None
        if len(leaves) == 1:
            raise leaves[0] from group
        raise
    return result


def _open_sockets(pid: int) -> int:
    """Sockets ``pid`` has open (its listening socket included)."""
    count = 0
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd).startswith("socket:")
    return count


def _finish(
    result: dict[str, Any], procs: Processes, server: Child, settle_s: float
) -> dict[str, Any]:
    # The client has closed every connection: what the server still holds of them.
    time.sleep(settle_s)
    with contextlib.suppress(OSError):
        result["sockets_after_client_closed"] = _open_sockets(server.pid)
    status = procs.stop(server)
    result["server_exit_status"] = status
    result["server_log"] = _log_findings(server)
    if status != 0:
        _say(f"{server.name} exited with status {status}\n{server.log_tail()}")
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
    lister = _new_token(site, f"lister-{sessions}")
    name = "agentws" if store == "sqlite" else f"agentws ({store})"
    _say(f"{name}, {sessions} sessions: serving")
    server, base_url = _start_agentws(procs, site, f"agentws-{store}-{sessions}", sessions)
    url = base_url + site.path
    target = Target(name, url, url, server.pid)
    run = functools.partial(
        measure_level,
        target,
        _plan(args, sessions, bulk["token"], lister["token"]),
        _say,
        revoke_bulk=_revoke_with_cli(site, bulk["id"]),
        revoke_listers=_revoke_with_api(site, base_url, admin, lister["id"]),
    )
    try:
        result = _run_trio(run)
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
    server = procs.start(f"reference-{sessions}", argv)
    urls = server.read_json_line(_START_TIMEOUT_S)
    cli.wait_until_answering(server, urls["url"], _START_TIMEOUT_S)
    target = Target("reference", urls["url"], urls["sse_url"], server.pid)
    run = functools.partial(measure_level, target, _plan(args, sessions, None, None), _say)
    try:
        result = _run_trio(run)
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
            "documents": args.documents,
            "seed": SEED,
            "reference": not args.no_reference,
            "floor": not args.no_floor,
            "nofile_limit": nofile,
        },
        "targets": {"revocation_close_ms": REVOKE_TARGET_MS},
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
                _say(f"stream floor, {sessions} bare SSE streams on QuartTrio: ended at once")
                level["floor"] = [
                    measure_stream_floor(procs, sessions, collector=collector)
                    for collector in (True, False)
                ]
            results["levels"].append(level)
    return results


@contextlib.contextmanager
def _postgres_site(base_url: str, directory: Path, documents: list[Path]) -> Iterator[AgentwsSite]:
    """A new PostgreSQL database beside ``base_url``'s, set up as the SQLite one; dropped after."""
    name = f"bench_sessions_{secrets.token_hex(6)}"
    psql(base_url, f'CREATE DATABASE "{name}"')
    head, _, tail = base_url.partition("?")
    url = head.rsplit("/", 1)[0] + "/" + name + ("?" + tail if tail else "")
    try:
        yield set_up_agentws(directory, documents, url)
    finally:
        psql(base_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- the report ---------------------------------------------------------------------------------


def _p50_p99(figures: dict[str, Any] | None, prefix: str = "") -> str:
    if not figures:
        return "n/a"
    return f"{fmt(figures.get(prefix + 'p50_ms'))} / {fmt(figures.get(prefix + 'p99_ms'))}"


def _opened(figures: dict[str, Any] | None) -> str:
    if not figures:
        return "n/a"
    s, legacy = figures["bulk_streamable"], figures["bulk_sse"]
    opened = s["opened"] + legacy["opened"]
    count = s["count"] + legacy["count"]
    return f"{opened:,} of {count:,} in {s['open_wall_s'] + legacy['open_wall_s']:.1f} s"


def _all_opened(figures: dict[str, Any]) -> bool:
    return all(
        figures[k]["opened"] == figures[k]["count"] and not figures[k]["failed"]
        for k in ("bulk_streamable", "bulk_sse")
    )


def _at_most(value: float | None, limit: float) -> bool:
    return value is not None and not math.isnan(value) and value <= limit


def _below(value: float | None, limit: float) -> bool:
    return value is not None and not math.isnan(value) and value < limit


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or math.isnan(ours) or math.isnan(theirs) or theirs <= 0:
        return "—"
    return f"{ours / theirs:.2f}x reference"


def _revocation_passed(revocation: dict[str, Any] | None) -> bool:
    if not revocation or "error" in revocation:
        return False
    close = revocation["close_max_ms"]
    return (
        revocation["streams"] > 0
        and revocation["still_open"] == 0
        and close is not None
        and not math.isnan(close)
        and close < REVOKE_TARGET_MS
    )


def _revocation_cell(revocation: dict[str, Any] | None) -> str:
    if not revocation:
        return "—"
    if "error" in revocation:
        return f"failed: {revocation['error'][:80]}"
    cell = f"{fmt(revocation['close_max_ms'], 0)} (p50 {fmt(revocation['close_p50_ms'], 0)})"
    if revocation["still_open"]:
        cell += f", {revocation['still_open']} still open after {revocation['wait_s']:g} s"
    return cell


def _floor_cell(floor: list[dict[str, Any]] | None) -> str:
    if not floor:
        return "n/a"
    on, off = floor
    return f"{fmt(on['max_ms'], 0)} ({fmt(off['max_ms'], 0)} collector off)"


def _isolation_passed(revocation: dict[str, Any] | None, clients: int) -> bool:
    if not revocation or "error" in revocation:
        return False
    return (
        revocation["listers_alive"] == clients
        and revocation["listers_answering"] == clients
        and revocation.get("revoked_token_status") == 401
    )


def _sockets(figures: dict[str, Any] | None) -> str:
    if not figures or figures.get("sockets_after_client_closed") is None:
        return "n/a"
    return f"{figures['sockets_after_client_closed']:,} (1 listening)"


def _level_rows(level: dict[str, Any], clients: int, rate: float) -> list[list[str]]:
    n = level["sessions"]
    ours: dict[str, Any] = level["agentws"]
    ref: dict[str, Any] | None = level.get("reference")
    rows = [
        [
            f"**{n:,} sessions** opened ({n // 2:,} Streamable HTTP + {n - n // 2:,} legacy SSE)",
            _opened(ours),
            _opened(ref),
            "all open",
            verdict(_all_opened(ours)),
        ]
    ]
    for key, what in (("bulk_streamable", "Streamable HTTP"), ("bulk_sse", "legacy SSE")):
        rows.append(
            [
                f"{n:,}: initialize p50 / p99, {what} (ms)",
                _p50_p99(ours[key], "init_"),
                _p50_p99(ref[key] if ref else None, "init_"),
                "— (reported)",
                "—",
            ]
        )
    for key, what in (("bulk_streamable", "Streamable HTTP"), ("bulk_sse", "legacy SSE")):
        theirs = ref[key]["per_session_kb"] if ref else None
        per_session = ours[key]["per_session_kb"]
        rows.append(
            [
                f"{n:,}: RSS per open session, {what} (KB)",
                fmt(per_session),
                fmt(theirs),
                f"<= {RSS_TARGET_KB:g} KB",
                f"{verdict(_at_most(per_session, RSS_TARGET_KB))} ({_ratio(per_session, theirs)})",
            ]
        )
    rows.append(
        [
            f"{n:,}: tools/list p50 / p99, {clients} clients at {rate:g}/s, {n:,} sessions open "
            "(no session open) (ms)",
            f"{_p50_p99(ours['list_loaded'])} ({_p50_p99(ours['list_idle'])})",
            f"{_p50_p99(ref['list_loaded'])} ({_p50_p99(ref['list_idle'])})" if ref else "n/a",
            f"p99 < {LIST_P99_TARGET_MS:g} ms",
            verdict(_below((ours["list_loaded"] or {}).get("p99_ms"), LIST_P99_TARGET_MS)),
        ]
    )
    revocation = ours.get("revocation")
    streams = revocation["streams"] if revocation else n
    rows.append(
        [
            f"{n:,}: revoked (CLI) → all {streams:,} streams of the token closed, "
            "ms after revoked_at (p50); reference: the stack's floor, see below",
            _revocation_cell(revocation),
            _floor_cell(level.get("floor")),
            f"< {REVOKE_TARGET_MS:g} ms",
            verdict(_revocation_passed(revocation)),
        ]
    )
    isolation = _isolation_cell(revocation, clients)
    rows.append(
        [
            f"{n:,}: after it, the other token's sessions; a new request with the revoked one",
            isolation,
            "n/a",
            "all alive; 401",
            verdict(_isolation_passed(revocation, clients)),
        ]
    )
    listers = ours.get("revocation_listers")
    rows.append(
        [
            f"{n:,}: revoked (admin API) → all {listers['streams'] if listers else clients} "
            "streams of the token closed, ms after revoked_at (p50)",
            _revocation_cell(listers),
            "n/a",
            f"< {REVOKE_TARGET_MS:g} ms",
            verdict(_revocation_passed(listers)),
        ]
    )
    rows.append(
        [
            f"{n:,}: sockets the server still holds once the client closed all its connections",
            _sockets(ours),
            _sockets(ref),
            "— (reported)",
            "—",
        ]
    )
    postgres: dict[str, Any] | None = level.get("agentws_postgres")
    if postgres:
        rows += _postgres_rows(n, postgres, clients, rate)
    return rows


def _postgres_rows(n: int, ours: dict[str, Any], clients: int, rate: float) -> list[list[str]]:
    """The same server on PostgreSQL (revocations announced with NOTIFY)."""
    revocation = ours.get("revocation")
    listers = ours.get("revocation_listers")
    streams = revocation["streams"] if revocation else n
    return [
        [f"{n:,}, PostgreSQL: sessions opened", _opened(ours), "n/a", "all open",
         verdict(_all_opened(ours))],
        [f"{n:,}, PostgreSQL: RSS per open session, both transports (KB)",
         fmt(ours["per_session_kb"]), "n/a", "— (reported)", "—"],
        [f"{n:,}, PostgreSQL: tools/list p50 / p99, {clients} clients at {rate:g}/s, "
         f"{n:,} sessions open (no session open) (ms)",
         f"{_p50_p99(ours['list_loaded'])} ({_p50_p99(ours['list_idle'])})", "n/a",
         "— (reported)", "—"],
        [f"{n:,}, PostgreSQL: revoked (CLI) → all {streams:,} streams of the token closed, "
         "ms after revoked_at (p50)", _revocation_cell(revocation), "n/a",
         f"< {REVOKE_TARGET_MS:g} ms", verdict(_revocation_passed(revocation))],
        [f"{n:,}, PostgreSQL: after it, the other token's sessions; the revoked token",
         _isolation_cell(revocation, clients), "n/a", "all alive; 401",
         verdict(_isolation_passed(revocation, clients))],
        [f"{n:,}, PostgreSQL: revoked (admin API) → all "
         f"{listers['streams'] if listers else clients} streams of the token closed, "
         "ms after revoked_at (p50)", _revocation_cell(listers), "n/a",
         f"< {REVOKE_TARGET_MS:g} ms", verdict(_revocation_passed(listers))],
    ]  # fmt: skip


def _isolation_cell(revocation: dict[str, Any] | None, clients: int) -> str:
    if not revocation or "error" in revocation:
        return "—"
    return (
        f"{revocation['listers_alive']}/{clients} alive, {revocation['listers_answering']}"
        f"/{clients} answer; revoked token: HTTP {revocation.get('revoked_token_status')}"
    )


def _level_notes(level: dict[str, Any]) -> list[str]:
    n = level["sessions"]
    lines = []
    for name in ("agentws", "agentws_postgres", "reference"):
        figures = level.get(name)
        if not figures:
            continue
        s, legacy = figures["bulk_streamable"], figures["bulk_sse"]
        text = (
            f"- {n:,}, {name}: VmRSS {figures['rss_before_kb'] / 1024:,.1f} MB before, "
            f"{s['rss_after_kb'] / 1024:,.1f} MB with the Streamable HTTP sessions open, "
            f"{legacy['rss_after_kb'] / 1024:,.1f} MB with all open "
            f"({fmt(figures['per_session_kb'])} KB a session overall)"
        )
        if "rss_after_revocations_kb" in figures:
            text += (
                f", {figures['rss_after_revocations_kb'] / 1024:,.1f} MB once the revocations "
                "had closed them all"
            )
        text += (
            f"; open time (first request to stream open) p50 / p99: Streamable HTTP "
            f"{_p50_p99(s, 'open_')} ms, legacy {_p50_p99(legacy, 'open_')} ms."
        )
        loaded = figures["list_loaded"]
        busy = max(figures["list_idle"]["other_cpu_cores"], loaded["other_cpu_cores"])
        text += (
            f" tools/list with the sessions open: {loaded['calls']} calls measured, max "
            f"{fmt(loaded['max_ms'])} ms, {loaded['errors']} failed; other processes took up "
            f"to {busy:.2f} cores during the tools/list windows"
            + (" (the machine was not quiet: expect noise)." if busy > QUIET_CORES else ".")
        )
        lines.append(text)
        for key in ("bulk_streamable", "bulk_sse", "listers"):
            part = figures.get(key, {})
            if part.get("failed") or part.get("skipped"):
                lines.append(
                    f"- {n:,}, {name}, {part['name']}: {part['failed']} failed, "
                    f"{part['skipped']} skipped (over --open-timeout); "
                    + "; ".join(part.get("errors", [])[:3])
                )
        for key in ("list_idle", "list_loaded"):
            for error in figures.get(key, {}).get("error_samples", [])[:3]:
                lines.append(f"- {n:,}, {name}, {key}: {error}")
        for key in ("revocation", "revocation_listers"):
            revocation = figures.get(key)
            if revocation and revocation.get("broken"):
                lines.append(
                    f"- {n:,}, {name}, {key}: {revocation['broken']} streams broke instead of "
                    f"ending cleanly: {'; '.join(revocation['end_errors'][:2])}"
                )
        log = figures.get("server_log", {})
        if log.get("flagged"):
            lines.append(
                f"- {n:,}, {name}: {log['flagged']} warning/error lines in the server log, e.g. "
                + " | ".join(line[:200] for line in log["samples"][:2])
            )
        # uvicorn re-raises SIGTERM once it has shut down gracefully: -15 is its clean exit.
        clean = (0, None, -15) if name == "reference" else (0, None)
        if figures.get("server_exit_status") not in clean:
            lines.append(f"- {n:,}, {name}: exited with status {figures['server_exit_status']}.")
    floor = level.get("floor")
    if floor:
        on, off = floor
        lines.append(
            f"- {n:,}, the stack's floor (`benchlib/stream_floor.py`): {on['streams']:,} bare SSE "
            "streams of a QuartTrio route on Hypercorn's trio worker, no store, token or session, "
            "ended in the same turn of the loop by one `trio.Event`: the last ended "
            f"{fmt(on['max_ms'], 0)} ms later (p50 {fmt(on['p50_ms'], 0)}), "
            f"{fmt(off['max_ms'], 0)} ms (p50 {fmt(off['p50_ms'], 0)}) with the cycle collector "
            f"off ({on['ended']:,} and {off['ended']:,} of {on['streams']:,} ended). A revocation "
            "through agentws adds its own work to this."
        )
    return lines


def render(results: dict[str, Any]) -> str:
    config = results["config"]
    clients, rate = config["list_clients"], config["list_rate"]
    rows: list[list[str]] = []
    for level in results["levels"]:
        rows += _level_rows(level, clients, rate)
    packages = results["machine"]["packages"]
    revocation = next(
        (lv["agentws"]["revocation"] for lv in results["levels"] if "revocation" in lv["agentws"]),
        {},
    )
    lines = [
        *report_head("sessions", results["date"], rows, results["machine"]),
        f"- agentws {packages['agentws']} (`agentws serve`: Hypercorn {packages['hypercorn']}, "
        f"trio {packages['trio']}, SQLite store, offline model), a fresh process per number "
        "of sessions, AGENTWS_MCP_MAX_SESSIONS_PER_TOKEN above it; its database seeded as "
        f"`scripts/bench mcp` seeds it ({config['documents']} documents in the group's "
        "library, so tools/list lists its 2 context tools).",
        f"- Reference: mcp {packages['mcp']} `MCPServer` (the `scripts/bench mcp` reference) on "
        f"uvicorn {packages['uvicorn']}: `streamable_http_app(json_response=True)` with the "
        "SDK's session manager, and `sse_app()` for legacy SSE; no auth, no per-token "
        "accounting, so no revocation (1 tool listed).",
        f"- Sessions: at most {config['open_concurrency']} handshakes in flight; a Streamable "
        "HTTP session is initialize + initialized + its GET stream, a legacy one the GET "
        "stream + initialize (answered on the stream) + initialized; every stream is held open "
        "(keep-alive comments only). Initialize latency: from sending initialize to its answer. "
        "RSS per session: growth of the server's VmRSS (read after "
        f"{config['settle_s']:g} s of quiet) over the sessions of that transport still open, "
        "after 10 sessions of each transport were opened and closed and the tools/list "
        "sessions opened. Servers in ABBA order over the levels.",
        f"- tools/list: {clients} Streamable HTTP sessions on a token of their own, each "
        f"calling at random (Poisson) times, {rate:g} a second on average, latency counted "
        f"from when a call was due; {config['list_warmup_s']:g} s warm-up, "
        f"{config['list_seconds']:g} s measured; once before the sessions open, once with "
        "them open.",
        "- Revocation: `agentws token revoke` (another process; agentws notices through the "
        "store, as for any instance) of the token holding every bulk session, then "
        "`DELETE /api/v1/…/tokens/<id>` (admin API) of the tools/list sessions' token; the "
        "time from the token's `revoked_at` (set at commit) to the end of each of its streams, "
        "as the client saw it (same machine's clock)"
        + (
            f"; the CLI took {revocation['cli_s']:.2f} s to run"
            if revocation.get("cli_s") is not None
            else ""
        )
        + ". On PostgreSQL (rows so marked): the same, in a fresh database of each run. "
        "RSS per session has no target here (`scripts/bench mcp` holds idle legacy SSE "
        "sessions to < 100 KB); its ratio to the reference is shown.",
    ]
    for level in results["levels"]:
        lines += _level_notes(level)
    return "\n".join(lines)


def _failed(results: dict[str, Any]) -> bool:
    """A session that did not open, or a tools/list call that failed, on either server."""
    for level in results["levels"]:
        for name in ("agentws", "agentws_postgres", "reference"):
            figures = level.get(name)
            if not figures:
                continue
            for key in ("bulk_streamable", "bulk_sse", "listers"):
                if figures[key]["failed"] or figures[key]["opened"] != figures[key]["count"]:
                    return True
            if figures["list_idle"]["errors"] or figures["list_loaded"]["errors"]:
                return True
    return False


def _passed(results: dict[str, Any]) -> bool:
    clients = results["config"]["list_clients"]
    return all(
        _revocation_passed(ours.get("revocation"))
        and _revocation_passed(ours.get("revocation_listers"))
        and _isolation_passed(ours.get("revocation"), clients)
        and _all_opened(ours)
        for level in results["levels"]
        for ours in (level.get("agentws"), level.get("agentws_postgres"))
        if ours
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = cli.run_and_report("sessions", args, run, render)
    if isinstance(results, int):
        return results
    if _failed(results):
        return 1
    if args.check and not _passed(results):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
