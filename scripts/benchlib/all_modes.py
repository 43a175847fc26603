"""``scripts/bench`` with no mode: every mode, one after the other, then one report.

Each mode runs as ``scripts/bench_<mode>.py`` in a process of its own, its
progress shown live on stderr, its Markdown (stdout) kept, its JSON written
to ``<out-dir>/<mode>.json``. Then one Markdown document is printed and
written to ``<out-dir>/report.md``: the machine, the date, the software (with
the git commit and whether agentws had uncommitted changes), how each mode
was run, a summary (the reference each mode stands agentws beside, its wall
time, the targets it met) and every mode's own report, its tables side by
side with its reference as that mode defines them. ``<out-dir>/report.json``
holds the same, with each mode's JSON in full.

To keep the whole run short (about 14 minutes on a 2-core machine), some
modes run here with settings lighter than their own defaults
(:data:`ALL_MODES_ARGS`); the report says which. ``--full`` runs every mode
with its own defaults.

Run by ``scripts/bench``: ``python all_modes.py --modes mcp,webhooks,sessions
[--check] [--keep] [--full] [--out-dir DIR]``. Exit status: 0 when every mode
completed, 1 when one failed, 2 when ``--check`` was given and a target was
missed, 130 when interrupted (the report then covers the modes that ran).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import cli
from benchlib.machine import describe_machine
from benchlib.procs import terminate_on_signals
from benchlib.report import machine_line, markdown_table, write_json

SCRIPTS = Path(__file__).resolve().parent.parent
REPO = SCRIPTS.parent

#: Options a mode gets in the all-modes run instead of its defaults (not with --full).
ALL_MODES_ARGS: dict[str, list[str]] = {}
#: Why, for the report.
ALL_MODES_WHY = "so the whole run stays short on 2 cores"

#: What each mode stands agentws beside.
REFERENCES = {
    "mcp": (
        "the mcp SDK's MCPServer on uvicorn (same search_context, same index), and the floor: "
        "a plain Hypercorn/trio handler running the same query in a thread"
    ),
    "webhooks": "a bare QuartTrio endpoint on Hypercorn (parses the JSON, stores nothing)",
    "sessions": (
        "the mcp SDK's MCPServer on uvicorn (Streamable HTTP and legacy SSE), and the floor: "
        "bare QuartTrio SSE streams, the collector frozen once they are open"
    ),
    "approvals": "none: absolute targets (a list under 200 ms and under 1 MB)",
    "dashboard": "none: an absolute target (every page under 300 ms, 100,000 events in store)",
    "gateway": (
        "one upstream MCP server (the mcp SDK's MCPServer, an echo tool) called directly, "
        "the floor (a lean Hypercorn proxy with a pooled h11 client) and IBM ContextForge "
        "in front of it where it installs"
    ),
}
_PACKAGES = [
    "agentws",
    "mcp",
    "hypercorn",
    "trio",
    "quart",
    "quart-trio",
    "uvicorn",
    "starlette",
    "httpx2",
]
# Lines of a failed mode's stderr kept for the report.
_TAIL_LINES = 25
# How long a mode gets to stop after SIGTERM (it stops its own servers first).
_STOP_GRACE_S = 30.0
_VERDICT = re.compile(r"^\|.*\|\s*(PASS|MISS)\b[^|]*\|\s*$")
_JSON_LINE = re.compile(r"^\(JSON: .*\)$")

_say = cli.logger("all")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench",
        description=(
            "Run every benchmark mode, one after the other, then print one report (machine, "
            "date, a summary and each mode's tables beside its reference) and write it to "
            "<out-dir>/report.md, with <out-dir>/report.json combining the modes' JSON."
        ),
    )
    parser.add_argument("--modes", required=True, help="the modes, comma-separated, in order")
    parser.add_argument(
        "--check", action="store_true", help="exit with status 2 when a target is missed"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep each mode's temp directory (logs, databases)"
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="run each mode with its own defaults (longer than the all-modes settings)",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=REPO / "bench-results",
        help="where the modes' JSON and the report go (default: bench-results/)",
    )
    args = parser.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    return args


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def _git() -> dict[str, Any]:
    """The commit measured, and the uncommitted changes of agentws/ (others may be editing)."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(REPO), *args],  # noqa: S607 - git from PATH, as a developer runs it
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    changed = [line[3:] for line in git("status", "--porcelain", "--", "agentws").splitlines()]
    return {"commit": git("rev-parse", "--short", "HEAD") or None, "agentws_changed": changed}


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _pump(stream: IO[bytes], tail: deque[str]) -> None:
    """Copy a mode's stderr to ours as it comes, keeping its last lines."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace")
        sys.stderr.write(line)
        sys.stderr.flush()
        tail.append(line.rstrip("\n"))


def _run_mode(mode: str, argv: list[str]) -> dict[str, Any]:
    """Run one mode; its exit status, wall time, Markdown and stderr tail."""
    _say(f"{mode}: {' '.join(argv[1:])}")
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tail: deque[str] = deque(maxlen=_TAIL_LINES)
    assert process.stderr is not None  # noqa: S101 - Popen with stderr=PIPE
    pump = threading.Thread(target=_pump, args=(process.stderr, tail), daemon=True)
    pump.start()
    interrupted = False
    # stdout read here, stderr by the pump alone: communicate() would read (and
    # close) stderr too, from under the pump.
    assert process.stdout is not None  # noqa: S101 - Popen with stdout=PIPE
    try:
        out = process.stdout.read()
        process.wait()
    except KeyboardInterrupt:
        interrupted = True
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        out = process.stdout.read()
    pump.join(timeout=5)
    wall_s = time.monotonic() - started
    status = 130 if interrupted else process.returncode
    _say(f"{mode}: done in {_duration(wall_s)} (exit status {status})")
    markdown = "\n".join(
        line
        for line in out.decode("utf-8", errors="replace").strip().splitlines()
        if not _JSON_LINE.match(line)
    ).strip()
    return {
        "argv": argv[1:],
        "exit_status": status,
        "wall_s": wall_s,
        "markdown": markdown,
        "stderr_tail": list(tail),
    }


def _verdicts(markdown: str) -> dict[str, int]:
    """PASS and MISS in the result column of a mode's tables."""
    counts = {"PASS": 0, "MISS": 0}
    for line in markdown.splitlines():
        match = _VERDICT.match(line.strip())
        if match:
            counts[match[1]] += 1
    return counts


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        document: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return document


def _settings_line(args: argparse.Namespace, runs: dict[str, dict[str, Any]]) -> str:
    parts = []
    for mode in runs:
        lighter = [] if args.full else ALL_MODES_ARGS.get(mode, [])
        parts.append(
            f"`{mode}` " + (f"with `{' '.join(lighter)}`" if lighter else "with its defaults")
        )
    line = "- Run: `scripts/bench" + (" --full" if args.full else "") + "`: " + "; ".join(parts)
    lighter_modes = [m for m in runs if ALL_MODES_ARGS.get(m)]
    if lighter_modes and not args.full:
        line += (
            f". Lighter than their own defaults here {ALL_MODES_WHY}: run `scripts/bench MODE` "
            "(or `scripts/bench --full`) for each mode's full run"
        )
    return line + "."


def render(report: dict[str, Any], args: argparse.Namespace) -> str:
    machine = report["machine"]
    packages = machine["packages"]
    git = report["git"]
    runs: dict[str, dict[str, Any]] = report["modes"]
    changed = git["agentws_changed"]
    software = (
        f"- Software: agentws {packages['agentws']}"
        + (f" at git {git['commit']}" if git["commit"] else "")
        + (
            f" with uncommitted changes in {len(changed)} file(s) of agentws/"
            if changed
            else " (agentws/ as committed)"
        )
        + "; "
        + ", ".join(f"{name} {packages[name]}" for name in _PACKAGES[1:])
        + "."
    )
    load = report["load_average"]
    rows = []
    for mode, run in runs.items():
        verdicts = run["verdicts"]
        met = verdicts["PASS"]
        total = met + verdicts["MISS"]
        rows.append(
            [
                f"`{mode}`",
                REFERENCES.get(mode, "—"),
                _duration(run["wall_s"]),
                f"{met} of {total}" if total else "—",
                str(run["exit_status"]) + ("" if run["exit_status"] == 0 else " (see below)"),
            ]
        )
    lines = [
        f"# agentws benchmarks — {report['date']}",
        "",
        f"Every mode of `scripts/bench`, one after the other, on loopback, in "
        f"{_duration(report['total_wall_s'])} of wall time. Each mode's table shows agentws "
        "beside its reference, with its targets (PASS/MISS) as the issue that added the "
        "mode defined them.",
        "",
        machine_line(machine),
        software,
        _settings_line(args, runs),
        "- Machine load average (1, 5, 15 min) at the start "
        + (f"{load['start']}" if load["start"] else "—")
        + ", at the end "
        + (f"{load['end']}" if load["end"] else "—")
        + ". Each mode says how much CPU other processes took during its measured windows; "
        "figures taken while the machine was busy are noisy.",
        "",
        "## Summary",
        "",
        markdown_table(["mode", "reference", "wall time", "targets met", "exit status"], rows),
    ]
    for mode, run in runs.items():
        lines.append("")
        if run["markdown"]:
            lines.append(run["markdown"])
        else:
            lines.append(
                f"## scripts/bench {mode} — did not complete (exit status {run['exit_status']})"
            )
            lines.append("")
            lines.append("```")
            lines.extend(run["stderr_tail"])
            lines.append("```")
        if run["exit_status"] not in (0, 2) and run["markdown"]:
            lines.append(
                f"- This mode exited with status {run['exit_status']}: a failure (see its notes)."
            )
    return "\n".join(lines) + "\n"


def _worst(statuses: list[int]) -> int:
    if 130 in statuses:
        return 130
    if any(s not in (0, 2) for s in statuses):
        return 1
    return 2 if 2 in statuses else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "kind": "agentws scripts/bench report",
        "date": cli.now_utc(),
        "machine": describe_machine(_PACKAGES),
        "git": _git(),
        "load_average": {"start": _load_average(), "end": None},
        "settings": {
            "full": args.full,
            "all_modes_args": {} if args.full else ALL_MODES_ARGS,
            "check": args.check,
        },
        "modes": {},
    }
    started = time.monotonic()
    interrupted = False
    with terminate_on_signals():
        for mode in args.modes:
            json_out = out_dir / f"{mode}.json"
            argv = [sys.executable, str(SCRIPTS / f"bench_{mode}.py")]
            argv += [] if args.full else ALL_MODES_ARGS.get(mode, [])
            argv += ["--json-out", str(json_out)]
            argv += ["--check"] if args.check else []
            argv += ["--keep"] if args.keep else []
            with contextlib.suppress(FileNotFoundError):
                json_out.unlink()  # a stale file must not pass for this run's
            try:
                run = _run_mode(mode, argv)
            except KeyboardInterrupt:
                interrupted = True
                break
            run["verdicts"] = _verdicts(run["markdown"])
            run["json"] = str(json_out)
            run["results"] = _read_json(json_out)
            report["modes"][mode] = run
            if run["exit_status"] == 130:
                interrupted = True
                break
    report["total_wall_s"] = time.monotonic() - started
    report["load_average"]["end"] = _load_average()
    markdown = render(report, args)
    (out_dir / "report.md").write_text(markdown)
    write_json(out_dir / "report.json", report)
    print(markdown)
    print(f"(report: {out_dir / 'report.md'}, JSON: {out_dir / 'report.json'})")
    if interrupted:
        return 130
    return _worst([run["exit_status"] for run in report["modes"].values()])


if __name__ == "__main__":
    sys.exit(main())
