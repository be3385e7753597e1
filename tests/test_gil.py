"""The native simulator releases the GIL while it runs, so threads run cells concurrently.

How it is seen without timing anything: with the interpreter's switch interval set far
beyond the test (30 s), a thread holding the GIL keeps it until it blocks or returns to
native code that lets it go. If ``_native.run`` kept the GIL while simulating, another
thread's Python code (here: its progress callbacks) could never run while the first
thread is inside the simulation between two of its own callbacks. With the GIL released
it does, all the time: each thread's callbacks find the other one mid-run, in Rust.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass

import pytest

SCENARIO = """
format = 1
name = "gil"
duration = "20s"
[bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "50ms"
[[flows]]
cc = "cubic"
"""


@dataclass
class Track:
    callbacks: int = 0
    in_callback: bool = False
    done: bool = False
    saw_other_simulating: int = 0


def test_two_threads_simulate_at_the_same_time(native):
    tracks = [Track(), Track()]
    start = threading.Barrier(2, timeout=60)
    errors: list[BaseException] = []

    def worker(me: int) -> None:
        mine, other = tracks[me], tracks[1 - me]

        def progress(_now: float, _duration: float) -> None:
            mine.in_callback = True
            mine.callbacks += 1
            # The other thread is in the simulation, not in one of its callbacks.
            if other.callbacks > 0 and not other.done and not other.in_callback:
                mine.saw_other_simulating += 1
            mine.in_callback = False

        try:
            start.wait()
            native.run(SCENARIO, "<gil>", [], None, progress)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            mine.done = True

    previous = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in threads), "a simulation hung"
    finally:
        sys.setswitchinterval(previous)
    assert not errors, errors
    assert all(track.callbacks > 10 for track in tracks), tracks
    assert sum(track.saw_other_simulating for track in tracks) > 0, tracks


@pytest.fixture(autouse=True)
def _restore_switch_interval():
    previous = sys.getswitchinterval()
    yield
    sys.setswitchinterval(previous)
