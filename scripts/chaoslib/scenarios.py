"""The webhook scenarios: kill -9, graceful restart, slow model.

The database restart is :mod:`chaoslib.db_restart`'s; the settings and
steps they share are :mod:`chaoslib.steps`'.

Each one sets up its own site (through the CLI) in a directory of its own,
runs a sender that retries until acknowledged (:mod:`chaoslib.sender`)
against real ``agentws serve`` processes, does its damage while deliveries
go on, then waits (with a deadline) until every acknowledged event is done
and holds the store against the sender's record (:func:`chaoslib.ledger.account`).
"""

from __future__ import annotations

import signal

import trio

from chaoslib.common import (
    Outcome,
    ScenarioError,
    Site,
    free_port,
    model_stats,
    now,
    poll_until,
    say,
    set_up_site,
    start_agentws,
    start_fake_model,
    stop_process,
)
from chaoslib.ledger import Snapshot, open_database
from chaoslib.sender import Sender, longest_gap

__all__ = ["graceful_restart", "kill9", "slow_model"]

from chaoslib.steps import (
    EXIT_MARGIN_S,
    FINISH_S,
    RUN_TIMEOUT_S,
    SERVER_ENV,
    WORKERS,
    Context,
    r,
    scan_logs,
    settle_accounts,
    stop_cleanly,
    wait_all_done,
)


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
    done_at, snap = await wait_all_done(db, sender, [second.child])
    accounts = await settle_accounts(out, sender, snap, site)
    gap, _ = longest_gap(sender.acks, killed_at - 1, last_ack)
    restart_to_done = None if done_at is None else done_at - second.started_at
    out.figures.update(
        kill_to_restart_s=r(second.started_at - killed_at),
        restart_to_ready_s=r((second.ready_at or 0) - second.started_at),
        restart_to_all_done_s=r(restart_to_done),
        kill_to_all_done_s=r(None if done_at is None else done_at - killed_at),
        longest_gap_between_acks_s=r(gap),
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
    await stop_cleanly(out, ctx.procs, second)
    scan_logs(out, [first.child, second.child])


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
        out.figures["restart-a_sigterm_exit"] = {"status": status, "seconds": r(took)}
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
    done_at, snap = await wait_all_done(db, sender, [second.child])
    accounts = await settle_accounts(out, sender, snap, site)
    gap, gap_from = longest_gap(sender.acks, term_at - 1, last_ack)
    first_ack_after = min((t for t in sender.acks if t >= (second.ready_at or 0)), default=None)
    out.figures.update(
        sigterm_to_exit_s=r(took),
        exit_to_ready_s=r((second.ready_at or 0) - (term_at + took)),
        sigterm_to_first_ack_after_restart_s=r(
            None if first_ack_after is None else first_ack_after - term_at
        ),
        door_closed_s=r(gap),
        door_closed_from_sigterm_s=r(gap_from - term_at),
        ready_to_all_done_s=r(None if done_at is None else done_at - (second.ready_at or 0)),
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
    await stop_cleanly(out, ctx.procs, second)
    scan_logs(out, [first.child, second.child])


# --- 3. database restart ------------------------------------------------------------------


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
    done_at, snap = await wait_all_done(db, sender, [server.child], timeout_s=90)
    accounts = await settle_accounts(out, sender, snap, site)
    stats = await model_stats(model_env["ANTHROPIC_BASE_URL"])
    calls = {k: v for k, v in stats["by_key"].items() if k.startswith(sender.key(0)[:-1])}
    per_event: dict[str, int] = {}
    for value in calls.values():
        per_event[str(value)] = per_event.get(str(value), 0) + 1
    attempts = accounts["attempts_per_event"]
    out.figures.update(
        first_post_to_all_done_s=r(None if done_at is None else done_at - started),
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
    await stop_cleanly(out, ctx.procs, server)
    scan_logs(out, [server.child])
