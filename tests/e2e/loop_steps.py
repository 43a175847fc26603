"""How long the event loop's task steps keep the CPU: a trio instrument for tests.

Nothing that grows with input may run unbounded on the event loop: one long
step of one task stalls every request of the process (``/healthz``
included) and SIGTERM with it. :func:`watch_steps` records, while its block
runs, every task step that used more than a threshold of the loop thread's
CPU time, with where it spent it (stack samples of the loop thread). Tests
send their adversarial requests inside the block and assert that no step
went over the threshold.

CPU time (``time.thread_time`` of the loop thread), not wall time: a loaded
machine makes steps take longer on the clock, not use more CPU, so the
bound holds on a busy test runner. A slower machine does make them use more
CPU: the bound is scaled by :func:`tests.scaling.slowness`. Work in other
threads (SQLite's) does not count either: it does not hold the loop.

The service runs in the test's own trio run (:mod:`tests.e2e.mcp_support`),
beside the test's clients and the remotes it serves: only the steps of the
service's tasks count. They are the tasks started in the context
:func:`serving` marks (a task inherits its spawner's context), which
:func:`~tests.e2e.mcp_support.running` starts the service in.
"""

from __future__ import annotations

import collections
import gc
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from types import FrameType

import attrs
import httpx2
import trio

from tests.scaling import slowness

__all__ = ["LONG_STEP_MS", "LoopSteps", "Step", "healthz_throughout", "serving", "watch_steps"]

#: What a step may use at the limits the service accepts, on the reference
#: machine of :func:`tests.scaling.slowness`: far above what a bounded step
#: takes (a few ms), far below what the stalls took (seconds).
LONG_STEP_MS = 100.0
# A step is sampled every this often once it has run this long.
_SAMPLE_S = 0.005
_SAMPLE_AFTER_S = 0.01
_MAX_SAMPLES = 2000

# Set in the context the service's tasks are started in (see serving()).
_SERVICE: ContextVar[bool] = ContextVar("loop_steps_service", default=False)


@contextmanager
def serving() -> Iterator[None]:
    """Tasks started in this block, and every task they start, are the service's."""
    token = _SERVICE.set(True)
    try:
        yield
    finally:
        _SERVICE.reset(token)


@attrs.frozen
class Step:
    """One task step that used the CPU too long."""

    task: str
    cpu_ms: float
    wall_ms: float
    #: Of ``cpu_ms``, the garbage collector's.
    gc_ms: float
    #: The agentws functions the samples found it in, most often first.
    where: tuple[str, ...]

    def __str__(self) -> str:
        places = "; ".join(self.where) or "no sample"
        return (
            f"{self.task}: {self.cpu_ms:.0f} ms CPU ({self.gc_ms:.0f} ms of it collecting "
            f"garbage; {self.wall_ms:.0f} ms wall) in {places}"
        )


def _where(frame: FrameType | None) -> str:
    """The innermost agentws frame of a stack, and the innermost frame of all."""
    ours: str | None = None
    leaf: str | None = None
    while frame is not None:
        code = frame.f_code
        place = f"{code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno} {code.co_name}"
        if leaf is None:
            leaf = place
        if ours is None and "/agentws/" in code.co_filename:
            ours = f"{code.co_filename.split('/agentws/')[-1]}:{frame.f_lineno} {code.co_name}"
        frame = frame.f_back
    return f"{ours or '?'} (leaf {leaf})"


@attrs.define(eq=False)
class LoopSteps(trio.abc.Instrument):
    """Records task steps of more than ``threshold_ms`` of CPU (see the module docstring)."""

    threshold_ms: float
    #: The steps over the threshold, in order.
    steps: list[Step] = attrs.field(factory=list)
    #: The most CPU any one step of the service used, in ms.
    longest_ms: float = 0.0
    #: Steps of the service's tasks seen.
    seen: int = 0
    _loop_thread: int = attrs.field(factory=threading.get_ident)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _current: tuple[str, float] | None = None
    _samples: list[str] = attrs.field(factory=list)
    _cpu_at: float = 0.0
    _stop: threading.Event = attrs.field(factory=threading.Event)
    _gc_at: float = 0.0
    _gc_s: float = 0.0

    def collecting(self, phase: str, info: dict[str, int]) -> None:
        """A ``gc.callbacks`` entry: the collector's time, counted to the step it runs in."""
        if threading.get_ident() != self._loop_thread:
            return
        if phase == "start":
            self._gc_at = time.thread_time()
        elif self._gc_at:
            self._gc_s += time.thread_time() - self._gc_at
            self._gc_at = 0.0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if not task.context.get(_SERVICE):
            return
        with self._lock:
            self._current = (task.name, time.perf_counter())
            self._samples = []
        self._gc_s = 0.0
        self._cpu_at = time.thread_time()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        cpu_ms = (time.thread_time() - self._cpu_at) * 1000
        ended = time.perf_counter()
        with self._lock:
            current, samples = self._current, self._samples
            self._current = None
        if current is None:
            return
        self.seen += 1
        self.longest_ms = max(self.longest_ms, cpu_ms)
        if cpu_ms > self.threshold_ms:
            where = tuple(place for place, _ in collections.Counter(samples).most_common(3))
            wall_ms = (ended - current[1]) * 1000
            gc_ms = self._gc_s * 1000
            self.steps.append(
                Step(current[0][-80:], round(cpu_ms, 1), round(wall_ms, 1), round(gc_ms, 1), where)
            )

    def sample(self) -> None:
        """In a thread of its own: where each long step of the loop thread is, now and then."""
        while not self._stop.wait(_SAMPLE_S):
            with self._lock:
                current = self._current
            if current is None or time.perf_counter() - current[1] < _SAMPLE_AFTER_S:
                continue
            place = _where(sys._current_frames().get(self._loop_thread))
            with self._lock:
                if self._current is current and len(self._samples) < _MAX_SAMPLES:
                    self._samples.append(place)

    def stop(self) -> None:
        self._stop.set()

    def report(self) -> str:
        """The long steps, one per line (for an assertion's message)."""
        return "\n".join(str(step) for step in self.steps) or "none"

    def assert_none_long(self) -> None:
        """Fail naming the long steps, if there were any (or if no step was seen)."""
        assert self.seen, "no step of the service's tasks was seen (started within serving()?)"
        assert not self.steps, f"steps over {self.threshold_ms:g} ms of CPU:\n{self.report()}"


@contextmanager
def watch_steps(threshold_ms: float | None = None) -> Iterator[LoopSteps]:
    """Record the task steps over ``threshold_ms`` of CPU while the block runs
    (by default :data:`LONG_STEP_MS` scaled to this machine).

    Resource handling:
        The instrument and its sampling thread are removed when the block ends.
    """
    watch = LoopSteps(LONG_STEP_MS * slowness() if threshold_ms is None else threshold_ms)
    sampler = threading.Thread(target=watch.sample, name="loop-steps", daemon=True)
    sampler.start()
    trio.lowlevel.add_instrument(watch)
    gc.callbacks.append(watch.collecting)
    # As `agentws serve` does once it has started (agentws.server): what lives
    # already is out of the collector's sight, or every full pass would walk
    # the whole test session's objects in some step of the service.
    gc.freeze()
    try:
        yield watch
    finally:
        gc.unfreeze()
        gc.callbacks.remove(watch.collecting)
        trio.lowlevel.remove_instrument(watch)
        watch.stop()
        sampler.join()


@asynccontextmanager
async def healthz_throughout(base_url: str, *, limit_s: float = 2.0) -> AsyncIterator[list[float]]:
    """Ask ``/healthz`` again and again while the block runs; yield the answer times.

    Each answer must come within ``limit_s`` of wall time (generous: a busy
    machine slows every request; a stalled loop answers none), and at least
    one must have come by the end of the block.
    """
    answered: list[float] = []
    done, first = trio.Event(), trio.Event()

    async def probe() -> None:
        async with httpx2.AsyncClient(timeout=limit_s * 2) as client:
            while not done.is_set():
                started = time.perf_counter()
                with trio.move_on_after(limit_s):
                    response = await client.get(f"{base_url}/healthz")
                if time.perf_counter() - started >= limit_s:
                    raise AssertionError(f"/healthz did not answer within {limit_s:g} s")
                assert response.status_code == 200
                answered.append(time.perf_counter() - started)
                first.set()
                await trio.sleep(0.01)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(probe)
        try:
            yield answered
            with trio.fail_after(limit_s):
                await first.wait()
        finally:
            done.set()
