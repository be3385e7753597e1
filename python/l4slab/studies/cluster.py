"""A study's runs on a Dask cluster (``l4slab reproduce --dask tcp://HOST:8786``).

The runs go out as a sweep's cells do (:class:`l4slab.sweep.cell.CellTask`, run by
:func:`l4slab.sweep.pool.run_dask`): each worker simulates one and sends its bundle back,
so the workers need l4slab (the same version) but no file system shared with the
client. The client writes each bundle into the study's cell store, atomically, and takes
the measures from it here, as a local worker would (:func:`l4slab.studies.runner.measured`).

A run's first seed goes out first; its other seeds follow only when it drew a random
number (``finished`` decides, as for local workers), so the cluster runs exactly the
simulations a local ``reproduce`` runs, and the study.json is the same, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from l4slab._read import read_scenario_file
from l4slab.output import bundle_complete, write_bundle
from l4slab.results import load
from l4slab.studies.runner import Job, JobError, JobResult, measured
from l4slab.sweep import pool
from l4slab.sweep.cell import CellOutcome, CellTask

__all__ = ["run_waves"]

#: ``finished(job, result)``: record a result; the jobs it lets run next.
Finished = Callable[[Job, JobResult], list[Job]]


def run_waves(firsts: Sequence[Job], root: Path, client: Any, finished: Finished) -> None:
    """Run ``firsts`` and then every job ``finished`` releases, wave by wave."""
    batch = list(firsts)
    while batch:
        batch = _wave(batch, root, client, finished)


def _wave(batch: Sequence[Job], root: Path, client: Any, finished: Finished) -> list[Job]:
    later: list[Job] = []
    todo: dict[str, list[Job]] = {}
    for job in batch:
        bundle = root / job.key
        if bundle_complete(bundle):  # an interrupted reproduce ran it
            later += finished(job, measured(job, load(bundle), 0.0, True))
        else:
            todo.setdefault(job.key, []).append(job)
    failure: JobError | None = None

    def on_outcome(task: CellTask, outcome: CellOutcome) -> None:
        nonlocal failure
        jobs = todo[task.key]
        if not outcome.ok or outcome.files is None:
            failure = failure or JobError(
                "run", f"run {jobs[0].run} (seed {jobs[0].seed}): {outcome.error}"
            )
            return
        write_bundle(root / task.key, outcome.files)
        results = load(root / task.key)
        for job in jobs:
            later.extend(finished(job, measured(job, results, outcome.wall_s, False)))

    pool.run_dask([_task(jobs[0]) for jobs in todo.values()], on_outcome, client=client)
    if failure is not None:
        raise failure
    return later


def _task(job: Job) -> CellTask:
    assert job.key and job.seed is not None, "jobs are keyed before they run"
    return CellTask(
        key=job.key,
        text=read_scenario_file(Path(job.scenario)),
        source=job.scenario,
        overrides=job.sets,
        seed=job.seed,
        out=None,
        command=("l4slab", "reproduce", job.run),
        label=f"{job.run} seed {job.seed}",
    )
