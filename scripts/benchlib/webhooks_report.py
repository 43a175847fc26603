"""The report of ``scripts/bench webhooks``: its table rows, its notes, its targets.

``render`` turns the results of ``scripts/bench_webhooks.py`` (agentws's
ingest beside the bare QuartTrio endpoint's, and the end-to-end run) into
the Markdown the mode prints.
"""

from __future__ import annotations

import math
from typing import Any

from benchlib.report import fmt, report_head, rounds_note, verdict
from benchlib.webhook_setup import BURST, RATE, WEBHOOK_CONCURRENCY

__all__ = ["E2E_TARGET_P99_MS", "THROUGHPUT_TARGET", "WORKER_CONCURRENCY", "e2e_passed", "render"]

THROUGHPUT_TARGET = 0.9  # agentws / reference, accepted events per second (gateway scale)
E2E_TARGET_P99_MS = 100.0  # POST -> chat message, p99
# agentws's pool of event runs (AGENTWS_WORKER_CONCURRENCY).
WORKER_CONCURRENCY = "16"


def e2e_passed(e2e: dict[str, Any]) -> bool:
    complete = e2e["sent"] > 0 and e2e["arrived"] == e2e["sent"]
    return complete and e2e["e2e"]["p99_ms"] < E2E_TARGET_P99_MS


def _throughput_rows(results: dict[str, Any]) -> list[list[str]]:
    ours, ref = results["agentws"], results["reference"]
    ratio = results["throughput_ratio"]
    senders = ours["concurrency"]
    rows = [
        [
            f"accepted events/s, {senders} senders",
            fmt(ours["accepted_per_s"]),
            fmt(ref["accepted_per_s"]),
            f">= {THROUGHPUT_TARGET:.1f}x reference",
            f"{verdict(ratio >= THROUGHPUT_TARGET)} ({ratio:.2f}x)",
        ],
        [
            "ingest latency p50 (ms)",
            fmt(ours["p50_ms"]),
            fmt(ref["p50_ms"]),
            "— (reported)",
            "—",
        ],
        [
            "ingest latency p99 (ms)",
            fmt(ours["p99_ms"]),
            fmt(ref["p99_ms"]),
            "— (reported)",
            "—",
        ],
        [
            "errors: not 202 (all rounds)",
            str(ours["errors_all_rounds"]),
            str(ref["errors_all_rounds"]),
            "0",
            verdict(ours["errors_all_rounds"] == 0 and ref["errors_all_rounds"] == 0),
        ],
    ]
    if ours.get("server_cpu_s") is not None and ref.get("server_cpu_s") is not None:
        per_event = [
            1000 * r["server_cpu_s"] / r["accepted"] if r["accepted"] else math.nan
            for r in (ours, ref)
        ]
        rows.append(
            [
                "server CPU per event (ms, all threads)",
                fmt(per_event[0], 2),
                fmt(per_event[1], 2),
                "— (reported)",
                "—",
            ]
        )
    return rows


def _e2e_rows(e2e: dict[str, Any]) -> list[list[str]]:
    spread = e2e["e2e"]
    rate = f"{e2e['rate']:g} events/s"
    return [
        [
            f"POST → chat message p99, {rate} (ms)",
            fmt(spread["p99_ms"]),
            "n/a",
            f"< {E2E_TARGET_P99_MS:g} ms",
            verdict(e2e_passed(e2e)),
        ],
        [
            "POST → chat message p50 / max (ms)",
            f"{fmt(spread['p50_ms'])} / {fmt(spread['max_ms'])}",
            "n/a",
            "— (reported)",
            "—",
        ],
        [
            "POST → message visible to a reader p99 (ms, polled every 5 ms)",
            fmt(e2e["observed"]["p99_ms"]),
            "n/a",
            "— (reported)",
            "—",
        ],
        [
            "chat messages arrived",
            f"{e2e['arrived']} of {e2e['sent']}",
            "n/a",
            "all",
            verdict(e2e["sent"] > 0 and e2e["arrived"] == e2e["sent"]),
        ],
    ]


def _throughput_notes(results: dict[str, Any]) -> list[str]:
    config = results["config"]
    packages = results["machine"]["packages"]
    ours = results["agentws"]
    rounds = ", ".join(
        f"{name} " + " / ".join(fmt(v) for v in results[name]["accepted_per_s_all_rounds"])
        for name in ("agentws", "reference")
    )
    noise = max(results[n]["other_cpu_cores_max"] for n in ("agentws", "reference"))
    client = max(results[n]["client_cpu_cores_max"] for n in ("agentws", "reference"))
    at_end = ours["at_end"]
    missing = ours["acknowledged_missing_all_rounds"]
    lines = [
        f"- Reference: quart-trio {packages['quart-trio']} (Quart {packages['quart']}) on "
        f"Hypercorn {packages['hypercorn']}'s trio worker, h11 {packages['h11']}: "
        "`POST /hooks/<token>` awaits the body, `json.loads` it, checks it is an object, "
        "answers 202 `{event_id, status}`; stores nothing, no token lookup, no rate limit.",
        f"- Load: one client process, {config['concurrency']} senders, each its own "
        f"httpx2 {packages['httpx2']} `AsyncClient` on one keep-alive connection, POSTing "
        f"back to back a GitHub `push` ({config['body_bytes']:,} bytes of JSON, a unique "
        "`n` and `X-GitHub-Delivery` each); "
        f"{config['warmup_s']:g} s warm-up, then {config['duration_s']:g} s measured; only "
        f"202s count; servers one after the other, {config['rounds']} round(s) each in ABBA "
        "order, best round shown (all rounds in the JSON).",
        rounds_note("Accepted events/s", rounds, client, noise),
        "- The machine's speed drifts between rounds; the ratio of each agentws round to the "
        "reference round run next to it: "
        + ", ".join(
            f"{a / b:.2f}x" if b else "n/a"
            for a, b in zip(
                ours["accepted_per_s_all_rounds"],
                results["reference"]["accepted_per_s_all_rounds"],
                strict=True,
            )
        )
        + ".",
        f"- agentws durability: {'every' if not missing else 'NOT every'} event answered 202 "
        f"was in the database after the server stopped ({missing} missing, all rounds). "
        f"Meanwhile its worker had posted {at_end['messages']:,} messages for the "
        f"{at_end['events']:,} events stored in the best round "
        f"({at_end.get('queued', 0):,} still queued when the load stopped).",
    ]
    return lines


def _e2e_notes(e2e: dict[str, Any], config: dict[str, Any]) -> list[str]:
    def span(name: str) -> str:
        s = e2e[name]
        return f"p50 {fmt(s['p50_ms'])} / p99 {fmt(s['p99_ms'])} ms"

    statuses = ", ".join(f"{k} {v}" for k, v in sorted(e2e["event_statuses"].items()))
    return [
        f"- End to end: {e2e['rate']:g} deliveries/s, open loop (each sent on time in a task "
        f"of its own; p99 lateness {fmt(e2e['send_late_p99_ms'], 2)} ms), "
        f"{config['e2e_warmup_s']:g} s unmeasured then {config['e2e_seconds']:g} s "
        f"({e2e['sent']} events); POST → message is the message's `created_at` minus the "
        "wall-clock time just before the POST (one machine, one clock). The same events: "
        f"202 answer {span('ingest')}; POST → event stamped for commit {span('post_to_commit')}; "
        f"→ run started {span('commit_to_start')}; → message written "
        f"{span('start_to_message')} (`created_at`, stamped before the message's insert "
        f"commits); first seen by a reader polling every 5 ms {span('observed')}, "
        f"{span('created_to_seen')} after `created_at`. Events retried: {e2e['retried']}; "
        f"statuses (warm-up included): {statuses}.",
    ]


def _model_words(results: dict[str, Any]) -> str:
    if results["config"].get("model", "offline") == "offline":
        return "the offline model (the built-in digest, no HTTP)"
    return (
        "the model through the real anthropic SDK, against a local Messages API that answers "
        "at once (one request per event over loopback HTTP)"
    )


def render(results: dict[str, Any]) -> str:
    machine = results["machine"]
    packages = machine["packages"]
    rows: list[list[str]] = []
    if "agentws" in results:
        rows += _throughput_rows(results)
    if "e2e" in results:
        rows += _e2e_rows(results["e2e"])
    lines = [
        *report_head("webhooks", results["date"], rows, machine),
        f"- agentws {packages['agentws']} (`agentws serve`: Hypercorn {packages['hypercorn']}, "
        f"trio {packages['trio']}, SQLite store in WAL mode, synchronous=FULL): per delivery "
        "the token is looked up (active webhooks are remembered; the commit checks the "
        "webhook still exists and is active), the body read and parsed, the rate limit and "
        "dedup key checked, and the event committed before the 202 (group commit: a quarter "
        "of the deliveries waiting, at least 8, per transaction); the event "
        f"worker (AGENTWS_WORKER_CONCURRENCY={WORKER_CONCURRENCY}, webhook concurrency "
        f"{WEBHOOK_CONCURRENCY}, rate {RATE}, burst {BURST}) runs {_model_words(results)} and "
        "posts one message per event to `local:ops` on the same store meanwhile; while "
        "deliveries queue for their commit it runs one event at a time "
        "(deliveries first, see docs/webhooks.md).",
    ]
    if "agentws" in results:
        lines += _throughput_notes(results)
    if "e2e" in results:
        lines += _e2e_notes(results["e2e"], results["config"])
    for name in ("agentws", "reference"):
        for error in results.get(name, {}).get("error_samples", [])[:3]:
            lines.append(f"- {name} error: {error}")
    for error in results.get("e2e", {}).get("error_samples", [])[:3]:
        lines.append(f"- end-to-end error: {error}")
    return "\n".join(lines)
