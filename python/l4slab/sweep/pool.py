"""Where cells run: worker processes (the default), threads, or a Dask cluster.

Every executor takes the tasks and a callback, calls :func:`~l4slab.sweep.cell.run_cell`
for each task somewhere, and hands each outcome to the callback in the calling thread,
as it arrives. Which executor ran a cell changes nothing in its results (the
simulation is a pure function of the scenario, the seed and the version).

Stopping (``KeyboardInterrupt`` or SIGTERM in the calling thread) stops the workers'
simulations where they are: a process worker gets SIGTERM, which its simulation turns
into ``KeyboardInterrupt`` (the cell's staging directory is removed); a thread worker's
simulation sees a flag at its next progress check; a Dask cluster's futures are
cancelled (a cell already running there finishes on its worker, and its result is
dropped). The interrupt is then raised again to the caller.

A local worker process that dies (killed, out of memory, a crash of the interpreter)
breaks the process pool: the pool is started again and the cells that were running are
run again, up to :data:`MAX_ATTEMPTS` times each; a cell still unfinished then is
recorded as failed. A Dask cluster does the same for a lost worker or node (the
scheduler's ``allowed-failures``, 3 by default; then ``KilledWorker``).

A local worker dies with its parent: a ``sweep`` or ``reproduce`` killed with SIGKILL
leaves no worker running (the kernel sends each one SIGTERM, which stops it as above).
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from concurrent.futures.thread import ThreadPoolExecutor
from typing import Any, TypeVar

from l4slab.sweep.cell import CellOutcome, CellTask, run_cell, worker_version

__all__ = [
    "MAX_ATTEMPTS",
    "ClusterError",
    "OnOutcome",
    "default_jobs",
    "in_worker",
    "run_dask",
    "run_in_processes",
    "run_processes",
    "run_threads",
]

T = TypeVar("T")
R = TypeVar("R")

#: How many times a local cell is started before its worker's deaths make it a failure.
MAX_ATTEMPTS = 3

#: ``on_outcome(task, outcome)``: called in the calling thread for each finished cell.
OnOutcome = Callable[[CellTask, CellOutcome], None]


class ClusterError(RuntimeError):
    """The Dask cluster cannot run the sweep (unreachable, or another l4slab version)."""


def default_jobs() -> int:
    """Local workers by default: every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------- processes


#: In a worker process: whether it is running a task now.
_busy = False
#: Whether this process is one of run_in_processes' workers.
_pool_worker = False


def _worker_init(parent: int) -> None:
    """In each worker process: Ctrl-C at the terminal is the parent's to handle (it
    stops the workers with SIGTERM), SIGTERM stops the running simulation, and the
    parent's death, however it dies (SIGKILL too), sends this worker SIGTERM."""
    global _pool_worker
    _pool_worker = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    _die_with_parent(parent)


def _die_with_parent(parent: int) -> None:
    """``prctl(PR_SET_PDEATHSIG, SIGTERM)`` (Linux, through the native module's OS
    boundary): a SIGKILLed ``sweep`` or ``reproduce`` takes its workers with it instead
    of leaving them running its cells for nobody. The parent is the thread that started
    the pool (it lives until the pool is shut down). A parent already dead before the
    call is caught by comparing ``getppid()`` with the pid it passed (prctl(2): the
    signal is only sent on a later death)."""
    if sys.platform.startswith("linux"):
        from l4slab import _native

        _native.die_with_parent()
    if os.getppid() != parent:
        os._exit(128 + signal.SIGTERM)  # orphaned already: nobody will read our results


def _on_sigterm(signum: int, frame: object) -> None:
    if _busy:
        # The simulation stops and the cell's staging is removed as the interrupt
        # unwinds; in_worker then ends the process.
        raise KeyboardInterrupt
    os._exit(128 + signum)  # idle: nothing to clean up


def in_worker(fn: Callable[[T], R], task: T) -> tuple[R, tuple[str, ...]]:
    """``fn(task)`` in a worker (a process or a Dask worker), with the notes about output
    directories it made (``OutputWarning``), for the client to show: a worker's stderr is
    nobody's to read."""
    from l4slab.output import OutputWarning

    global _busy
    _busy = True
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", OutputWarning)
            result = fn(task)
        notes = tuple(str(w.message) for w in caught if issubclass(w.category, OutputWarning))
        return result, notes
    except KeyboardInterrupt:
        if not _pool_worker:
            raise  # not a worker process of ours (a Dask worker, a thread): let it be
        # SIGTERM (our parent stopping us, or a broken pool terminating its workers):
        # what the task was writing is cleaned up by now; end the process, as SIGTERM
        # means, rather than go back to a queue nobody feeds any more.
        os._exit(128 + signal.SIGTERM)
    finally:
        _busy = False


def _show(notes: Iterable[str]) -> None:
    from l4slab.output import OutputWarning

    for note in notes:
        warnings.warn(note, OutputWarning, stacklevel=3)


def _died(task: CellTask, attempts: int) -> CellOutcome:
    return CellOutcome(
        task.key,
        False,
        error=(
            f"WorkerDied: the worker process running this cell died {attempts} times "
            "(killed, out of memory, or crashed)"
        ),
        traceback=None,
    )


def run_processes(tasks: Sequence[CellTask], on_outcome: OnOutcome, *, jobs: int) -> None:
    """Run the cells in ``jobs`` worker processes (spawned), at most ``jobs`` at a time."""

    def on_result(task: CellTask, outcome: CellOutcome) -> None:
        on_outcome(task, outcome)

    run_in_processes(tasks, run_cell, on_result, jobs=jobs, on_died=_died)


def run_in_processes(
    tasks: Sequence[T],
    fn: Callable[[T], R],
    on_result: Callable[[T, R], Iterable[T] | None],
    *,
    jobs: int,
    on_died: Callable[[T, int], R],
) -> None:
    """Run ``fn(task)`` for each task in ``jobs`` spawned worker processes, at most ``jobs``
    at a time, and hand each result to ``on_result`` in this thread, as it arrives.

    ``fn`` must be picklable (a module-level function, or a ``functools.partial`` of one).
    ``on_result`` may return more tasks, to run next. A task whose worker died is run
    again in a new pool, up to :data:`MAX_ATTEMPTS` times; then ``on_died(task,
    attempts)`` makes its result. An exception from ``fn`` (or from a callback) stops
    the workers and propagates, as does ``KeyboardInterrupt``.
    """
    queue = list(reversed(tasks))  # pop() takes them in order
    attempts: dict[int, int] = {}
    context = multiprocessing.get_context("spawn")
    while queue:
        pool = ProcessPoolExecutor(
            max_workers=max(1, min(jobs, len(queue))),
            mp_context=context,
            initializer=_worker_init,
            initargs=(os.getpid(),),
        )
        running: dict[Future[tuple[R, tuple[str, ...]]], T] = {}
        broken = False
        try:
            while queue or running:
                while queue and len(running) < jobs and not broken:
                    task = queue.pop()
                    attempts[id(task)] = attempts.get(id(task), 0) + 1
                    running[pool.submit(in_worker, fn, task)] = task
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    task = running.pop(future)
                    try:
                        result, notes = future.result()
                    except BrokenProcessPool:
                        broken = True
                        if attempts[id(task)] >= MAX_ATTEMPTS:
                            more = on_result(task, on_died(task, attempts[id(task)]))
                            queue.extend(reversed(list(more or ())))
                        else:
                            queue.append(task)
                        continue
                    _show(notes)
                    more = on_result(task, result)
                    queue.extend(reversed(list(more or ())))
                if broken and not running:
                    break
        except BaseException:
            _stop_processes(pool)
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        if broken:
            # A worker killed while it held the call queue's lock leaves the others
            # blocked on that lock for good, where SIGTERM (which a worker turns into
            # stopping its simulation) does not reach them, and shutdown would wait
            # forever. Nothing runs on a broken pool any more: kill what is left.
            _stop_processes(pool, signal.SIGKILL)
        pool.shutdown(wait=True)


def _stop_processes(pool: ProcessPoolExecutor, signum: int = signal.SIGTERM) -> None:
    """``signum`` to each worker process (SIGTERM: its running simulation stops and
    cleans up)."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signum)


# --------------------------------------------------------------------------- threads


def run_threads(tasks: Sequence[CellTask], on_outcome: OnOutcome, *, jobs: int) -> None:
    """Run the tasks in ``jobs`` threads of this process (the simulator releases the GIL)."""
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(tasks) or 1)))
    try:
        futures = {pool.submit(run_cell, task, stop.is_set): i for i, task in enumerate(tasks)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=futures.__getitem__):
                on_outcome(tasks[futures[future]], future.result())
    except BaseException:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


# --------------------------------------------------------------------------- dask


def run_dask(tasks: Sequence[CellTask], on_outcome: OnOutcome, *, client: Any) -> None:
    """Run the tasks on a Dask cluster (``client``: a ``distributed.Client``).

    The workers send each bundle back (``task.out`` must be ``None``), so they need no
    file system shared with the client; they need this l4slab version installed.
    """
    as_completed = _distributed().as_completed
    check_cluster(client)
    futures = [
        client.submit(in_worker, run_cell, task, key=f"l4slab-cell-{task.key}", pure=False)
        for task in tasks
    ]
    by_key = {future.key: task for future, task in zip(futures, tasks, strict=True)}
    try:
        for future in as_completed(futures):
            task = by_key[future.key]
            try:
                outcome, notes = future.result()
                _show(notes)
            except Exception as exc:  # KilledWorker: the cell took its workers down
                outcome = CellOutcome(
                    task.key,
                    False,
                    error=f"{type(exc).__name__}: {' '.join(str(exc).split())}",
                )
            future.release()
            on_outcome(task, outcome)
    except BaseException:
        with contextlib.suppress(Exception):
            client.cancel(futures)
        raise


def check_cluster(client: Any) -> None:
    """Raise :class:`ClusterError` unless every worker runs this l4slab version."""
    mine = worker_version()
    try:
        theirs = client.run(worker_version)
    except Exception as exc:
        raise ClusterError(
            f"the Dask workers cannot run l4slab ({type(exc).__name__}: {exc}); install "
            f"l4slab {mine} where the workers run"
        ) from None
    if not theirs:
        raise ClusterError("the Dask cluster has no workers")
    other = {address: v for address, v in theirs.items() if v != mine}
    if other:
        shown = ", ".join(f"{address} has {v}" for address, v in sorted(other.items()))
        raise ClusterError(
            f"every Dask worker must run l4slab {mine}, as the client does ({shown}): "
            "a cell's key and results depend on the version"
        )


def _distributed() -> Any:
    """Dask's ``distributed`` module (an optional dependency: ``l4slab[dask]``)."""
    try:
        return importlib.import_module("distributed")
    except ImportError:
        raise ClusterError(
            "running on a Dask cluster needs Dask's distributed scheduler: "
            "pip install 'l4slab[dask]'"
        ) from None


@contextlib.contextmanager
def dask_client(address: str, *, timeout_s: float = 30.0) -> Iterator[Any]:
    """A ``distributed.Client`` connected to the scheduler at ``address``
    (``tcp://HOST:8786``), closed on leaving."""
    try:
        client = _distributed().Client(address, timeout=timeout_s)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        yield client
    finally:
        client.close()
