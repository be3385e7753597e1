"""One cell of a sweep: what a worker gets, what it does, what it gives back.

:func:`run_cell` is the one function every executor calls: a local worker process, a
thread, or a Dask worker on another machine. It never raises for a failed simulation:
the failure comes back as a :class:`CellOutcome` with the error and its traceback, so a
failing cell is recorded and the sweep goes on. It raises only ``KeyboardInterrupt``
(the sweep is being stopped; nothing of the cell is left).

With ``task.out`` set the bundle is written there (atomically, as ``l4slab run -o``
does); without it, it is written into a temporary directory on the worker and its files
come back in the outcome, for the client to write: what a cluster without a shared file
system needs.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CellOutcome", "CellTask", "run_cell", "worker_version"]


@dataclass(frozen=True)
class CellTask:
    """Everything a worker needs to run a cell (picklable; no open file or handle)."""

    key: str
    text: str
    source: str
    overrides: tuple[str, ...]
    seed: int
    #: Write the bundle into this directory; ``None``: send its files back.
    out: str | None
    command: tuple[str, ...] = ()
    allow_large: bool = False
    #: Shown in progress lines and error records.
    label: str = ""


@dataclass(frozen=True)
class CellOutcome:
    """What a worker gives back about a cell."""

    key: str
    ok: bool
    #: summary.json's text (the dataset's row is made from it).
    summary_text: str | None = None
    #: The bundle's files (relative path -> bytes) when the task had no ``out``.
    files: dict[str, bytes] | None = None
    #: ``SimulationError: ...``, one line; ``None`` when it ran.
    error: str | None = None
    traceback: str | None = None
    wall_s: float = 0.0
    host: str = field(default_factory=platform.node)


def run_cell(task: CellTask, should_stop: Callable[[], bool] | None = None) -> CellOutcome:
    """Simulate one cell; a failure is an outcome, never an exception.

    ``should_stop()``, checked as the simulation goes (every 16,384 events), stops it with
    ``KeyboardInterrupt`` when true: how a sweep stops its thread workers.
    """
    from l4slab import api

    def progress(_now: float, _duration: float) -> None:
        if should_stop is not None and should_stop():
            raise KeyboardInterrupt

    started = time.perf_counter()
    scratch: Path | None = None
    try:
        if task.out is None:
            scratch = Path(tempfile.mkdtemp(prefix="l4slab-cell-"))
            out = scratch / task.key
        else:
            out = Path(task.out)
        results = api.run_text(
            task.text,
            task.source,
            out=out,
            seed=task.seed,
            overrides=task.overrides,
            progress=progress if should_stop is not None else None,
            command=list(task.command),
            allow_large=task.allow_large,
        )
        files = _bundle_files(out) if task.out is None else None
        return CellOutcome(
            task.key,
            True,
            summary_text=results.summary_text,
            files=files,
            wall_s=time.perf_counter() - started,
        )
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # a Rust panic is a BaseException (pyo3 PanicException)
        return CellOutcome(
            task.key,
            False,
            error=f"{type(exc).__name__}: {' '.join(str(exc).split())}",
            traceback="".join(traceback.format_exception(exc)),
            wall_s=time.perf_counter() - started,
        )
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _bundle_files(directory: Path) -> dict[str, bytes]:
    """Every file of the bundle at ``directory`` (its manifest included), by relative path."""
    files: dict[str, bytes] = {}
    for root, _dirs, names in os.walk(directory):
        for name in sorted(names):
            path = Path(root) / name
            files[path.relative_to(directory).as_posix()] = path.read_bytes()
    return dict(sorted(files.items()))


def worker_version() -> str:
    """The l4slab version a worker runs (a cluster's must be the client's)."""
    from l4slab import _native

    return str(_native.__version__)
