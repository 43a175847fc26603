"""What every webhook scenario of ``scripts/chaos`` shares: its settings and its steps.

The agentws settings the scenarios serve with (short deadlines, so leases
expire and retries come within a scenario), the :class:`Context` a
scenario works in, and the steps they take: wait until every acknowledged
event is done (:func:`wait_all_done`), hold the store against the
sender's record (:func:`settle_accounts`), read the servers' logs for
crashes (:func:`scan_logs`, :func:`report_crash`) and stop a server
within its grace period (:func:`stop_cleanly`).
"""

import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import trio
from benchlib.procs import Child, Processes

from chaoslib.common import (
    CHANNEL,
    WORKSPACE,
    Outcome,
    Server,
    Site,
    cli,
    log_lines,
    log_record,
    poll_until,
    stop_process,
)
from chaoslib.ledger import Database, Snapshot, account, cross_check
from chaoslib.sender import Sender

__all__ = [
    "EXIT_MARGIN_S",
    "FINISH_S",
    "SERVER_ENV",
    "Context",
    "r",
    "report_crash",
    "scan_logs",
    "settle_accounts",
    "stop_cleanly",
    "wait_all_done",
]

# agentws settings of the webhook scenarios: short deadlines, so that leases
# (run timeout + 5 s) expire and retries come within the scenario.
RUN_TIMEOUT_S = 4
SHUTDOWN_GRACE_S = 3
WORKERS = 16
SERVER_ENV = {
    "AGENTWS_RUN_TIMEOUT_S": str(RUN_TIMEOUT_S),
    "AGENTWS_WORKER_CONCURRENCY": str(WORKERS),
    "AGENTWS_SHUTDOWN_GRACE_S": str(SHUTDOWN_GRACE_S),
    "AGENTWS_RETRY_BASE_S": "0.5",
}
# After the last delivery is acknowledged, every event must be done within this.
FINISH_S = 60.0
# A SIGTERMed server must be gone within its grace period plus this.
EXIT_MARGIN_S = 5.0
# Events a page of `agentws event list` holds at most.
_EVENT_PAGE = 200


@attrs.define
class Context:
    """Where a scenario works and who owns its processes."""

    directory: Path
    procs: Processes
    keep: bool = False


def r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


async def wait_all_done(
    db: Database, sender: Sender, servers: list[Child], timeout_s: float = FINISH_S
) -> tuple[float | None, Snapshot]:
    """Poll until every acknowledged event is done: (when, the last snapshot)."""
    ids = {d.event_id for d in sender.deliveries if d.event_id}
    last: list[Snapshot] = []

    async def all_done() -> bool:
        snap = await Snapshot.read(db)
        last[:] = [snap]
        return snap.done({str(i) for i in ids})

    at = await poll_until(all_done, timeout_s, interval_s=0.1, alive=servers, what="all done")
    return at, last[0]


async def settle_accounts(
    out: Outcome, sender: Sender, snap: Snapshot, site: Site
) -> dict[str, Any]:
    """Hold the store against the sender's record; the CLI gives a second opinion."""
    accounts = account(sender.deliveries, snap)
    out.lost = accounts["lost"]
    out.duplicated = accounts["duplicated"]
    out.figures["accounts"] = accounts
    out.figures["sender"] = sender.summary()
    limit = str(len(snap.events) + 10)

    def through_cli() -> dict[str, Any]:
        events = _listed_events(site)
        messages = cli(site, "channel", "tail", WORKSPACE, CHANNEL, "--limit", limit)
        return cross_check(sender.deliveries, events, messages)

    checked = await trio.to_thread.run_sync(through_cli)
    out.figures["cli_check"] = checked
    out.check(
        checked["disagreements"] == 0 or accounts["lost"] > 0,
        f"`agentws event list` / `channel tail` disagree with the database: "
        f"{checked['disagreement_samples']}",
    )
    return accounts


def _listed_events(site: Site) -> list[dict[str, Any]]:
    """Every event of the workspace as ``agentws event list`` shows them, page after page."""
    events: list[dict[str, Any]] = []
    cursor: list[str] = []
    while True:
        page = cli(site, "event", "list", WORKSPACE, "--limit", str(_EVENT_PAGE), *cursor)
        events += page["items"]
        if not page.get("next_cursor"):
            return events
        cursor = ["--cursor", str(page["next_cursor"])]


def scan_logs(out: Outcome, children: list[Child]) -> None:
    """Tracebacks and errors in the servers' logs, grouped, go to the notes and the JSON."""
    for child in children:
        groups: Counter[str] = Counter()
        for line in log_lines(child, "Traceback"):
            record = log_record(line)
            if "level" not in record:
                continue  # a line of a crash's dump, reported with the crash
            groups[
                f"{record.get('level', '?')} {record.get('logger', '?')}: "
                f"{str(record.get('message', ''))[:90]}"
            ] += 1
        for what, n in groups.most_common():
            out.notes.append(f"{child.name}: {n} x with a traceback: {what}")
        errors: Counter[str] = Counter()
        for line in log_lines(child, "ERROR"):
            record = log_record(line)
            if record.get("level", "ERROR") == "ERROR":
                message = str(record.get("message", ""))
                errors[re.sub(r"(evt|msg)_[a-z0-9]+", r"\1_…", message)[:140]] += 1
        if errors:
            out.figures.setdefault("log_errors", {})[child.name] = dict(errors.most_common(8))


def report_crash(out: Outcome, child: Child, when: str) -> None:
    """A server that died: a failed check, with the exceptions its log ends with."""
    status = child.process.returncode
    errors = []
    for line in child.log_tail(400).splitlines():
        match = re.match(r"^[\s|+]*((?:[a-zA-Z_][\w.]*\.)?\w*(?:Error|Exception)): (.*)$", line)
        if match and "ExceptionGroup" not in match.group(1):
            errors.append(f"{match.group(1)}: {match.group(2)[:160]}")
    unique = list(dict.fromkeys(errors))
    out.problems.append(
        f"{child.name} crashed (exit status {status}) {when}"
        + (f"; its log ends with: {' / '.join(unique[:4])}" if unique else "")
    )
    out.figures.setdefault("crashes", []).append(
        {"server": child.name, "status": status, "when": when, "exceptions": unique[:8]}
    )


async def stop_cleanly(out: Outcome, procs: Processes, server: Server) -> None:
    """SIGTERM: the server must exit 0 within its grace period (plus a margin)."""
    status, took = await stop_process(
        procs, server.child, signal.SIGTERM, SHUTDOWN_GRACE_S + EXIT_MARGIN_S
    )
    out.figures[f"{server.child.name}_sigterm_exit"] = {"status": status, "seconds": r(took)}
    out.check(
        status == 0,
        f"{server.child.name} exited with {status} after SIGTERM (want 0 within "
        f"{SHUTDOWN_GRACE_S + EXIT_MARGIN_S:g} s)",
    )


# --- 1. kill -9 mid-run -------------------------------------------------------------------
