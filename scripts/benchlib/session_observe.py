"""The observers of a revocation: the server's CPU timeline and its loop lag, taken from outside.

:func:`start_observers` starts, before a revocation, the CPU sampler
(:mod:`benchlib.session_cpu`: the server, the client's processes, the
observers themselves, every 20 ms) and, given a URL, the loop-lag probe
(:mod:`benchlib.loop_lag`: ``GET /healthz`` every 10 ms). Once the
revocation's time is known, :meth:`Observers.stop_at` tells them when to
stop (that time plus the 10 s to watch), and :meth:`Observers.figures`
waits for them and reads their results around it. Both run as processes of
their own so that neither the client's work nor a stall of its loop shows
in their clocks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from benchlib.loop_lag import loop_lag
from benchlib.session_cpu import timeline

if TYPE_CHECKING:
    from benchlib.procs import Child, Processes

__all__ = ["AFTER_S", "LEAD_S", "Observers", "start_observers"]

# The window: the 10 s after a revocation.
AFTER_S = 10.0
# Seconds the observers run before the revocation: the server's baseline.
LEAD_S = 1.0
_HERE = Path(__file__).resolve().parent
_START_TIMEOUT_S = 30.0
# The observers stop by themselves after this long, whatever they were told.
_MAX_S = 300.0
# How long past its stop time an observer may take to print its results.
_RESULTS_TIMEOUT_S = 30.0


class Observers:
    """The sampler and (optionally) the probe of one revocation."""

    def __init__(self, procs: Processes, sampler: Child, probe: Child | None) -> None:
        self._procs = procs
        self._sampler = sampler
        self._probe = probe

    @property
    def children(self) -> list[Child]:
        return [self._sampler] + ([self._probe] if self._probe else [])

    def stop_at(self, wall_time: float) -> None:
        """Tell each observer to stop at ``wall_time`` (``time.time()``)."""
        for child in self.children:
            stdin = child.process.stdin
            if stdin is not None and not stdin.closed:
                stdin.write(f"{wall_time!r}\n".encode())
                stdin.flush()

    async def _result(self, child: Child) -> dict[str, Any]:
        stdout = child.process.stdout
        if stdout is None:
            return {}
        with trio.move_on_after(_RESULTS_TIMEOUT_S + AFTER_S):
            text = await trio.to_thread.run_sync(stdout.read, abandon_on_cancel=True)
            lines = [line for line in text.splitlines() if line.strip()]
            document: dict[str, Any] = json.loads(lines[-1]) if lines else {}
            return document
        return {}

    async def figures(self, origin: float, last_end: float | None) -> dict[str, Any]:
        """Wait for the observers to stop; their figures around ``origin`` (see the modules).

        Resource handling:
            Both processes are stopped before this returns.
        """
        try:
            cpu = await self._result(self._sampler)
            probe = await self._result(self._probe) if self._probe else {}
        finally:
            self.close()
        figures: dict[str, Any] = {}
        if cpu.get("rows"):
            figures["cpu"] = timeline(cpu, origin, last_end, AFTER_S)
        if probe.get("rows"):
            figures["loop_lag"] = loop_lag(probe, origin, AFTER_S)
        return figures

    def close(self) -> None:
        for child in self.children:
            self._procs.stop(child)
            if child.process.stdin is not None:
                child.process.stdin.close()


def start_observers(
    procs: Processes,
    name: str,
    server_pid: int,
    client_pids: list[int],
    healthz_url: str | None,
) -> Observers:
    """Start the observers of one revocation; returns once both are sampling.

    Resource handling:
        The caller ends them with :meth:`Observers.figures` (or ``close``).
    """
    python = sys.executable
    probe = None
    if healthz_url:
        argv = [python, str(_HERE / "loop_lag.py"), healthz_url, "--max-seconds", str(_MAX_S)]
        probe = procs.start(f"{name}-loop-lag", argv, stdin=subprocess.PIPE)
    pids = [f"server={server_pid}"] + [f"client={pid}" for pid in client_pids]
    if probe is not None:
        pids.append(f"observers={probe.pid}")
    argv = [python, str(_HERE / "session_cpu.py"), "--max-seconds", str(_MAX_S), *pids]
    sampler = procs.start(f"{name}-cpu", argv, stdin=subprocess.PIPE)
    observers = Observers(procs, sampler, probe)
    try:
        for child in observers.children:
            child.read_json_line(_START_TIMEOUT_S)
    except BaseException:
        observers.close()
        raise
    return observers
