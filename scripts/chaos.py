"""``scripts/chaos``: failure scenarios against real ``agentws serve`` processes on loopback.

Each scenario works in a temp directory of its own (its own SQLite database,
or its own private PostgreSQL cluster), sets its site up through the
``agentws`` CLI, drives it over 127.0.0.1 with a webhook sender that retries
(connection errors, 429 and 5xx, honouring Retry-After) until it gets 202, and
afterwards holds the store against what the sender was told:

kill9        deliveries flowing (25/s), runs in flight (a local Messages API
             answering after 0.5 s); SIGKILL; restart on the same database and
             port. Time from the restart to every acknowledged event done.
restart      SIGTERM while deliveries go on and runs are in flight (runs of 1.5 s,
             shutdown grace 1 s), then start again. The door's downtime; runs cut
             by the grace period must go back to the queue.
db-restart   a private PostgreSQL (initdb + pg_ctl in a temp dir, as the postgres
             OS user; never a shared cluster), stopped for 5 s (pg_ctl stop -m fast)
             while deliveries go on (the door must answer 503 + Retry-After), then
             started again. Time to /readyz 200 and to every acknowledged event
             done. Skipped when the PostgreSQL binaries are missing.
slow-client  a legacy SSE client that stops reading while the server has megabytes
             for it (AGENTWS_SSE_STALL_S=2): cut off (log line, session count,
             socket), the server's RSS before/after, another client served meanwhile.
slow-model   the model answers slower than AGENTWS_RUN_TIMEOUT_S for the first two
             attempts of each event, then at once: every event retried, done once.

"Lost" counts acknowledged deliveries (202, or 200 for a redelivery of the
same Idempotency-Key) that did not end as one done event with exactly one
chat message, plus deliveries the sender could not get acknowledged. "Posted
twice" counts events with more than one message, and events stored that no
acknowledgement accounts for. The whole run takes about 1.5 minutes.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import trio
from benchlib.cli import now_utc
from benchlib.machine import describe_machine
from benchlib.procs import BenchError, Processes
from benchlib.report import machine_line, markdown_table, write_json
from chaoslib.common import Outcome, ScenarioError, ServerDied, Skip, now, say
from chaoslib.db_restart import db_restart
from chaoslib.scenarios import graceful_restart, kill9, slow_model
from chaoslib.slow_client import slow_client
from chaoslib.steps import Context

REPO = Path(__file__).resolve().parent.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "chaos.json"

Scenario = Callable[[Context, Outcome], Awaitable[None]]
SCENARIOS: dict[str, tuple[str, Scenario]] = {
    "kill9": ("kill -9 mid-run, restart", kill9),
    "restart": ("graceful restart (SIGTERM, start)", graceful_restart),
    "db-restart": ("PostgreSQL stopped 5 s, started", db_restart),
    "slow-client": ("SSE client stops reading", slow_client),
    "slow-model": ("model slower than the run deadline", slow_model),
}
# A scenario that runs longer than this is stopped and counts as not run.
SCENARIO_TIMEOUT_S = 240.0
_PACKAGES = ["agentws", "trio", "hypercorn", "httpx2", "asyncpg"]

# Process owners of the run: whatever happens inside trio, their children are stopped.
_OWNERS: list[Processes] = []


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/chaos",
        description=__doc__.replace("``", "`"),
        epilog=(
            "exit status:\n"
            "  0    every scenario ran and lost nothing\n"
            "  2    a scenario lost or duplicated something, or one of its checks failed\n"
            "  1    a scenario could not run (db-restart skipped for want of PostgreSQL\n"
            "       counts only when it was named on the command line)\n"
            "  130  interrupted (every process it started is stopped first)"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "scenarios",
        nargs="*",
        metavar="SCENARIO",
        help=f"scenarios to run, in this order (default: all): {', '.join(SCENARIOS)}",
    )
    parser.add_argument(
        "--json-out",
        type=Path,
        default=DEFAULT_JSON_OUT,
        help=f"where to write the results as JSON (default: {DEFAULT_JSON_OUT.relative_to(REPO)})",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the temp directories (databases, server logs, the PostgreSQL cluster)",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)} (scenarios: {', '.join(SCENARIOS)})")
    args.explicit = set(args.scenarios)
    args.scenarios = args.scenarios or list(SCENARIOS)
    return args


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def _keep_logs(out: Outcome, directory: Path, target: Path) -> None:
    """Copy the logs of a scenario that failed where they outlive the temp directory."""
    logs = sorted(directory.glob("*.log"))
    if not logs:
        return
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for log in logs:
        shutil.copyfile(log, target / log.name)
    out.notes.append(f"logs kept in {target}")


async def run_scenario(name: str, args: argparse.Namespace, work: Path) -> Outcome:
    title, scenario = SCENARIOS[name]
    out = Outcome(name=name, title=title)
    directory = work / name
    directory.mkdir(parents=True)
    kept_logs = args.json_out.parent / "chaos-logs" / name
    shutil.rmtree(kept_logs, ignore_errors=True)  # only this run's failures are kept
    say(f"--- {name}: {title}")
    started = now()
    with Processes(directory) as procs:
        _OWNERS.append(procs)
        context = Context(directory, procs, keep=args.keep)
        try:
            with trio.fail_after(SCENARIO_TIMEOUT_S):
                await scenario(context, out)
        except (Exception, BaseExceptionGroup) as group:
            exc = _leaf(group)
            if isinstance(exc, Skip):
                out.status, out.error = "skipped", str(exc)
            elif isinstance(exc, ServerDied):
                out.problems.append(f"agentws died mid-scenario: {str(exc)[:3000]}")
            elif isinstance(exc, ScenarioError | BenchError):
                out.status, out.error = "error", str(exc)
            elif isinstance(exc, trio.TooSlowError):
                out.status, out.error = "error", f"did not finish in {SCENARIO_TIMEOUT_S:g} s"
            elif isinstance(exc, Exception):
                out.status = "error"
                out.error = "".join(traceback.format_exception(exc))[-3000:]
            else:
                raise
    out.seconds = round(now() - started, 1)
    out.settle()
    if out.status in ("fail", "error"):
        _keep_logs(out, directory, kept_logs)
    say(f"--- {name}: {out.status} in {out.seconds:g} s" + (f": {out.error}" if out.error else ""))
    for problem in out.problems:
        say(f"    problem: {problem}")
    return out


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "mode": "chaos",
        "date": now_utc(),
        "machine": describe_machine(_PACKAGES),
        "scenarios": [],
    }
    work = Path(tempfile.mkdtemp(prefix="agentws-chaos-"))
    started = now()
    try:
        for name in args.scenarios:
            outcome = await run_scenario(name, args, work)
            results["scenarios"].append(outcome.as_json())
    finally:
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    results["total_seconds"] = round(now() - started, 1)
    return results


def _num(value: Any) -> str:
    return "—" if value is None else str(value)


def _cli_words(check: dict[str, Any] | None) -> str:
    if not check:
        return ""
    if check["disagreements"]:
        return f"; `agentws event list`/`channel tail` disagree on {check['disagreements']}"
    return "; `agentws event list` and `channel tail` agree"


def _exit(value: dict[str, Any] | None) -> str:
    if not value:
        return "exit —"
    if value.get("status") is None:
        return f"still running after {value.get('seconds')} s"
    return f"exit {value.get('status')} after {value.get('seconds')} s"


def _details(scenario: dict[str, Any]) -> list[str]:
    """The lines under the table that say what each scenario saw."""
    f = scenario["figures"]
    name = scenario["name"]
    lines: list[str] = []
    accounts = f.get("accounts")
    if accounts:
        sender = f.get("sender", {})
        lines.append(
            f"{accounts['deliveries']} deliveries, {accounts['acknowledged']} acknowledged, "
            f"{accounts['events_stored']} events stored; statuses {accounts['event_statuses']}; "
            f"attempts per event {accounts['attempts_per_event']}; sender answers "
            f"{sender.get('answers')}, {sender.get('retried_deliveries')} deliveries retried"
            + _cli_words(f.get("cli_check"))
        )
    if name == "kill9" and "at_kill" in f:
        k = f["at_kill"]
        lines.append(
            f"at the kill: {k['events_by_status']}, {k['running_leased_by_killed']} runs leased "
            f"by the killed instance ({k['running_already_posted']} already posted); restart "
            f"{f.get('kill_to_restart_s')} s after the kill, ready in "
            f"{f.get('restart_to_ready_s')} s, all done {f.get('restart_to_all_done_s')} s after "
            f"the restart (lease {f.get('lease_s')} s); longest gap between acknowledgements "
            f"{f.get('longest_gap_between_acks_s')} s; events run again: "
            f"{f.get('events_run_again')}"
        )
    if name == "restart" and "at_exit" in f:
        lines.append(
            f"SIGTERM with {f['at_exit']['running_at_sigterm']} runs in flight; "
            f"{_exit(f.get('restart-a_sigterm_exit'))}; left running "
            f"{f['at_exit']['left_running']}; "
            f"runs interrupted and given back {f.get('interrupted_attempts')}; new instance ready "
            f"{f.get('exit_to_ready_s')} s after the exit; door closed {f.get('door_closed_s')} s "
            f"(from {f.get('door_closed_from_sigterm_s')} s after SIGTERM); first acknowledgement "
            f"after the restart {f.get('sigterm_to_first_ack_after_restart_s')} s after SIGTERM"
        )
    if name == "db-restart" and "door_during_outage" in f:
        lines.append(
            f"pg_ctl stop took {f.get('pg_stop_s')} s, start {f.get('pg_start_s')} s; database "
            f"down {f.get('database_down_s')} s; /readyz 503 {f.get('stop_to_readyz_503_s')} s "
            f"after the stop (answers while down: {f.get('readyz_while_down')}), 200 again "
            f"{f.get('db_up_to_readyz_200_s')} s after the start; first 202 "
            f"{f.get('db_up_to_first_ack_s')} s after the start; all done "
            f"{f.get('db_up_to_all_done_s')} s after the start; door during the outage "
            f"{f['door_during_outage']}; longest gap between acknowledgements "
            f"{f.get('longest_gap_between_acks_s')} s"
        )
    if name == "slow-client" and "rss_kib" in f:
        rss = f["rss_kib"]
        other = f.get("other_client", {})
        lines.append(
            f"the stalled client asked for {f.get('reads_posted')} reads "
            f"({f.get('answer_bytes_each')} bytes per answer) and read none; cut off "
            f"{f.get('cut_off_s')} s after the burst (stall warning logged at "
            f"{f.get('cut_off_logged_s')} s, session closed logged at "
            f"{f.get('session_closed_logged_s')} s), session count fell at "
            f"{f.get('session_count_fell_s')} s ({f.get('sse_sessions')}), server socket "
            f"released at {f.get('server_socket_released_s')} s (most unsent bytes "
            f"{f.get('server_unsent_bytes_max')}); RSS KiB before {rss['before']}, peak "
            f"{rss['peak']}, after {rss['after']}; other client: {other.get('requests')} "
            f"requests, {other.get('requests_after_cut_off')} after the cut-off, slowest "
            f"{other.get('max_s')} s, failures {len(other.get('failures', []))}"
        )
    if name == "slow-model" and "model_calls_per_event" in f:
        lines.append(
            f"model calls per event {f['model_calls_per_event']}; attempt outcomes "
            f"{f.get('retry_outcomes')}; all done {f.get('first_post_to_all_done_s')} s after "
            "the first POST"
        )
    for key, value in f.items():
        if key.endswith("_sigterm_exit") and key != "restart-a_sigterm_exit":
            lines.append(f"{key.removesuffix('_sigterm_exit')}: SIGTERM, {_exit(value)}")
    return lines


def _recovery_cell(s: dict[str, Any]) -> str:
    if s["status"] in ("error", "skipped"):
        return (s["error"] or "").splitlines()[0][:90] if s["error"] else ""
    if s["recovery"] == "—" and s["problems"]:
        return s["problems"][0][:90]
    return str(s["recovery"])


def render(results: dict[str, Any]) -> str:
    rows = []
    for s in results["scenarios"]:
        result = {"pass": "PASS", "fail": "FAIL", "error": "NOT RUN", "skipped": "SKIPPED"}
        rows.append(
            [
                s["name"],
                _num(s["lost"]) if s["status"] in ("pass", "fail") else "—",
                _num(s["duplicated"]) if s["status"] in ("pass", "fail") else "—",
                _recovery_cell(s),
                f"{s['seconds']:g} s",
                result[s["status"]],
            ]
        )
    lines = [
        f"## scripts/chaos — {results['date']}",
        "",
        markdown_table(["scenario", "lost", "posted twice", "recovery", "took", "result"], rows),
        "",
        machine_line(results["machine"]),
        f"- Total {results['total_seconds']:g} s. Each scenario: its own temp directory and "
        "database, `agentws serve` on a loopback port, deliveries with an Idempotency-Key "
        "from a sender that retries until acknowledged; checked in the store afterwards.",
    ]
    for s in results["scenarios"]:
        details = _details(s)
        head = f"- **{s['name']}** ({s['title']}):"
        if s["status"] in ("error", "skipped"):
            lines.append(f"{head} {s['status']}: {(s['error'] or '').strip()[:1500]}")
            continue
        lines.append(f"{head} " + "; ".join(details) if details else head)
        for problem in s["problems"]:
            lines.append(f"  - FAILED: {problem}")
        for note in s["notes"]:
            lines.append(f"  - note: {note}")
        for kind, keys in (s["figures"].get("accounts") or {}).get("lost_detail", {}).items():
            lines.append(f"  - lost ({kind}): {', '.join(keys)}")
        for kind, ids in (s["figures"].get("accounts") or {}).get("duplicated_detail", {}).items():
            lines.append(f"  - duplicated ({kind}): {', '.join(ids)}")
    return "\n".join(lines)


def exit_status(results: dict[str, Any], explicit: set[str]) -> int:
    statuses = [(s["name"], s["status"]) for s in results["scenarios"]]
    if any(status == "fail" for _, status in statuses):
        return 2
    if any(
        status == "error" or (status == "skipped" and name in explicit) for name, status in statuses
    ):
        return 1
    return 0


async def main_async(args: argparse.Namespace) -> dict[str, Any] | None:
    """Every scenario; None when SIGINT, SIGTERM or SIGHUP stopped the run.

    SIGINT is watched explicitly too: a shell starts background jobs with it ignored.
    """
    results: dict[str, Any] | None = None
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                async for signum in signals:
                    say(f"{signal.Signals(signum).name}: stopping")
                    interrupted.set()
                    nursery.cancel_scope.cancel()

            interrupted = trio.Event()
            nursery.start_soon(watch)
            results = await run_all(args)
            nursery.cancel_scope.cancel()
    return None if interrupted.is_set() else results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, (title, _) in SCENARIOS.items():
            print(f"{name:<12} {title}")
        return 0
    try:
        results = trio.run(main_async, args)
    except KeyboardInterrupt:
        results = None
    finally:
        for owner in _OWNERS:
            owner.close()
    if results is None:
        print("scripts/chaos: interrupted; every process it started is stopped", file=sys.stderr)
        return 130
    status = exit_status(results, args.explicit)
    results["exit_status"] = status
    write_json(args.json_out, results)
    print(render(results))
    print(f"\n(JSON: {args.json_out})")
    return status


if __name__ == "__main__":
    sys.exit(main())
