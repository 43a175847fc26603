"""The webhook scenarios: kill -9, graceful restart, database restart, slow model.

Each one sets up its own site (through the CLI) in a directory of its own,
runs a sender that retries until acknowledged (:mod:`chaoslib.sender`)
against real ``agentws serve`` processes, does its damage while deliveries
go on, then waits (with a deadline) until every acknowledged event is done
and holds the store against the sender's record (:func:`chaoslib.ledger.account`).
"""

from __future__ import annotations

import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import httpx2
import trio
from benchlib.procs import Child, Processes

from chaoslib.common import (
    CHANNEL,
    WORKSPACE,
    Outcome,
    ScenarioError,
    Server,
    Site,
    Skip,
    cli,
    free_port,
    log_lines,
    log_record,
    model_stats,
    now,
    poll_until,
    say,
    set_up_site,
    start_agentws,
    start_fake_model,
    stop_process,
)
from chaoslib.ledger import Database, Snapshot, account, cross_check, open_database
from chaoslib.pg import missing_postgres, private_postgres
from chaoslib.sender import Sender, longest_gap

__all__ = ["Context", "db_restart", "graceful_restart", "kill9", "slow_model"]

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


@attrs.define
class Context:
    """Where a scenario works and who owns its processes."""

    directory: Path
    procs: Processes
    keep: bool = False


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


async def _wait_all_done(
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


async def _settle_accounts(
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
        events = cli(site, "event", "list", WORKSPACE, "--limit", limit)
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


def _scan_logs(out: Outcome, children: list[Child]) -> None:
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


def _report_crash(out: Outcome, child: Child, when: str) -> None:
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


async def _stop_cleanly(out: Outcome, procs: Processes, server: Server) -> None:
    """SIGTERM: the server must exit 0 within its grace period (plus a margin)."""
    status, took = await stop_process(
        procs, server.child, signal.SIGTERM, SHUTDOWN_GRACE_S + EXIT_MARGIN_S
    )
    out.figures[f"{server.child.name}_sigterm_exit"] = {"status": status, "seconds": _r(took)}
    out.check(
        status == 0,
        f"{server.child.name} exited with {status} after SIGTERM (want 0 within "
        f"{SHUTDOWN_GRACE_S + EXIT_MARGIN_S:g} s)",
    )


# --- 1. kill -9 mid-run -------------------------------------------------------------------


async def kill9(ctx: Context, out: Outcome) -> None:
    """SIGKILL the instance while runs are in flight; restart it on the same database."""
    rate, count, model_delay = 25.0, 200, 0.5
    site = await trio.to_thread.run_sync(
        lambda: set_up_site(ctx.directory, f"sqlite:///{ctx.directory / 'agentws.db'}")
    )
    db = open_database(site.database_url)
    _, model_env = await start_fake_model(ctx.procs, "model", "--delay", str(model_delay))
    port = free_port()
    first = await start_agentws(ctx.procs, site, "kill9-a", port, **SERVER_ENV, **model_env)
    sender = Sender(first.base_url + site.hook_path, "kill9")
    out.figures["config"] = {
        "store": "sqlite",
        "rate_per_s": rate,
        "deliveries": count,
        "model": f"fake Messages API answering after {model_delay} s",
        **SERVER_ENV,
    }
    say(f"kill9: {count} deliveries at {rate:g}/s; SIGKILL once runs are in flight")
    async with trio.open_nursery() as nursery:
        sending_from = now()
        nursery.start_soon(sender.paced, rate, count)

        async def in_flight() -> bool:
            snap = await Snapshot.read(db)
            return now() - sending_from > 2.0 and len(snap.running()) >= 4 and bool(snap.messages)

        if await poll_until(in_flight, 30, alive=[first.child], what="runs in flight") is None:
            raise ScenarioError("no runs were in flight within 30 s: cannot kill mid-run")
        killed_at = now()
        status, _ = await stop_process(ctx.procs, first.child, signal.SIGKILL, 5)
        if status != -signal.SIGKILL:
            raise ScenarioError(f"kill9-a did not die of SIGKILL (status {status})")
        at_kill = await Snapshot.read(db)
        running = at_kill.running()
        posted_not_recorded = [i for i in running if at_kill.messages.get(i)]
        out.figures["at_kill"] = {
            "events_by_status": at_kill.by_status(),
            "running_leased_by_killed": sum(1 for o in running.values() if o == "kill9-a"),
            "running_already_posted": len(posted_not_recorded),
            "acknowledged_so_far": len(sender.acks),
        }
        say(f"kill9: killed with {out.figures['at_kill']['events_by_status']}; restarting")
        second = await start_agentws(ctx.procs, site, "kill9-b", port, **SERVER_ENV, **model_env)
    # Every delivery is acknowledged (or given up) here.
    last_ack = max(sender.acks, default=now())
    done_at, snap = await _wait_all_done(db, sender, [second.child])
    accounts = await _settle_accounts(out, sender, snap, site)
    gap, _ = longest_gap(sender.acks, killed_at - 1, last_ack)
    restart_to_done = None if done_at is None else done_at - second.started_at
    out.figures.update(
        kill_to_restart_s=_r(second.started_at - killed_at),
        restart_to_ready_s=_r((second.ready_at or 0) - second.started_at),
        restart_to_all_done_s=_r(restart_to_done),
        kill_to_all_done_s=_r(None if done_at is None else done_at - killed_at),
        longest_gap_between_acks_s=_r(gap),
        lease_s=RUN_TIMEOUT_S + 5,
    )
    out.check(done_at is not None, f"events not all done {FINISH_S:g} s after the last ack")
    leased = out.figures["at_kill"]["running_leased_by_killed"]
    out.check(leased > 0, "the kill left no leased run behind (not mid-run)")
    rerun = sum(v for k, v in accounts["attempts_per_event"].items() if int(k) >= 2)
    out.figures["events_run_again"] = rerun
    _dead_lease_throughput(out, snap, set(running), "kill9-b", model_delay)
    out.recovery = (
        f"restart→ready {second.ready_at - second.started_at:.1f} s; restart→all done "  # type: ignore[operator]
        f"{restart_to_done:.1f} s ({leased} leases of {RUN_TIMEOUT_S + 5} s expired first)"
        if restart_to_done is not None
        else "never finished"
    )
    await _stop_cleanly(out, ctx.procs, second)
    _scan_logs(out, [first.child, second.child])


def _dead_lease_throughput(
    out: Outcome, snap: Snapshot, leased: set[str], instance: str, model_delay: float
) -> None:
    """How fast ``instance`` ran events while the dead leases held, and after they expired."""
    finished = sorted(
        a.finished_at
        for attempts in snap.attempts.values()
        for a in attempts
        if a.instance_id == instance and a.outcome == "done" and a.finished_at
    )
    reruns = [
        a.finished_at
        for i in leased
        for a in snap.attempts.get(i, [])
        if a.outcome == "done" and a.finished_at
    ]
    if len(finished) < 2 or not reruns:
        return
    expired = min(reruns) - model_delay  # the first re-run started about then
    held = [t for t in finished if t < expired]
    after = [t for t in finished if t >= expired]
    if not held or len(after) < 2 or expired - finished[0] <= 0:
        return
    rate_held = len(held) / (expired - finished[0])
    rate_after = len(after) / (after[-1] - expired)
    out.figures["runs_per_s_while_dead_leases_held"] = round(rate_held, 1)
    out.figures["runs_per_s_after_they_expired"] = round(rate_after, 1)
    if rate_held < 0.6 * rate_after:
        out.notes.append(
            f"while the killed instance's {len(leased)} leases were unexpired, {instance} ran "
            f"{rate_held:.1f} events/s (~{rate_held * model_delay:.0f} at once), then "
            f"{rate_after:.1f}/s (~{rate_after * model_delay:.0f} at once) once they expired: "
            f"dead leases keep holding their webhook's concurrency slots ({WORKERS}) until "
            "they expire, though the instance that holds them is gone"
        )


# --- 2. graceful restart ------------------------------------------------------------------


async def graceful_restart(ctx: Context, out: Outcome) -> None:
    """SIGTERM the instance while deliveries go on, start it again: the sender retries.

    Runs take longer (1.5 s) than the shutdown grace period (1 s): the ones
    still going when it ends are cancelled and must go back to the queue.
    """
    rate, count, model_delay, grace = 12.0, 144, 1.5, 1.0
    env = {**SERVER_ENV, "AGENTWS_SHUTDOWN_GRACE_S": f"{grace:g}"}
    site = await trio.to_thread.run_sync(
        lambda: set_up_site(ctx.directory, f"sqlite:///{ctx.directory / 'agentws.db'}")
    )
    db = open_database(site.database_url)
    _, model_env = await start_fake_model(ctx.procs, "model", "--delay", str(model_delay))
    port = free_port()
    first = await start_agentws(ctx.procs, site, "restart-a", port, **env, **model_env)
    sender = Sender(first.base_url + site.hook_path, "restart")
    out.figures["config"] = {
        "store": "sqlite",
        "rate_per_s": rate,
        "deliveries": count,
        "model": f"fake Messages API answering after {model_delay} s",
        **env,
    }
    say(f"restart: {count} deliveries at {rate:g}/s; SIGTERM after 3 s, then start again")
    exit_limit = grace + 3.0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.paced, rate, count)
        started = now()

        async def busy() -> bool:
            snap = await Snapshot.read(db)
            return now() - started > 3.0 and len(snap.running()) > 0

        if await poll_until(busy, 30, alive=[first.child], what="runs in flight") is None:
            raise ScenarioError("no runs were in flight within 30 s")
        running_at_signal = len((await Snapshot.read(db)).running())
        term_at = now()
        status, took = await stop_process(
            ctx.procs, first.child, signal.SIGTERM, grace + EXIT_MARGIN_S
        )
        out.figures["restart-a_sigterm_exit"] = {"status": status, "seconds": _r(took)}
        out.check(status == 0, f"restart-a exited with {status} after SIGTERM (want 0)")
        out.check(
            took <= exit_limit,
            f"restart-a took {took:.1f} s to exit after SIGTERM (grace {grace:g} s)",
        )
        after_exit = await Snapshot.read(db)
        out.figures["at_exit"] = {
            "events_by_status": after_exit.by_status(),
            "running_at_sigterm": running_at_signal,
            "left_running": len(after_exit.running()),
        }
        say(f"restart: restart-a exited ({status}) after {took:.1f} s; starting restart-b")
        second = await start_agentws(ctx.procs, site, "restart-b", port, **env, **model_env)
    last_ack = max(sender.acks, default=now())
    done_at, snap = await _wait_all_done(db, sender, [second.child])
    accounts = await _settle_accounts(out, sender, snap, site)
    gap, gap_from = longest_gap(sender.acks, term_at - 1, last_ack)
    first_ack_after = min((t for t in sender.acks if t >= (second.ready_at or 0)), default=None)
    out.figures.update(
        sigterm_to_exit_s=_r(took),
        exit_to_ready_s=_r((second.ready_at or 0) - (term_at + took)),
        sigterm_to_first_ack_after_restart_s=_r(
            None if first_ack_after is None else first_ack_after - term_at
        ),
        door_closed_s=_r(gap),
        door_closed_from_sigterm_s=_r(gap_from - term_at),
        ready_to_all_done_s=_r(None if done_at is None else done_at - (second.ready_at or 0)),
        interrupted_attempts=accounts["attempt_outcomes"].get("interrupted", 0),
    )
    out.check(done_at is not None, f"events not all done {FINISH_S:g} s after the last ack")
    left = out.figures["at_exit"]["left_running"]
    out.check(left == 0, f"{left} event(s) left 'running' by the graceful shutdown")
    out.recovery = (
        f"door closed {gap:.1f} s (SIGTERM→exit {took:.1f} s, exit→ready "
        f"{out.figures['exit_to_ready_s']:.1f} s); "
        f"{out.figures['interrupted_attempts']} runs cut by the grace period re-queued"
    )
    await _stop_cleanly(out, ctx.procs, second)
    _scan_logs(out, [first.child, second.child])


# --- 3. database restart ------------------------------------------------------------------


async def db_restart(ctx: Context, out: Outcome) -> None:
    """Stop a private PostgreSQL for a few seconds while deliveries go on; start it again."""
    reason = missing_postgres()
    if reason is not None:
        raise Skip(reason)
    rate, count, model_delay, down_s = 20.0, 320, 0.2, 5.0
    ctx.directory.mkdir(parents=True, exist_ok=True)
    with private_postgres(keep=ctx.keep, log_to=ctx.directory / "postgres.log") as cluster:
        await cluster.start()
        say(f"db-restart: private PostgreSQL on 127.0.0.1:{cluster.port} ({cluster.root})")
        site = await trio.to_thread.run_sync(lambda: set_up_site(ctx.directory, cluster.url))
        db = open_database(site.database_url)
        _, model_env = await start_fake_model(ctx.procs, "model", "--delay", str(model_delay))
        port = free_port()
        server = await start_agentws(ctx.procs, site, "dbr", port, **SERVER_ENV, **model_env)
        first = server
        sender = Sender(server.base_url + site.hook_path, "dbr")
        out.figures["config"] = {
            "store": "postgresql (private cluster)",
            "rate_per_s": rate,
            "deliveries": count,
            "database_down_s": down_s,
            "model": f"fake Messages API answering after {model_delay} s",
            **SERVER_ENV,
        }
        say(f"db-restart: {count} deliveries at {rate:g}/s; database down for {down_s:g} s")
        readyz: list[tuple[float, int | str]] = []
        #: Each distinct /readyz refusal, and when it was last seen.
        reasons: dict[str, float] = {}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender.paced, rate, count)
            started = now()

            async def flowing() -> bool:
                snap = await Snapshot.read(db)
                return now() - started > 4.0 and bool(snap.messages)

            if await poll_until(flowing, 30, alive=[server.child], what="messages") is None:
                raise ScenarioError("no message was posted within 30 s")
            stop_at = now()
            await cluster.stop("fast")
            down_at = now()
            say(f"db-restart: database stopped ({down_at - stop_at:.1f} s); it stays down")
            async with httpx2.AsyncClient(timeout=10.0) as client:

                async def probe() -> int | str:
                    try:
                        response = await client.get(server.base_url + "/readyz")
                    except httpx2.TransportError as exc:
                        answer: int | str = type(exc).__name__
                    else:
                        answer = response.status_code
                        if answer != 200:
                            reasons[response.text.strip()[:160]] = now()
                    readyz.append((now(), answer))
                    return answer

                async def not_ready() -> bool:
                    return await probe() == 503

                # Not bound to the server's life: should it die, that is a finding.
                not_ready_at = await poll_until(not_ready, down_s, what="/readyz 503")
                # The outage lasts down_s from the stop; the sender goes on meanwhile.
                await trio.sleep_until(trio.current_time() + max(0.0, down_at + down_s - now()))
                up_from = now()
                await cluster.start()
                up_at = now()
                say(f"db-restart: database started again ({up_at - up_from:.1f} s)")
                crashed = server.child.process.poll()
                if crashed is not None:
                    _report_crash(out, server.child, "while the database was down")
                    say(f"db-restart: dbr exited ({crashed}) during the outage; starting it again")
                    server = await start_agentws(
                        ctx.procs, site, "dbr-2", port, **SERVER_ENV, **model_env
                    )
                    out.figures["restarted_after_crash"] = True

                async def ready() -> bool:
                    return await probe() == 200

                ready_at = await poll_until(
                    ready, 60, interval_s=0.05, alive=[server.child], what="/readyz 200"
                )
        last_ack = max(sender.acks, default=now())
        done_at, snap = await _wait_all_done(db, sender, [server.child])
        accounts = await _settle_accounts(out, sender, snap, site)
        gap, _ = longest_gap(sender.acks, stop_at - 1, last_ack)
        during = [a for t, a in readyz if down_at <= t <= up_at]
        first_ack_up = min((t for t in sender.acks if t >= up_at), default=None)
        out.figures.update(
            pg_stop_s=_r(down_at - stop_at),
            pg_start_s=_r(up_at - up_from),
            database_down_s=_r(up_at - stop_at),
            stop_to_readyz_503_s=_r(None if not_ready_at is None else not_ready_at - down_at),
            readyz_while_down=sorted({str(a) for a in during}),
            db_up_to_readyz_200_s=_r(None if ready_at is None else ready_at - up_at),
            db_up_to_all_done_s=_r(None if done_at is None else done_at - up_at),
            db_up_to_first_ack_s=_r(None if first_ack_up is None else first_ack_up - up_at),
            longest_gap_between_acks_s=_r(gap),
        )
        answers = out.figures["sender"]["answers"]
        transport = {k: v for k, v in answers.items() if not k.isdigit()}
        others = {
            k: v for k, v in answers.items() if k.isdigit() and k not in ("200", "202", "503")
        }
        no_retry_after = {k: v for k, v in sender.retry_after.items() if k.endswith("none")}
        out.figures["door_during_outage"] = {
            "503": answers.get("503", 0),
            "retry_after": dict(sender.retry_after),
            "other_statuses": others,
            "transport_errors": transport,
        }
        out.check(ready_at is not None, "/readyz did not answer 200 within 60 s of the restart")
        out.check(done_at is not None, f"events not all done {FINISH_S:g} s after the last ack")
        out.check(not others, f"the door answered {others} (want 202, or 503 + Retry-After)")
        out.check(not no_retry_after, f"5xx/429 without Retry-After: {no_retry_after}")
        if server is first:
            out.check(
                not_ready_at is not None, "/readyz never answered 503 while the database was down"
            )
            out.check(
                answers.get("503", 0) > 0,
                "no delivery was answered 503 while the database was down",
            )
            out.check(not transport, f"the door failed at the transport level: {transport}")
        else:
            out.notes.append(
                "the door's checks during the outage (503 + Retry-After, /readyz 503) are moot: "
                f"the process was dead; the sender met {sum(transport.values())} connection "
                "errors and retried until the restarted instance acknowledged"
            )
        late = sorted({r for r, t in reasons.items() if t >= up_at})
        out.figures["readyz_refusals"] = sorted(reasons)
        out.figures["readyz_refusals_after_db_up"] = late
        if ready_at is not None and first_ack_up is not None and first_ack_up + 1 < ready_at:
            out.notes.append(
                f"/readyz answered 503 for {ready_at - up_at:.1f} s after the database was back "
                f"({' / '.join(late) or 'no reason given'}), though the door acknowledged "
                f"deliveries {first_ack_up - up_at:.1f} s after it: readiness waits for the "
                "change listener, whose reconnect back-off grew while the database was down"
            )
        if ready_at is not None and done_at is not None:
            out.recovery = (
                ("agentws CRASHED, restarted: " if server is not first else "")
                + f"db up→/readyz 200 {ready_at - up_at:.1f} s; db up→all done "
                f"{done_at - up_at:.1f} s (down {up_at - stop_at:.1f} s)"
            )
        del accounts
        await _stop_cleanly(out, ctx.procs, server)
        _scan_logs(out, [first.child] + ([server.child] if server is not first else []))
        if ctx.keep:
            out.notes.append(f"PostgreSQL log: {cluster.log}")


# --- 5. slow model ------------------------------------------------------------------------


async def slow_model(ctx: Context, out: Outcome) -> None:
    """The model answers slower than the run deadline for the first attempts, then at once."""
    count, rate, slow_first, slow_s, run_timeout = 20, 20.0, 2, 6.0, 2
    env = {**SERVER_ENV, "AGENTWS_RUN_TIMEOUT_S": str(run_timeout)}
    site: Site = await trio.to_thread.run_sync(
        lambda: set_up_site(ctx.directory, f"sqlite:///{ctx.directory / 'agentws.db'}")
    )
    db = open_database(site.database_url)
    _, model_env = await start_fake_model(
        ctx.procs, "model", "--slow-first", str(slow_first), "--slow-s", str(slow_s)
    )
    server = await start_agentws(ctx.procs, site, "slowmodel", free_port(), **env, **model_env)
    sender = Sender(server.base_url + site.hook_path, "slowmodel")
    out.figures["config"] = {
        "store": "sqlite",
        "deliveries": count,
        "model": f"fake Messages API: the first {slow_first} requests of each event answer "
        f"after {slow_s:g} s, later ones at once",
        **env,
    }
    say(
        f"slow-model: {count} events; the model takes {slow_s:g} s (> run timeout "
        f"{run_timeout} s) for the first {slow_first} attempts of each"
    )
    started = now()
    await sender.paced(rate, count)
    done_at, snap = await _wait_all_done(db, sender, [server.child], timeout_s=90)
    accounts = await _settle_accounts(out, sender, snap, site)
    stats = await model_stats(model_env["ANTHROPIC_BASE_URL"])
    calls = {k: v for k, v in stats["by_key"].items() if k.startswith(sender.key(0)[:-1])}
    per_event: dict[str, int] = {}
    for value in calls.values():
        per_event[str(value)] = per_event.get(str(value), 0) + 1
    attempts = accounts["attempts_per_event"]
    out.figures.update(
        first_post_to_all_done_s=_r(None if done_at is None else done_at - started),
        model_calls_per_event=per_event,
        retry_outcomes=accounts["attempt_outcomes"],
    )
    out.check(done_at is not None, "events not all done within 90 s")
    want = slow_first + 1
    out.check(
        set(attempts) == {str(want)},
        f"attempts per event {attempts}, want {want} each ({slow_first} timed out, 1 done)",
    )
    out.check(
        set(per_event) == {str(want)},
        f"model calls per event {per_event}, want {want} each",
    )
    if done_at is not None:
        out.recovery = (
            f"all done {done_at - started:.1f} s after the first POST "
            f"({slow_first} timed-out attempts each, then done)"
        )
    await _stop_cleanly(out, ctx.procs, server)
    _scan_logs(out, [server.child])
