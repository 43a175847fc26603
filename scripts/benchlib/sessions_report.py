"""The report of ``scripts/bench sessions``: its table rows, its notes, its targets.

``render`` turns the results of ``scripts/bench_sessions.py`` (each number
of sessions on agentws, on agentws on PostgreSQL and on the SDK's
reference, and the stack's floor under a revocation) into the Markdown the
mode prints; ``failed`` and ``passed`` read its exit status from them.
"""

from __future__ import annotations

import math
from typing import Any

from benchlib.report import QUIET_CORES, fmt, report_head, verdict

__all__ = ["LIST_P99_TARGET_MS", "REVOKE_TARGET_MS", "RSS_TARGET_KB", "failed", "passed", "render"]

REVOKE_TARGET_MS = 500.0  # every stream of a revoked token closed (issue: gateway scale)
RSS_TARGET_KB = 50.0  # resident memory per open session
LIST_P99_TARGET_MS = 20.0  # tools/list p99 of the paced clients with every session open


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
