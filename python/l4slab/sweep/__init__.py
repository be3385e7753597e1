"""Sweeps: a scenario run over a grid of parameters and seeds, resumably, in parallel.

::

    from l4slab import sweep

    s = sweep.plan("scenarios/examples/sweep-aqm.toml", grid=["bottleneck.rate=10Mbit,50Mbit"])
    outcome = sweep.run_sweep(s, "results/sweeps/aqm")            # every local core
    table = sweep.load("results/sweeps/aqm").table                  # pyarrow.Table

``l4slab sweep`` and ``l4slab plot-sweep`` are the command line of the same functions;
docs/sweeps.md describes the grid, the directory, cells.parquet and the cluster mode.
"""

from __future__ import annotations

from l4slab.sweep.cell import CellOutcome, CellTask, run_cell
from l4slab.sweep.data import SweepData, load
from l4slab.sweep.pool import ClusterError, default_jobs
from l4slab.sweep.runner import (
    CELLS_DIR,
    CELLS_PARQUET,
    SWEEP_JSON,
    Progress,
    SweepInterrupted,
    SweepOutcome,
    check_sweep_dir,
    run_sweep,
)
from l4slab.sweep.spec import Cell, GridKey, GridValue, Point, Sweep, SweepError, cell_key, plan

__all__ = [
    "CELLS_DIR",
    "CELLS_PARQUET",
    "SWEEP_JSON",
    "Cell",
    "CellOutcome",
    "CellTask",
    "ClusterError",
    "GridKey",
    "GridValue",
    "Point",
    "Progress",
    "Sweep",
    "SweepData",
    "SweepError",
    "SweepInterrupted",
    "SweepOutcome",
    "cell_key",
    "check_sweep_dir",
    "default_jobs",
    "load",
    "plan",
    "run_cell",
    "run_sweep",
]
