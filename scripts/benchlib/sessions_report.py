"""The report of ``scripts/bench sessions``: its table rows, its notes, its targets.

``render`` turns the results of ``scripts/bench_sessions.py`` (each number
of sessions on agentws, on agentws on PostgreSQL and on the SDK's
reference, and the stack's floor under a revocation) into the Markdown the
mode prints; ``failed`` and ``passed`` read its exit status from them.

The targets (issue 41, each judged on every agentws run, SQLite and
PostgreSQL, against the floor measured at the same number of sessions in
the same run):

- every stream of a revoked token ended, through the CLI and through the
  admin API, within ``REVOKE_TARGET_MS`` of ``revoked_at`` with up to
  ``FLOOR_FROM_SESSIONS`` sessions, and within ``FLOOR_FACTOR`` times the
  floor (``stream_floor``'s ``frozen`` variant) above that;
- no event-loop stall over ``STALL_TARGET_MS`` in the 10 s after each of
  those revocations (the largest ``/healthz`` round-trip);
- at most ``RSS_TARGET_KB`` of resident memory per open session, each transport;
- tools/list p99 under ``LIST_P99_TARGET_MS`` with every session open;
- every session opened; the other token's sessions untouched, the revoked
  token refused; the tools/list sessions' own revocation within
  ``REVOKE_TARGET_MS``.
"""

from __future__ import annotations

import math
from typing import Any

from benchlib.loop_lag import STALL_TARGET_MS
from benchlib.report import QUIET_CORES, fmt, report_head, verdict
from benchlib.stream_floor import PACE, PACE_WAIT_S

__all__ = [
    "FLOOR_FACTOR",
    "FLOOR_FROM_SESSIONS",
    "LIST_P99_TARGET_MS",
    "REVOKE_TARGET_MS",
    "RSS_TARGET_KB",
    "STALL_TARGET_MS",
    "failed",
    "passed",
    "render",
    "revoke_target_ms",
]

REVOKE_TARGET_MS = 500.0  # every stream of a revoked token closed, up to 1,000 sessions
FLOOR_FROM_SESSIONS = 1000  # above this many sessions the target is relative to the floor
FLOOR_FACTOR = 2.0  # ... within twice the time bare QuartTrio streams take to end
RSS_TARGET_KB = 50.0  # resident memory per open session
LIST_P99_TARGET_MS = 20.0  # tools/list p99 of the paced clients with every session open
_TRANSPORTS = (("bulk_streamable", "Streamable HTTP"), ("bulk_sse", "legacy SSE"))
_REVOCATIONS = (("revocation", "CLI"), ("revocation_api", "admin API"))
_STORES = (("agentws", ""), ("agentws_postgres", ", PostgreSQL"))


def _finite(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def _frozen_floor_ms(floor: list[dict[str, Any]] | None) -> float | None:
    if not floor or not floor[0].get("ended") or floor[0]["ended"] < floor[0]["streams"]:
        return None
    value: float | None = floor[0].get("max_ms")
    return value if _finite(value) else None


def revoke_target_ms(sessions: int, floor: list[dict[str, Any]] | None) -> float | None:
    """The time within which every stream must end at ``sessions``; None without a floor."""
    if sessions <= FLOOR_FROM_SESSIONS:
        return REVOKE_TARGET_MS
    frozen = _frozen_floor_ms(floor)
    return FLOOR_FACTOR * frozen if frozen is not None else None


def _target_text(sessions: int, floor: list[dict[str, Any]] | None) -> str:
    target = revoke_target_ms(sessions, floor)
    if sessions <= FLOOR_FROM_SESSIONS:
        return f"< {REVOKE_TARGET_MS:g} ms"
    if target is None:
        return f"< {FLOOR_FACTOR:g}x floor (no floor measured)"
    return f"< {FLOOR_FACTOR:g}x floor = {fmt(target, 0)} ms"


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
    return _finite(value) and value <= limit  # type: ignore[operator]


def _below(value: float | None, limit: float | None) -> bool:
    return limit is not None and _finite(value) and value < limit  # type: ignore[operator]


def _ratio(ours: float | None, theirs: float | None) -> str:
    if not _finite(ours) or not _finite(theirs) or theirs <= 0:  # type: ignore[operator]
        return "—"
    return f"{ours / theirs:.2f}x reference"  # type: ignore[operator]


def _revocation_passed(revocation: dict[str, Any] | None, target_ms: float | None) -> bool:
    if not revocation or "error" in revocation:
        return False
    return (
        revocation["streams"] > 0
        and revocation["still_open"] == 0
        and _below(revocation["close_max_ms"], target_ms)
    )


def _stall_passed(revocation: dict[str, Any] | None) -> bool:
    lag: dict[str, Any] = (revocation or {}).get("loop_lag") or {}
    return bool(lag) and lag["failed"] == 0 and _below(lag["stall_ms"], STALL_TARGET_MS)


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
        return "floor: not measured"
    frozen, off, *rest = floor
    cell = f"floor {fmt(frozen['max_ms'], 0)} ({fmt(off['max_ms'], 0)} collector off"
    if rest:
        cell += f"; {fmt(rest[0]['max_ms'], 0)} paced"
    return cell + ")"


def _floor_stall(figures: dict[str, Any]) -> str:
    lag = figures.get("loop_lag")
    return f"{fmt(lag['stall_ms'])} ms" if lag else "not measured"


def _cpu_cell(figures: dict[str, Any] | None) -> str:
    """When the server went idle, its CPU in the window, the client's until the last end."""
    cpu = (figures or {}).get("cpu")
    if not cpu:
        return "n/a"
    idle = cpu.get("idle_at_ms")
    client = cpu.get("client_cpu_to_last_end_s")
    return (
        f"{fmt(idle, 0) if idle is not None else 'never busy'}; "
        f"{cpu['server_cpu_s']:.2f} s ({cpu['server_cpu_above_baseline_s']:.2f} above "
        f"baseline); client {fmt(client, 3)} s"
    )


def _stall_cell(revocation: dict[str, Any] | None) -> str:
    lag = (revocation or {}).get("loop_lag")
    if not lag:
        return "n/a"
    cell = f"{fmt(lag['stall_ms'])} (at {fmt(lag['stall_at_ms'], 0)} ms; p99 {fmt(lag['p99_ms'])})"
    if lag["failed"]:
        cell += f", {lag['failed']} failed"
    return cell


def _isolation_passed(revocation: dict[str, Any] | None, clients: int) -> bool:
    if not revocation or "error" in revocation:
        return False
    return (
        revocation["listers_alive"] == clients
        and revocation["listers_answering"] == clients
        and revocation.get("revoked_token_status") == 401
    )


def _isolation_cell(revocation: dict[str, Any] | None, clients: int) -> str:
    if not revocation or "error" in revocation:
        return "—"
    return (
        f"{revocation['listers_alive']}/{clients} alive, {revocation['listers_answering']}"
        f"/{clients} answer; revoked token: HTTP {revocation.get('revoked_token_status')}"
    )


def _sockets(figures: dict[str, Any] | None) -> str:
    if not figures or figures.get("sockets_after_client_closed") is None:
        return "n/a"
    return f"{figures['sockets_after_client_closed']:,} (1 listening)"


def _list_cell(figures: dict[str, Any] | None) -> str:
    if not figures:
        return "n/a"
    loaded = figures["list_loaded"]
    return (
        f"{_p50_p99(loaded)} ({_p50_p99(figures['list_idle'])}); "
        f"{fmt(loaded.get('offered_per_s'), 0)}/s offered"
    )


def _list_passed(figures: dict[str, Any]) -> bool:
    loaded = figures.get("list_loaded") or {}
    return not loaded.get("offered_short") and _below(loaded.get("p99_ms"), LIST_P99_TARGET_MS)


def _rss_passed(figures: dict[str, Any]) -> bool:
    return all(_at_most(figures[key]["per_session_kb"], RSS_TARGET_KB) for key, _ in _TRANSPORTS)


def _revocation_rows(
    n: int, label: str, ours: dict[str, Any], floor: list[dict[str, Any]] | None, clients: int
) -> list[list[str]]:
    rows = []
    target = revoke_target_ms(n, floor)
    for key, via in _REVOCATIONS:
        revocation = ours.get(key)
        streams = revocation["streams"] if revocation else n
        rows += [
            [
                f"{n:,}{label}: revoked ({via}) → all {streams:,} streams of the token ended, "
                "ms after revoked_at (p50); reference column: the stack's floor",
                _revocation_cell(revocation),
                _floor_cell(floor),
                _target_text(n, floor),
                verdict(_revocation_passed(revocation, target) if target is not None else None),
            ],
            [
                f"{n:,}{label}, {via}: server idle from (ms after revoked_at); its CPU in the "
                "10 s after; the client's CPU until the last end",
                _cpu_cell(revocation),
                _cpu_cell(floor[0]) if floor else "n/a",
                "— (reported)",
                "—",
            ],
            [
                f"{n:,}{label}, {via}: largest /healthz round-trip every 10 ms in the 10 s "
                "after (loop stall, ms)",
                _stall_cell(revocation),
                "n/a",
                f"< {STALL_TARGET_MS:g} ms",
                verdict(_stall_passed(revocation)),
            ],
        ]
        if key == "revocation":
            rows.append(
                [
                    f"{n:,}{label}: after it, the other token's sessions; a new request with "
                    "the revoked one",
                    _isolation_cell(revocation, clients),
                    "n/a",
                    "all alive; 401",
                    verdict(_isolation_passed(revocation, clients)),
                ]
            )
    listers = ours.get("revocation_listers")
    rows.append(
        [
            f"{n:,}{label}: revoked (admin API) → all "
            f"{listers['streams'] if listers else clients} streams of the tools/list sessions' "
            "token ended, ms after revoked_at (p50)",
            _revocation_cell(listers),
            "n/a",
            f"< {REVOKE_TARGET_MS:g} ms",
            verdict(_revocation_passed(listers, REVOKE_TARGET_MS)),
        ]
    )
    return rows


def _store_rows(
    level: dict[str, Any], key: str, label: str, clients: int, rate: float
) -> list[list[str]]:
    n = level["sessions"]
    ours: dict[str, Any] = level[key]
    ref: dict[str, Any] | None = level.get("reference") if key == "agentws" else None
    rows = [
        [
            f"**{n:,} sessions{label}** opened ({n // 2:,} Streamable HTTP + {n - n // 2:,} "
            "legacy SSE)",
            _opened(ours),
            _opened(ref),
            "all open",
            verdict(_all_opened(ours)),
        ]
    ]
    for transport, what in _TRANSPORTS:
        rows.append(
            [
                f"{n:,}{label}: initialize p50 / p99, {what} (ms)",
                _p50_p99(ours[transport], "init_"),
                _p50_p99(ref[transport] if ref else None, "init_"),
                "— (reported)",
                "—",
            ]
        )
    for transport, what in _TRANSPORTS:
        theirs = ref[transport]["per_session_kb"] if ref else None
        per_session = ours[transport]["per_session_kb"]
        rows.append(
            [
                f"{n:,}{label}: RSS per open session, {what} (KB)",
                fmt(per_session),
                fmt(theirs),
                f"<= {RSS_TARGET_KB:g} KB",
                verdict(_at_most(per_session, RSS_TARGET_KB))
                + (f" ({_ratio(per_session, theirs)})" if ref else ""),
            ]
        )
    rows.append(
        [
            f"{n:,}{label}: tools/list p50 / p99, {clients} clients at {rate:g}/s, {n:,} "
            "sessions open (no session open) (ms); calls offered a second",
            _list_cell(ours),
            _list_cell(ref),
            f"p99 < {LIST_P99_TARGET_MS:g} ms at {clients * rate:g}/s",
            verdict(_list_passed(ours)),
        ]
    )
    rows += _revocation_rows(n, label, ours, level.get("floor"), clients)
    rows.append(
        [
            f"{n:,}{label}: sockets the server still holds once the client closed all its "
            "connections",
            _sockets(ours),
            _sockets(ref),
            "— (reported)",
            "—",
        ]
    )
    return rows


def _busy_spans(cpu: dict[str, Any]) -> str:
    spans = cpu.get("busy_spans") or []
    shown = ", ".join(f"{a:,} to {b:,} ms ({c:.2f} s)" for a, b, c in spans[:6])
    return (shown + (f", and {len(spans) - 6} more" if len(spans) > 6 else "")) or "none"


def _revocation_notes(n: int, name: str, figures: dict[str, Any]) -> list[str]:
    lines = []
    for key, via in (*_REVOCATIONS, ("revocation_listers", "admin API, tools/list token")):
        revocation = figures.get(key)
        if not revocation:
            continue
        if revocation.get("broken"):
            lines.append(
                f"- {n:,}, {name}, {via}: {revocation['broken']} streams broke instead of "
                f"ending cleanly: {'; '.join(revocation['end_errors'][:2])}"
            )
        cpu = revocation.get("cpu")
        if not cpu:
            continue
        lag = revocation.get("loop_lag") or {}
        ends = revocation.get("ends_per_100ms") or []
        lines.append(
            f"- {n:,}, {name}, revoked ({via}): the server's busy 100 ms windows after "
            f"revoked_at: {_busy_spans(cpu)} (baseline {cpu['baseline_share'] * 100:.0f}% of a "
            f"core before it); {cpu['server_cpu_s']:.2f} s of its CPU in the "
            f"{cpu['window_s']:.1f} s after, {fmt(cpu.get('server_cpu_to_last_end_s'), 2)} s "
            f"until the last end. Ends by 100 ms: "
            + ", ".join(f"{start:,} ms: {count:,}" for start, count in ends[:12])
            + (" …" if len(ends) > 12 else "")
            + f". The client ({revocation.get('watchers', '?')} watcher process(es) and the "
            f"main one) used {fmt(cpu.get('client_cpu_to_last_end_s'), 3)} s of CPU until "
            f"the last end, {cpu['client_cpu_s']:.3f} s in the whole window; the observers "
            f"{cpu['observers_cpu_s']:.2f} s; other processes {cpu['other_cpu_s']:.2f} s"
            + (
                " (the machine was not quiet: expect noise)"
                if cpu["other_cpu_s"] / max(cpu["window_s"], 0.1) > QUIET_CORES
                else ""
            )
            + f". /healthz probes: {lag.get('probes', 0):,}, largest before the revocation "
            f"{fmt(lag.get('before_max_ms'))} ms."
        )
    return lines


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
        if "anon_per_session_kb" in s and "anon_per_session_kb" in legacy:
            text += (
                f"; of it anonymous memory (RssAnon: not the pages of mapped files such as a "
                f"SQLite database its readers map), {fmt(s['anon_per_session_kb'])} KB a "
                f"Streamable HTTP session and {fmt(legacy['anon_per_session_kb'])} KB a legacy one"
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
            f" tools/list with the sessions open: {loaded['calls']} calls measured "
            f"({fmt(loaded.get('offered_per_s'), 1)}/s due in the window, "
            f"{fmt(loaded.get('wanted_per_s'), 0)}/s wanted), max "
            f"{fmt(loaded['max_ms'])} ms, {loaded['errors']} failed; the client used "
            f"{loaded['client_cpu_cores']:.2f} cores, other processes up to {busy:.2f} cores "
            "during the tools/list windows"
            + (" (the machine was not quiet: expect noise)." if busy > QUIET_CORES else ".")
        )
        lines.append(text)
        if loaded.get("offered_short"):
            lines.append(
                f"- {n:,}, {name}: the tools/list load fell short of "
                f"{fmt(loaded['wanted_per_s'], 0)}/s: its p99 is not judged at the rate wanted."
            )
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
        lines += _revocation_notes(n, name, figures)
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
        frozen, off, *rest = floor
        cpu = frozen.get("cpu") or {}
        lines.append(
            f"- {n:,}, the stack's floor (`benchlib/stream_floor.py`): {frozen['streams']:,} bare "
            "SSE streams of a QuartTrio route on Hypercorn's trio worker, no store, token or "
            "session, the collector's objects frozen once all were open, ended in the same turn "
            "of the loop by one `trio.Event`, timed by the same watchers: the last ended "
            f"{fmt(frozen['max_ms'], 0)} ms later (p50 {fmt(frozen['p50_ms'], 0)}), "
            f"{fmt(off['max_ms'], 0)} ms (p50 {fmt(off['p50_ms'], 0)}) with the collector off "
            f"throughout ({frozen['ended']:,} and {off['ended']:,} of {frozen['streams']:,} "
            f"ended); its server busy {_busy_spans(cpu)} (sampled for "
            f"{fmt(cpu.get('window_s'))} s after ending them), "
            f"{fmt(cpu.get('server_cpu_to_last_end_s'), 3)} s of CPU until the last end; the "
            f"client {fmt(cpu.get('client_cpu_to_last_end_s'), 3)} s; its loop stall "
            f"{_floor_stall(frozen)} ({_floor_stall(off)} collector off). A revocation through "
            "agentws adds its own work to this."
        )
        if rest:
            paced = rest[0]
            paced_cpu = paced.get("cpu") or {}
            lines.append(
                f"- {n:,}, the floor paced as agentws closes a revoked token's sessions (reported "
                f"only): the same streams ended {PACE} at a time, each batch once the last one's "
                f"generators were done ({PACE_WAIT_S:g} s at most): the last ended "
                f"{fmt(paced['max_ms'], 0)} "
                f"ms later (p50 {fmt(paced['p50_ms'], 0)}; {paced['ended']:,} ended), loop "
                f"stall {_floor_stall(paced)}, server busy {_busy_spans(paced_cpu)}, "
                f"{fmt(paced_cpu.get('server_cpu_to_last_end_s'), 3)} s of CPU until the last end."
            )
    return lines


def render(results: dict[str, Any]) -> str:
    config = results["config"]
    clients, rate = config["list_clients"], config["list_rate"]
    rows: list[list[str]] = []
    for level in results["levels"]:
        for key, label in _STORES:
            if level.get(key):
                rows += _store_rows(level, key, label, clients, rate)
    packages = results["machine"]["packages"]
    revocation: dict[str, Any] = next(
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
        "(keep-alive comments only), on a socket of its own handed, once open, to one of the "
        f"watcher processes (at most {config['streams_per_watcher']:,} streams each: epoll, "
        "nothing else), which stamp each stream's end (its last chunk, or EOF) with "
        "time.time() as it arrives. Initialize latency: from sending initialize to its answer. "
        "RSS per session: growth of the server's VmRSS (read after "
        f"{config['settle_s']:g} s of quiet) over the sessions of that transport still open, "
        "after 10 sessions of each transport were opened and closed, the tools/list "
        "sessions opened and their first load ran. Servers in ABBA order over the levels.",
        f"- tools/list: {clients} Streamable HTTP sessions on a token of their own, each "
        f"calling at random times, exactly {rate:g} a second in the window ({clients * rate:g}"
        "/s in all; uniform times given their count, i.e. Poisson arrivals), latency counted "
        "from when a call was due, every call due in the window measured however late it "
        f"ended; {config['list_warmup_s']:g} s warm-up, "
        f"{config['list_seconds']:g} s measured; once before the sessions open, once with "
        "them open.",
        "- Revocations: `agentws token revoke` (another process; agentws notices through the "
        "store, as for any instance) of the token holding every bulk session; then as many "
        "sessions opened again on a second token, revoked through the admin API "
        "(`DELETE /api/v1/…/tokens/<id>`); last, the tools/list sessions' token (admin API). "
        "Each is timed from the token's `revoked_at` (set at commit) to the watchers' stamp of "
        "each of its streams' end (same machine's clock)"
        + (
            f"; the CLI took {revocation['cli_s']:.2f} s to run"
            if revocation.get("cli_s") is not None
            else ""
        )
        + ". Around each bulk revocation, from outside the server and the client: the "
        "server's CPU clock (and the client's) sampled every 20 ms from 1 s before to 10 s "
        "after, read in 100 ms windows; `GET /healthz` every 10 ms on one kept-alive "
        "connection, whose largest round-trip is the loop's longest stall. The server is "
        "idle from the end of the last 100 ms window in which it used more than 10% of a core "
        "over its baseline (its median 100 ms share in the second before the revocation, the "
        "probe's requests included). On PostgreSQL "
        "(rows so marked): the same, in a fresh database of each run.",
        f"- Targets: with up to {FLOOR_FROM_SESSIONS:,} sessions every stream ended within "
        f"{REVOKE_TARGET_MS:g} ms of revoked_at; above that, within {FLOOR_FACTOR:g}x the "
        "floor at the same number of streams in the same run (bare QuartTrio streams, the "
        "collector frozen once they are open; the collector-off figure is reported only). "
        f"Loop stall < {STALL_TARGET_MS:g} ms in the 10 s after; RSS <= {RSS_TARGET_KB:g} KB "
        f"a session; tools/list p99 < {LIST_P99_TARGET_MS:g} ms with every session open.",
    ]
    for level in results["levels"]:
        lines += _level_notes(level)
    return "\n".join(lines)


def failed(results: dict[str, Any]) -> bool:
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


def passed(results: dict[str, Any]) -> bool:
    """Every target met on every agentws run (a revocation without a floor to judge it by
    above ``FLOOR_FROM_SESSIONS`` sessions is not met)."""
    clients = results["config"]["list_clients"]
    for level in results["levels"]:
        target = revoke_target_ms(level["sessions"], level.get("floor"))
        for key, _ in _STORES:
            ours = level.get(key)
            if not ours:
                continue
            revocations = [ours.get(k) for k, _ in _REVOCATIONS]
            if not (
                _all_opened(ours)
                and _rss_passed(ours)
                and _list_passed(ours)
                and all(_revocation_passed(r, target) and _stall_passed(r) for r in revocations)
                and _isolation_passed(ours.get("revocation"), clients)
                and _revocation_passed(ours.get("revocation_listers"), REVOKE_TARGET_MS)
            ):
                return False
    return True
