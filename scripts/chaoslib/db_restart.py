"""The ``db-restart`` scenario: a private PostgreSQL stopped for seconds while deliveries go on.

It sets up its own site on a private cluster (:mod:`chaoslib.pg`), runs a
sender that retries until acknowledged against ``agentws serve``, stops
the database, starts it again, then waits until every acknowledged event
is done and holds the store against the sender's record.
"""

import httpx2
import trio

from chaoslib.common import (
    Outcome,
    ScenarioError,
    Skip,
    free_port,
    now,
    poll_until,
    say,
    set_up_site,
    start_agentws,
    start_fake_model,
)
from chaoslib.ledger import Snapshot, open_database
from chaoslib.pg import missing_postgres, private_postgres
from chaoslib.sender import Sender, longest_gap
from chaoslib.steps import (
    FINISH_S,
    SERVER_ENV,
    Context,
    r,
    report_crash,
    scan_logs,
    settle_accounts,
    stop_cleanly,
    wait_all_done,
)

__all__ = ["db_restart"]


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
                    report_crash(out, server.child, "while the database was down")
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
        done_at, snap = await wait_all_done(db, sender, [server.child])
        accounts = await settle_accounts(out, sender, snap, site)
        gap, _ = longest_gap(sender.acks, stop_at - 1, last_ack)
        during = [a for t, a in readyz if down_at <= t <= up_at]
        first_ack_up = min((t for t in sender.acks if t >= up_at), default=None)
        out.figures.update(
            pg_stop_s=r(down_at - stop_at),
            pg_start_s=r(up_at - up_from),
            database_down_s=r(up_at - stop_at),
            stop_to_readyz_503_s=r(None if not_ready_at is None else not_ready_at - down_at),
            readyz_while_down=sorted({str(a) for a in during}),
            db_up_to_readyz_200_s=r(None if ready_at is None else ready_at - up_at),
            db_up_to_all_done_s=r(None if done_at is None else done_at - up_at),
            db_up_to_first_ack_s=r(None if first_ack_up is None else first_ack_up - up_at),
            longest_gap_between_acks_s=r(gap),
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
        await stop_cleanly(out, ctx.procs, server)
        scan_logs(out, [first.child] + ([server.child] if server is not first else []))
        if ctx.keep:
            out.notes.append(f"PostgreSQL log: {cluster.log}")


# --- 5. slow model ------------------------------------------------------------------------
