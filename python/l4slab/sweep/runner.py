"""Run a sweep into a directory, resumably: finished cells are never run again.

::

    OUT/
      .l4slab-manifest.json      marks OUT as a sweep's directory; lists the files below
      sweep.json                 the sweep: scenario, grid, seeds, counts, columns
      cells.parquet              one row per cell, grid order (l4slab.sweep.dataset)
      cells/<key>/               each cell's results bundle (docs/results.md)
      cells/<key>.error.json     a cell that failed: its error and traceback
      report.html, figures/      l4slab plot-sweep's report (optional)

A cell's directory is named by its key (:func:`l4slab.sweep.spec.cell_key`) and appears
only when complete: the bundle is written into a hidden sibling
(``cells/.<key>.tmp-PID-RANDOM``) and renamed into place once every file and its
manifest are written. So a sweep stopped in any way (Ctrl-C, SIGTERM, a killed worker,
a crash, a power cut) leaves complete cells and, at worst, hidden leftovers, which are
ignored and cleaned up when the cell runs again. Running the same sweep again runs
only the cells that have no directory: the rest are read back from their summary.json.
A failed cell has an error record instead, and is run again by the next run (it may
have failed for a reason that is gone).

cells.parquet and sweep.json are written when every cell has run or failed, and only
then: a dataset never describes half a sweep.

l4slab never removes a file it did not write: it writes into ``OUT`` only if ``OUT`` is
missing, empty or a sweep's directory (its manifest says so), it never deletes a cell's
bundle, and it replaces only its own sweep.json, cells.parquet and error records.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import secrets
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from l4slab.output import (
    MANIFEST_FILE,
    SUMMARY_FILE,
    Manifest,
    OutputWarning,
    bundle_complete,
    clean_stale_staging,
    existing_output,
    output_path,
    read_manifest,
    shown_names,
    write_bundle,
    write_files,
)
from l4slab.sweep import pool
from l4slab.sweep.cell import CellOutcome, CellTask
from l4slab.sweep.dataset import CellRecord, cells_table, parquet_bytes
from l4slab.sweep.spec import Cell, Sweep

__all__ = [
    "CELLS_DIR",
    "CELLS_PARQUET",
    "SWEEP_JSON",
    "SWEEP_JSON_VERSION",
    "Progress",
    "SweepInterrupted",
    "SweepOutcome",
    "check_sweep_dir",
    "error_record_path",
    "run_sweep",
]

SWEEP_JSON = "sweep.json"
CELLS_PARQUET = "cells.parquet"
CELLS_DIR = "cells"
SWEEP_JSON_VERSION = 1
#: The manifest's mark of a sweep's directory (``"sweep": {...}`` beside ``files``).
_MANIFEST_MARK = "sweep"
_ERROR_SUFFIX = ".error.json"


class SweepInterrupted(KeyboardInterrupt):
    """The sweep was stopped; ``complete`` of ``total`` cells are done (``ran`` in this run)."""

    def __init__(self, complete: int, total: int, ran: int, failed: int):
        super().__init__(complete, total, ran, failed)
        self.complete = complete
        self.total = total
        self.ran = ran
        self.failed = failed


@dataclass
class SweepOutcome:
    """What a sweep did: where its results are, and how many cells did what."""

    sweep: Sweep = field(repr=False)
    path: Path
    #: Cells (distinct keys) found complete from an earlier run, and run now.
    reused: int = 0
    ran: int = 0
    #: Cells not run: another seed of a grid point whose first seed drew no random
    #: number, so their results are its results (cells.parquet: ``ran_seed``, ``dir``).
    shared: int = 0
    #: Cells that failed (now), and of them how many had failed before too.
    failed: int = 0
    retried: int = 0
    wall_s: float = 0.0
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.failed == 0


class Progress(Protocol):
    """What a sweep tells as it goes (the CLI draws a bar from it)."""

    def start(self, todo: int, total: int, reused: int, retrying: int) -> None:
        """``todo`` of ``total`` distinct cells will run (or, seeds of a point whose first
        seed is among them, be found the same as it); ``reused`` are complete already; the
        rest are the same as their point's complete first seed; ``retrying`` of the
        ``todo`` failed in an earlier run."""

    def done(self, cell: Cell, outcome: CellOutcome) -> None:
        """A cell finished (``outcome.ok``) or failed."""


class _Silent:
    def start(self, todo: int, total: int, reused: int, retrying: int) -> None:
        pass

    def done(self, cell: Cell, outcome: CellOutcome) -> None:
        pass


# --------------------------------------------------------------------------- directory


def check_sweep_dir(path: str | os.PathLike[str]) -> None:
    """Raise ``FileExistsError`` unless ``path`` may hold a sweep: missing, empty, or a
    sweep's directory (its manifest marks it so). A run's bundle, a study, or a directory
    of yours is refused, named."""
    target = output_path(path)
    entries, manifest = existing_output(target, f"refusing to use {target} for a sweep")
    if not entries or (manifest is not None and _MANIFEST_MARK in manifest.other):
        return
    raise FileExistsError(
        f"refusing to use {target} for a sweep: it is not a sweep's results directory (it "
        f"holds {shown_names(entries)}); choose another output directory (-o), or an empty one"
    )


def _start_dir(target: Path, sweep: Sweep) -> None:
    """Create ``target`` and ``cells/``, and mark ``target`` as a sweep's directory."""
    (target / CELLS_DIR).mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(target) or Manifest()
    if _MANIFEST_MARK not in manifest.other:
        manifest.other[_MANIFEST_MARK] = {"format_version": SWEEP_JSON_VERSION}
        manifest.tool_version = sweep.tool_version
        _write_atomic(target / MANIFEST_FILE, manifest.to_json().encode("utf-8"))


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def error_record_path(root: Path, key: str) -> Path:
    """Where a failed cell's error record goes."""
    return root / CELLS_DIR / f"{key}{_ERROR_SUFFIX}"


def _complete(root: Path, key: str) -> bool:
    """Whether the cell's bundle is in place (it is renamed in only when complete)."""
    return bundle_complete(root / CELLS_DIR / key)


def _read_record(root: Path, key: str) -> CellRecord:
    text = (root / CELLS_DIR / key / SUMMARY_FILE).read_text(encoding="utf-8")
    return CellRecord.from_summary_text(text)


# --------------------------------------------------------------------------- running


def run_sweep(
    sweep: Sweep,
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    threads: bool = False,
    dask: Any = None,
    progress: Progress | None = None,
    command: Sequence[str] = (),
) -> SweepOutcome:
    """Run every cell of ``sweep`` that ``out`` does not hold yet; write the dataset.

    ``jobs``: worker processes (default: every core), or threads with ``threads=True``.
    ``dask``: a ``distributed.Client`` (or a scheduler address, ``tcp://HOST:8786``): the
    cells run on that cluster and their bundles come back to be written here.

    Raises ``FileExistsError`` when ``out`` is not a sweep's directory,
    :class:`SweepInterrupted` when stopped (Ctrl-C, SIGTERM; what finished stays),
    :class:`~l4slab.sweep.pool.ClusterError` for a cluster that cannot run it. A cell
    that fails does not stop the sweep: see :attr:`SweepOutcome.failed`.
    """
    started = time.perf_counter()
    progress = progress or _Silent()
    target = output_path(out)
    check_sweep_dir(target)
    _start_dir(target, sweep)
    keys = sweep.unique_keys
    first_cell: dict[str, Cell] = {}
    for cell in sweep.cells:
        first_cell.setdefault(cell.key, cell)
    # The key of each grid point's first seed: its run decides whether the other seeds
    # need running at all (a run that drew no random number is the same for every seed).
    first_seed = {cell.point.index: cell.key for cell in reversed(sweep.cells)}
    records: dict[str, CellRecord] = {}
    todo: list[str] = []
    retrying = 0
    for key in keys:
        if _complete(target, key):
            records[key] = _read_record(target, key)
            # A cell that failed once and then completed (stopped before its record went).
            error_record_path(target, key).unlink(missing_ok=True)
            continue
        todo.append(key)
        if error_record_path(target, key).is_file():
            retrying += 1
        # What a killed run left of this cell (here, not in a worker: the notes are ours).
        for note in clean_stale_staging(target / CELLS_DIR / key):
            warnings.warn(note, OutputWarning, stacklevel=2)
    outcome = SweepOutcome(sweep, target, reused=len(records), retried=retrying)

    def share(key: str) -> bool:
        """Give ``key`` its grid point's first seed's results if that run drew no random
        number (then every seed gives them); whether it did."""
        first = first_cell[first_seed[first_cell[key].point.index]]
        record = records.get(first.key)
        if key == first.key or record is None or record.summary is None:
            return False
        if record.summary.get("random_draws") != 0:
            return False
        records[key] = CellRecord(record.summary, same_as=first)
        outcome.shared += 1
        return True

    todo = [key for key in todo if not share(key)]  # first seeds complete from before
    progress.start(len(todo), len(keys), outcome.reused, retrying)

    ship = dask is not None

    def on_outcome(task: CellTask, result: CellOutcome) -> None:
        cell = first_cell[task.key]
        if result.ok and result.files is not None:
            write_bundle(target / CELLS_DIR / task.key, result.files)
        if result.ok:
            error_record_path(target, task.key).unlink(missing_ok=True)
            assert result.summary_text is not None
            records[task.key] = CellRecord.from_summary_text(result.summary_text)
            outcome.ran += 1
        else:
            _write_error(target, sweep, cell, result)
            records[task.key] = CellRecord(error=result.error)
            outcome.failed += 1
            outcome.errors[task.key] = result.error or "failed"
        progress.done(cell, result)

    client = dask  # a distributed.Client, or an address connected to once, below

    def run(keys_now: Sequence[str]) -> None:
        tasks = [
            _task(sweep, first_cell[key], None if ship else target, command) for key in keys_now
        ]
        if not tasks:
            return
        if client is not None:
            pool.run_dask(tasks, on_outcome, client=client)
        elif threads:
            pool.run_threads(tasks, on_outcome, jobs=jobs or pool.default_jobs())
        else:
            pool.run_processes(tasks, on_outcome, jobs=jobs or pool.default_jobs())

    firsts = set(first_seed.values())
    try:
        with contextlib.ExitStack() as stack:
            if isinstance(dask, str) and todo:
                client = stack.enter_context(pool.dask_client(dask))
            # First every grid point's first seed, then the other seeds of the points whose
            # first seed drew a random number (or failed: unknown); the rest share its
            # results.
            run([key for key in todo if key in firsts])
            later = []
            for key in todo:
                if key in firsts:
                    continue
                if share(key):
                    progress.done(first_cell[key], CellOutcome(key, True))
                else:
                    later.append(key)
            run(later)
    except KeyboardInterrupt:
        # On disk: a cell may have been renamed into place while its outcome was on the way.
        complete = sum(1 for key in keys if _complete(target, key))
        ran = complete - outcome.reused
        raise SweepInterrupted(complete, len(keys), ran, outcome.failed) from None
    table = cells_table(sweep, records)
    document = _sweep_json(sweep, records, table.column_names)
    write_files(
        target,
        "sweep",
        {SWEEP_JSON: document.encode("utf-8"), CELLS_PARQUET: parquet_bytes(table)},
    )
    outcome.wall_s = time.perf_counter() - started
    return outcome


def _task(sweep: Sweep, cell: Cell, root: Path | None, command: Sequence[str]) -> CellTask:
    return CellTask(
        key=cell.key,
        text=sweep.text,
        source=sweep.source,
        overrides=cell.point.overrides,
        seed=cell.seed,
        out=str(root / cell.dir) if root is not None else None,
        command=tuple(command),
        allow_large=sweep.allow_large,
        label=cell.label(),
    )


def _write_error(root: Path, sweep: Sweep, cell: Cell, result: CellOutcome) -> None:
    from l4slab import _native

    document = {
        "cell": cell.key,
        "scenario": sweep.name,
        "params": {key: value.label for key, value in cell.point.params},
        "seed": cell.seed,
        "set": list(cell.point.overrides),
        "error": result.error,
        "traceback": result.traceback,
        "host": result.host or platform.node(),
        "tool_version": str(_native.__version__),
        "retry": "run the sweep again to retry this cell",
    }
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    _write_atomic(error_record_path(root, cell.key), text.encode("utf-8"))


def _sweep_json(sweep: Sweep, records: Mapping[str, CellRecord], columns: Sequence[str]) -> str:
    """sweep.json's text: the declaration, the counts and the dataset's columns."""
    failed = [key for key in sweep.unique_keys if records[key].summary is None]
    params = [c for key in sweep.grid for c in (key.column, key.number_column) if c is not None]
    document = {
        "format_version": SWEEP_JSON_VERSION,
        "tool_version": sweep.tool_version,
        **sweep.describe(),
        "ok": sum(1 for cell in sweep.cells if records[cell.key].summary is not None),
        # Of them, cells not run: their first seed drew no random number (same results).
        "same_as_first_seed": sum(1 for cell in sweep.cells if records[cell.key].same_as),
        "failed": [
            {
                "cell": key,
                "error": records[key].error,
                "record": f"{CELLS_DIR}/{key}{_ERROR_SUFFIX}",
            }
            for key in failed
        ],
        "columns": {
            "params": list(dict.fromkeys(params)),
            "metrics": [c for c in columns if c.startswith(("flow/", "queue/"))],
        },
    }
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
