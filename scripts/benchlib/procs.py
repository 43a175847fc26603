"""Child processes of a benchmark, and what /proc says about them.

:class:`Processes` starts servers and load clients and guarantees they are
gone when its block exits, however it exits (an error, Ctrl+C, SIGTERM):
each child runs in a session of its own, so the terminal's Ctrl+C reaches
only the benchmark, which then stops them in order; each child also asks
the kernel for SIGTERM should the benchmark die without cleaning up
(``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import attrs

__all__ = [
    "BenchError",
    "Child",
    "Processes",
    "cpu_seconds",
    "machine_busy_seconds",
    "raise_nofile_limit",
    "read_json",
    "rss_kb",
    "terminate_on_signals",
]

# How long a stopping child gets after SIGTERM before SIGKILL.
_STOP_GRACE_S = 10.0
_PR_SET_PDEATHSIG = 1
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    """The benchmark cannot go on; the message says why (and where the logs are)."""


@attrs.define(eq=False)
class Child:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def read_json_line(self, timeout_s: float) -> dict[str, Any]:
        """The first line the child prints on stdout, as JSON; BenchError if none in time."""
        stdout = self.process.stdout
        if stdout is None:
            raise BenchError(f"{self.name}: stdout is not a pipe")
        deadline = time.monotonic() + timeout_s
        buffer = b""
        while b"\n" not in buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BenchError(
                    f"{self.name} printed nothing in {timeout_s:g} s\n{self.log_tail()}"
                )
            ready, _, _ = select.select([stdout], [], [], remaining)
            if ready:
                chunk = os.read(stdout.fileno(), 65536)
                if not chunk:
                    raise BenchError(
                        f"{self.name} exited ({self.process.wait()}) before it was ready\n"
                        f"{self.log_tail()}"
                    )
                buffer += chunk
        line = buffer.split(b"\n", 1)[0]
        try:
            document: dict[str, Any] = json.loads(line)
        except ValueError:
            raise BenchError(f"{self.name} printed {line[:200]!r}, not JSON") from None
        return document


# Looked up once here: between fork and exec the child only calls it.
_prctl = ctypes.CDLL(None, use_errno=True).prctl


def _child_setup() -> None:
    # Runs in the child between fork and exec: SIGTERM when the benchmark dies.
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Processes:
    """Owns every child process of a run; ``close`` (or the end of ``with``) stops them all."""

    def __init__(self, log_dir: Path) -> None:
        self._log_dir = log_dir
        self._children: list[Child] = []

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: int | IO[Any] | None = subprocess.DEVNULL,
    ) -> Child:
        """Start ``argv`` with stdout on a pipe and stderr in ``<log_dir>/<name>.log``."""
        log_path = self._log_dir / f"{name}.log"
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                list(argv),
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=log,
                env=dict(env) if env is not None else None,
                start_new_session=True,
                preexec_fn=_child_setup,
            )
        child = Child(name, process, log_path)
        self._children.append(child)
        return child

    def stop(self, child: Child, grace_s: float = _STOP_GRACE_S) -> int:
        """SIGTERM, then SIGKILL after ``grace_s``; the exit status."""
        process = child.process
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
        with contextlib.suppress(ValueError):
            self._children.remove(child)
        return process.returncode

    def close(self) -> None:
        for child in reversed(list(self._children)):
            self.stop(child)


@contextlib.contextmanager
def terminate_on_signals() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into ``KeyboardInterrupt``, so cleanup runs.

    SIGINT is set explicitly too: a shell starts background jobs with it ignored.
    """

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {
        sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def raise_nofile_limit(wanted: int) -> int:
    """Raise this process's soft RLIMIT_NOFILE towards ``wanted`` (children inherit it).

    Returns the soft limit now in force, which is below ``wanted`` when the
    hard limit is.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """Resident set size of ``pid`` in KiB (VmRSS of /proc/PID/status).

    ``field="RssAnon"``: its anonymous part only (heaps, not mapped files:
    pages of a SQLite database its readers map count in VmRSS).
    """
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise BenchError(f"no {field} for process {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` (all its threads) so far."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def machine_busy_seconds() -> float:
    """CPU time every core of the machine has spent busy so far (/proc/stat), in seconds."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / _CLOCK_TICKS


def read_json(text: str | bytes, what: str) -> dict[str, Any]:
    try:
        document: dict[str, Any] = json.loads(text)
    except ValueError:
        raise BenchError(f"{what} is not JSON: {text[:300]!r}") from None
    return document
