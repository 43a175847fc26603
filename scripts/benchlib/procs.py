"""The process-measurement library of the benchmarks: child processes and what /proc says.

Every mode starts, waits for, measures and stops the services under test
through this module:

- :class:`Processes` starts servers and load clients and guarantees they
  are gone when its block exits, however it exits (an error, Ctrl+C,
  SIGTERM): each child runs in a session of its own, so the terminal's
  Ctrl+C reaches only the benchmark, which then stops them in order; each
  child also asks the kernel for SIGTERM should the benchmark die without
  cleaning up (``PR_SET_PDEATHSIG``);
- :func:`start_server` starts a server that prints its address as a JSON
  line and waits until it answers; :func:`stop_server` stops it and says
  when it exited badly; :func:`retrying` retries a start that failed;
- :func:`rss_kb`, :func:`cpu_seconds`, :func:`machine_busy_seconds`,
  :func:`open_sockets` and :func:`log_findings` read a process's memory,
  CPU time, sockets and log; :class:`CpuWindow` takes the CPU time of the
  load client, the servers and the machine at both ends of a measured
  window, and :func:`cpu_cores` turns that into the cores each used.
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import attrs
import httpx2
import trio

__all__ = [
    "BenchError",
    "Child",
    "CpuWindow",
    "Processes",
    "cpu_cores",
    "cpu_seconds",
    "log_findings",
    "machine_busy_seconds",
    "open_sockets",
    "raise_nofile_limit",
    "read_json",
    "retrying",
    "rss_kb",
    "start_server",
    "stop_server",
    "terminate_on_signals",
    "wait_until_answering",
]

# How long a stopping child gets after SIGTERM before SIGKILL.
_STOP_GRACE_S = 10.0
_PR_SET_PDEATHSIG = 1
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Server log lines worth reporting, and how many of them to keep.
_LOG_MARKERS = ("ERROR", "CRITICAL", "Traceback", "WARNING")
_LOG_SAMPLES = 5

T = TypeVar("T")


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
    """User + system CPU time of ``pid`` (all its threads) so far, its child processes' included.

    A server's children work for it (agentws's SQLite read processes run its
    searches): the CPU of those running is added, and that of those it has
    waited for is in its own counters (cutime, cstime).
    """
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    total = sum(int(field) for field in fields[11:15]) / _CLOCK_TICKS
    for child in _children(pid):
        try:
            total += cpu_seconds(child)
        except OSError:
            continue  # it ended meanwhile: its time is its parent's once waited for
    return total


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.extend(int(child) for child in (task / "children").read_text().split())
        except OSError:
            continue  # the thread ended meanwhile
    return found


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


def open_sockets(pid: int) -> int:
    """Sockets ``pid`` has open (its listening sockets included), from /proc/PID/fd."""
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd).startswith("socket:")
    return count


def log_findings(child: Child) -> dict[str, Any]:
    """Warnings and errors in a server's log (its stderr): how many, and a few of them."""
    try:
        lines = child.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {"lines": 0, "flagged": 0, "samples": []}
    flagged = [line for line in lines if any(marker in line for marker in _LOG_MARKERS)]
    return {"lines": len(lines), "flagged": len(flagged), "samples": flagged[:_LOG_SAMPLES]}


class CpuWindow:
    """CPU time of this process, of the servers and of the machine at both ends of a window."""

    def __init__(self, server_pid: int | None, others: dict[str, int] | None = None) -> None:
        self.server_pid = server_pid
        #: More processes whose CPU time counts: name -> pid (a gateway's upstream).
        self.others = dict(others or {})
        self.cpu: dict[str, float] = {}

    def start(self, nursery: trio.Nursery, measure_from: float, measure_until: float) -> None:
        """Sample at ``measure_from`` and ``measure_until`` (``time.perf_counter`` times)."""
        nursery.start_soon(self._sample, measure_from, "from")
        nursery.start_soon(self._sample, measure_until, "until")

    async def _sample(self, at: float, name: str) -> None:
        await trio.sleep(max(0.0, at - time.perf_counter()))
        self.cpu[f"client_{name}"] = time.process_time()
        self.cpu[f"machine_{name}"] = machine_busy_seconds()
        if self.server_pid:
            self.cpu[f"server_{name}"] = cpu_seconds(int(self.server_pid))
        for other, pid in self.others.items():
            self.cpu[f"{other}_{name}"] = cpu_seconds(pid)

    def figures(self) -> dict[str, float | None]:
        """``client_cpu_s``, ``server_cpu_s`` (None without a server), ``machine_busy_s``,
        ``<other>_cpu_s`` of each other process, and ``measured_cpu_s``: all of them."""
        cpu = self.cpu
        others = {
            f"{other}_cpu_s": cpu[f"{other}_until"] - cpu[f"{other}_from"] for other in self.others
        }
        client = cpu["client_until"] - cpu["client_from"]
        server = (cpu["server_until"] - cpu["server_from"]) if self.server_pid else None
        return {
            "client_cpu_s": client,
            "server_cpu_s": server,
            "machine_busy_s": cpu["machine_until"] - cpu["machine_from"],
            **others,
            "measured_cpu_s": client + (server or 0.0) + sum(others.values()),
        }


def cpu_cores(result: dict[str, Any]) -> None:
    """Add to a load client's result the cores its processes and the others used.

    ``other_cpu_cores``: the machine's busy time less that of the processes
    measured (the client, the server, any other), over the measured window;
    ``client_cpu_cores`` and ``server_cpu_cores``: the client's and the server's.
    """
    seconds = result["seconds"]
    ours = result.get("measured_cpu_s")
    if ours is None:
        ours = result["client_cpu_s"] + (result.get("server_cpu_s") or 0.0)
    result["other_cpu_cores"] = max(0.0, result["machine_busy_s"] - ours) / seconds
    result["client_cpu_cores"] = result["client_cpu_s"] / seconds
    result["server_cpu_cores"] = (result.get("server_cpu_s") or 0.0) / seconds


def wait_until_answering(
    child: Child, url: str, timeout: float, *, want_status: int | None = None
) -> None:
    """Poll ``url`` until it answers (with ``want_status``, when given) or ``child`` dies.

    :raises BenchError: ``child`` exited, or ``timeout`` seconds went by.
    """
    deadline = time.monotonic() + timeout
    status = None
    while True:
        try:
            status = httpx2.get(url, timeout=2.0).status_code
            if want_status is None or status == want_status:
                return
        except httpx2.TransportError:
            pass
        if child.process.poll() is not None or time.monotonic() > deadline:
            if want_status is None:
                raise BenchError(f"{child.name} does not answer at {url}\n{child.log_tail()}")
            raise BenchError(
                f"{child.name} is not ready at {url} (last answer: {status})\n{child.log_tail()}"
            )
        time.sleep(0.1)


def start_server(
    procs: Processes,
    name: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float,
    ready: Callable[[dict[str, Any]], str] | None = None,
    want_status: int | None = None,
) -> tuple[Child, dict[str, Any]]:
    """Start a server that prints its addresses as one JSON line; wait until it answers.

    ``ready(line)`` names the URL to poll (default: the line's ``base_url``),
    until it answers ``want_status`` (any status when None). Returns the
    child and the line it printed.

    :raises BenchError: it printed nothing in time, or did not answer; it is stopped.
    """
    child = procs.start(name, argv, env=env)
    try:
        line = child.read_json_line(timeout_s)
        url = ready(line) if ready is not None else str(line["base_url"])
        wait_until_answering(child, url, timeout_s, want_status=want_status)
    except BenchError:
        procs.stop(child)
        raise
    return child, line


def stop_server(procs: Processes, child: Child, say: Callable[[str], None]) -> int:
    """Stop ``child``; its exit status, said with its log's tail when it is not 0."""
    status = procs.stop(child)
    if status != 0:
        say(f"{child.name} exited with status {status}\n{child.log_tail()}")
    return status


def retrying(
    what: str,
    attempt: Callable[[], T],
    say: Callable[[str], None],
    *,
    attempts: int = 3,
    pause_s: float = 3.0,
) -> T:
    """``attempt()``, tried again after a pause while it raises :class:`BenchError`.

    For starting agentws while others may be editing it: an import that
    failed half-way through an edit works a moment later.
    """
    for n in range(1, attempts + 1):
        try:
            return attempt()
        except BenchError as exc:
            if n == attempts:
                raise
            say(f"{what} failed (attempt {n} of {attempts}), retrying: {str(exc)[-300:]}")
            time.sleep(pause_s)
    raise AssertionError("unreachable")
