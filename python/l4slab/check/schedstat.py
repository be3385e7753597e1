"""How long a phase's endpoints waited for a CPU: ``/proc/<pid>/task/<tid>/schedstat``.

Linux keeps, per thread, the time it ran on a CPU, the time it spent runnable
but waiting on a run queue, and how many times it was put on a CPU
(``Documentation/scheduler/sched-stats.rst``, "/proc/<pid>/schedstat"; the
scheduler's ``sched_info_arrive``). Their ratio, wait per time on a CPU, is the
mean scheduling delay of the thread's wake-ups: how late a paced sender or an
acknowledging receiver got the CPU it asked for, whatever its algorithm.

A :class:`Sampler` thread reads these every :data:`INTERVAL_S` for every
process below ours (the emulator and what it started, found through
``/proc/<pid>/task/<tid>/children``) and sorts them by role: the processes
whose environment has ``L4SLAB_CHECK_ROLE=ROLE`` (:data:`ROLE_VAR`; the
runner exports it before it starts the client and the server command, so it
holds through ``exec``), ``emulator`` for our direct child (the
emulator itself, all its threads), ``other`` for the rest. The
counters are cumulative, so a thread seen once gives its whole life; a thread
that lived less than one interval may be missed, which only lowers the numbers.
Times are relative to the first sample that saw the client's process: the
emulator starts it as soon as its clock (the capture's time origin) starts,
so the two agree to about one interval.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["INTERVAL_S", "ROLE_VAR", "CpuWait", "Sampler"]

#: How often the counters are read (s): a few reads of small files per process.
INTERVAL_S = 0.1

#: The environment variable that names a process's role.
ROLE_VAR = "L4SLAB_CHECK_ROLE"

_PROC = Path("/proc")
#: (run ns, wait ns, times on a CPU) of one thread.
_Counters = tuple[int, int, int]


@dataclass(frozen=True)
class CpuWait:
    """One role's CPU use and wait over a window."""

    #: Time on a CPU and time runnable but waiting, summed over threads (ms).
    run_ms: float
    wait_ms: float
    #: Times a thread was put on a CPU (each wake-up or preemption return).
    slices: int
    #: The largest share of the window one thread was runnable (running or
    #: waiting): near 1, it never slept, so the CPU, not its own timers or
    #: acknowledgements, set its pace.
    busiest_share: float

    @property
    def wait_per_slice_ms(self) -> float | None:
        """The mean scheduling delay of a wake-up (ms); None without any."""
        return self.wait_ms / self.slices if self.slices else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:  # the task exited between listing and reading
        return None


def _task_files(pid: int, name: str) -> Iterator[tuple[int, str]]:
    """Each thread of ``pid`` (its id) with the text of its ``task/TID/name``, if any."""
    try:
        tasks = list((_PROC / str(pid) / "task").iterdir())
    except OSError:  # the process exited
        return
    for task in tasks:
        text = _read(task / name)
        if text:
            yield int(task.name), text


def _children(pid: int) -> list[int]:
    return [int(c) for _, text in _task_files(pid, "children") for c in text.split()]


def _threads(pid: int) -> dict[int, _Counters]:
    out: dict[int, _Counters] = {}
    for tid, text in _task_files(pid, "schedstat"):
        run, wait, slices = (int(x) for x in text.split()[:3])
        out[tid] = (run, wait, slices)
    return out


def _role(pid: int) -> str | None:
    """The process's :data:`ROLE_VAR` (from the environment it was exec'd with)."""
    try:
        env = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    key = ROLE_VAR.encode() + b"="
    for item in env.split(b"\0"):
        if item.startswith(key):
            return item[len(key) :].decode(errors="replace")
    return None


class Sampler:
    """Samples the CPU wait of the processes below this one, by role, on a thread.

    The first sample that sees a process of ``origin_role`` is time 0. Use as a
    context manager around the emulator's run.
    """

    def __init__(self, origin_role: str = "client") -> None:
        self._origin_role = origin_role
        self._origin: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="schedstat", daemon=True)
        #: (time since the origin, role, tid, counters), in sampling order.
        self.samples: list[tuple[float, str, int, _Counters]] = []
        self._role_of: dict[int, str] = {}

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(INTERVAL_S):
            self._sample(me)

    def _sample(self, me: int) -> None:
        now = time.monotonic()
        found = [(c, "emulator") for c in _children(me)]
        todo = [(c, "other") for pid, _ in found for c in _children(pid)]
        while todo:
            pid, parent = todo.pop()
            role = self._role_of.get(pid)
            if role is None:
                role = _role(pid)
                if role is not None:  # kept: it was exec'd with it
                    self._role_of[pid] = role
            # Not yet exec'd, or no role of its own: its parent's.
            role = role or parent
            found.append((pid, role))
            todo += [(c, role) for c in _children(pid)]
        if self._origin is None:
            if not any(r == self._origin_role for _, r in found):
                return
            self._origin = now
        t = now - self._origin
        for pid, role in found:
            for tid, counters in _threads(pid).items():
                self.samples.append((t, role, tid, counters))

    def wait(self, role: str, start_s: float, end_s: float) -> CpuWait | None:
        """``role``'s CPU use and wait between ``start_s`` and ``end_s`` (times
        since the origin), from the last sample at or before each; None when no
        sample of the role falls in the window."""
        before: dict[int, _Counters] = {}
        last: dict[int, _Counters] = {}
        for t, r, tid, c in self.samples:
            if r != role:
                continue
            if t <= start_s:
                before[tid] = c
            elif t <= end_s:
                last[tid] = c
        if not last:
            return None
        run = wait = slices = busiest = 0
        for tid, (r1, w1, s1) in last.items():
            r0, w0, s0 = before.get(tid, (0, 0, 0))
            run, wait, slices = run + r1 - r0, wait + w1 - w0, slices + s1 - s0
            busiest = max(busiest, r1 - r0 + w1 - w0)
        span_ns = max(1e-9, end_s - max(start_s, 0.0)) * 1e9
        return CpuWait(
            run_ms=run / 1e6,
            wait_ms=wait / 1e6,
            slices=slices,
            busiest_share=min(1.0, busiest / span_ns),
        )
