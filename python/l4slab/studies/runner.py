"""Run a study: simulate its runs, take the measures, check the claims, write study.json.

:func:`reproduce` writes, atomically (a hidden directory renamed into place)::

    OUT/<id>/study.json             measures (per run and seed), claims and verdicts
    OUT/<id>/report.html            the study report (tables and figures)
    OUT/<id>/figures/NAME.png|svg   the study's figures
    OUT/<id>/table.md               the published-vs-measured and claims tables, Markdown
    OUT/<id>/<run>/                 each run's results bundle (one seed), or
    OUT/<id>/<run>/seed-<N>/        one bundle per seed

study.json is a pure function of the study declaration, its scenarios and the
l4slab version: the same study gives byte-identical study.json, however many
worker processes ran it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import shutil
import statistics
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4slab.output import (
    OutputWarning,
    bundle_complete,
    check_output_dir,
    clean_stale_staging,
    staging_dir,
    write_manifest,
)
from l4slab.results import Results
from l4slab.studies.expr import ExprError
from l4slab.studies.metrics import METRICS, MetricError, summary_path
from l4slab.studies.spec import ClaimSpec, MeasureSpec, Study, StudyError

__all__ = [
    "STUDY_JSON",
    "STUDY_JSON_VERSION",
    "TABLE_MD",
    "ClaimResult",
    "Job",
    "JobResult",
    "MeasureValue",
    "Outcome",
    "check_scenarios",
    "check_study_dir",
    "default_jobs",
    "evaluate",
    "reproduce",
    "study_json",
]

STUDY_JSON = "study.json"
TABLE_MD = "table.md"
STUDY_JSON_VERSION = 1
#: What a study's results directory may hold besides its runs' directories.
STUDY_FILES = (STUDY_JSON, "report.html", "figures", TABLE_MD)

#: Measure values are kept to this many significant digits in study.json.
SIGNIFICANT = 10


# --------------------------------------------------------------------------- jobs


@dataclass(frozen=True)
class Job:
    """One simulation of a study: a run with one seed.

    ``key``: its cell key (the sweep's, :func:`l4slab.sweep.spec.cell_key`: the resolved
    scenario, the seed and the l4slab version). With a key the bundle is written to
    ``root/key`` (the study's cell store), and a complete bundle there is read back
    instead of simulated again; without one, to ``root/directory``.
    """

    run: str
    seed: int | None
    directory: str
    scenario: str
    sets: tuple[str, ...]
    measures: tuple[MeasureSpec, ...]
    key: str = ""


@dataclass(frozen=True)
class JobResult:
    """What a job gives back: the seed used, its measures, and how long it took.

    ``random_draws`` is the run's count of random numbers drawn (``summary.json``);
    ``0`` means every seed gives this run's results, ``None`` that it was not recorded.
    """

    run: str
    seed: int
    directory: str
    values: Mapping[str, float | None]
    wall_s: float
    random_draws: int | None = None
    #: Read back from the cell store (an earlier, interrupted ``reproduce`` ran it).
    reused: bool = False

    @property
    def seed_matters(self) -> bool:
        """Whether another seed could change the results (unknown counts as yes)."""
        return self.random_draws != 0


class JobError(RuntimeError):
    """A job failed; ``kind`` is ``"study"`` (a measure does not fit the run) or ``"run"``."""

    def __init__(self, kind: str, message: str):
        super().__init__(kind, message)
        self.kind = kind
        self.message = message

    def __str__(self) -> str:
        return self.message


def default_jobs() -> int:
    """Worker processes by default: one per CPU, at most 2."""
    return max(1, min(2, os.cpu_count() or 1))


def _jobs(study: Study) -> list[Job]:
    jobs = []
    for run in study.runs:
        measures = tuple(m for m in study.measures if run.name in m.runs)
        for seed, directory in zip(run.seeds, run.dirs(), strict=True):
            jobs.append(Job(run.name, seed, directory, str(run.scenario), run.sets, measures))
    return jobs


def execute(job: Job, root: str) -> JobResult:
    """Simulate one job into ``root/job.directory`` and take its measures.

    Runs in a worker process; every failure comes back as a :class:`JobError` (with
    a plain message, so it crosses the process boundary).
    """
    from l4slab import api
    from l4slab.results import load

    started = time.perf_counter()
    out = Path(root) / (job.key or job.directory)
    reused = bool(job.key) and bundle_complete(out)
    try:
        if reused:
            results = load(out)
        else:
            results = api.run(
                job.scenario,
                out=out,
                seed=job.seed,
                overrides=list(job.sets),
                command=["l4slab", "reproduce", job.run],
            )
    except Exception as exc:
        raise JobError("run", f"run {job.run} (seed {job.seed}): {exc}") from None
    return measured(job, results, time.perf_counter() - started, reused)


def measured(job: Job, results: Results, wall_s: float, reused: bool) -> JobResult:
    """The job's measures of its results (a :class:`JobError` for one that does not fit)."""
    values: dict[str, float | None] = {}
    for measure in job.measures:
        try:
            values[measure.name] = _round(measure_value(measure, results))
        except (KeyError, MetricError, ValueError) as exc:
            detail = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            raise JobError(
                "study", f"measures.{measure.name}: run {job.run} (seed {results.seed}): {detail}"
            ) from None
    return JobResult(
        job.run,
        int(results.seed or 0),
        job.directory,
        values,
        wall_s,
        results.random_draws,
        reused,
    )


def measure_value(measure: MeasureSpec, results: Results) -> float | None:
    """One measure of one run's results."""
    if measure.path is not None:
        value = summary_path(results.summary, measure.path)
    else:
        assert measure.metric is not None
        value = METRICS[measure.metric](results, measure.args)
    return None if value is None else value * measure.scale


def _round(value: float | None) -> float | None:
    """``SIGNIFICANT`` significant digits; ``None`` for no value or a non-finite one."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{SIGNIFICANT}g}")


def run_jobs(
    jobs: Sequence[Job],
    root: Path,
    *,
    workers: int,
    on_done: Callable[[JobResult], None] | None = None,
    on_skip: Callable[[Job], None] | None = None,
    dask: Any = None,
) -> list[JobResult]:
    """Run the jobs (in ``workers`` processes when more than one: the sweep's worker
    processes, :func:`l4slab.sweep.pool.run_in_processes`); results in job order.

    A run's first seed runs first. When it drew no random number (``random_draws`` 0),
    nothing in it depends on the seed: its other seeds would repeat it exactly, so they
    are not run (``on_skip(job)`` hears of each) and only the first seed's result is
    returned. Which jobs run depends only on the jobs, never on ``workers``.

    ``dask``: a ``distributed.Client``: the jobs (keyed, :func:`_keyed`) run on that
    cluster, their bundles come back into ``root`` and their measures are taken here
    (:mod:`l4slab.studies.cluster`).
    """
    firsts: list[Job] = []
    rest: dict[str, list[Job]] = {}
    for job in jobs:
        if job.run in rest:
            rest[job.run].append(job)
        else:
            firsts.append(job)
            rest[job.run] = []
    order = {id(job): index for index, job in enumerate(jobs)}
    results: dict[int, JobResult] = {}

    def finished(job: Job, result: JobResult) -> list[Job]:
        """Record a result; return the jobs it lets run next."""
        results[order[id(job)]] = result
        if on_done is not None:
            on_done(result)
        more = rest.pop(job.run, None)
        if more is None:  # a later seed: its run's first seed already decided
            return []
        if result.seed_matters:
            return more
        for skipped in more:
            if on_skip is not None:
                on_skip(skipped)
        return []

    if dask is not None:
        from l4slab.studies.cluster import run_waves

        run_waves(firsts, root, dask, finished)
        return [results[i] for i in sorted(results)]
    if workers <= 1 or len(jobs) <= 1:
        queue = list(firsts)
        while queue:
            job = queue.pop(0)
            queue[:0] = finished(job, execute(job, str(root)))
        return [results[i] for i in sorted(results)]
    # The sweep's worker processes (l4slab.sweep.pool): Ctrl-C and SIGTERM stop the
    # running simulations at once, and a worker that dies is replaced and its run
    # started again (a run whose worker dies three times is a JobError).
    from l4slab.sweep.pool import run_in_processes

    run_in_processes(
        firsts,
        functools.partial(execute, root=str(root)),
        finished,
        jobs=min(workers, len(jobs)),
        on_died=_died,
    )
    return [results[i] for i in sorted(results)]


def _died(job: Job, attempts: int) -> JobResult:
    raise JobError(
        "run",
        f"run {job.run} (seed {job.seed}): the worker process running it died {attempts} "
        "times (killed, out of memory, or crashed)",
    )


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class MeasureValue:
    """A measure of one run: per seed, combined by the measure's stat, and published."""

    measure: str
    run: str
    seeds: Mapping[int, float | None]
    value: float | None
    published: float | str | None

    @property
    def spread(self) -> tuple[float, float] | None:
        """Min and max over seeds (``None`` with one seed or a missing value)."""
        numbers = [v for v in self.seeds.values() if v is not None]
        if len(self.seeds) < 2 or len(numbers) != len(self.seeds):
            return None
        return min(numbers), max(numbers)


@dataclass(frozen=True)
class ClaimResult:
    """A checked claim: its value and whether it holds."""

    claim: ClaimSpec
    value: float | bool | None
    passed: bool
    detail: str
    #: A setup parameter was fitted to this claim (study.toml ``[[calibrated]]``): it
    #: holds by construction, so it is no test of the model.
    calibrated: bool = False

    @property
    def verdict(self) -> str:
        """``pass``; ``calibrated`` when it holds but a parameter was fitted to it;
        ``gap`` when it does not hold and the study declares why the model cannot meet
        it (:attr:`ClaimSpec.gap`); else ``fail``."""
        if self.passed:
            return "calibrated" if self.calibrated else "pass"
        return "gap" if self.claim.gap else "fail"


@dataclass
class Outcome:
    """Everything a study run produced."""

    study: Study
    values: dict[tuple[str, str], MeasureValue]
    claims: list[ClaimResult]
    jobs: list[JobResult] = field(default_factory=list)
    path: Path | None = None
    tool_version: str = ""
    #: ``reproduce --robust``: every variant's outcome (:mod:`l4slab.studies.robust`).
    robust: Any = None

    @property
    def passed(self) -> bool:
        """Whether no claim fails (every claim holds or is a declared gap)."""
        return all(c.verdict != "fail" for c in self.claims)

    @property
    def verdict(self) -> str:
        """``fail`` if a claim fails, else ``gap`` if one is a declared gap, else ``pass``."""
        verdicts = {c.verdict for c in self.claims}
        return "fail" if "fail" in verdicts else "gap" if "gap" in verdicts else "pass"

    def gaps(self) -> int:
        """Claims that do not hold for a declared model gap."""
        return sum(c.verdict == "gap" for c in self.claims)

    def calibrated(self) -> int:
        """Claims that hold because a parameter was fitted to them (not counted as holding)."""
        return sum(c.verdict == "calibrated" for c in self.claims)

    def seed_matters(self, run: str) -> bool:
        """Whether the run's results depend on its seed (``False``: its first seed drew no
        random number, so one simulation stands for every seed it lists)."""
        return any(job.seed_matters for job in self.jobs if job.run == run)

    def count(self) -> tuple[int, int]:
        """(claims that hold out of sample: PASS, claims)."""
        return sum(c.verdict == "pass" for c in self.claims), len(self.claims)


def evaluate(study: Study, jobs: Sequence[JobResult]) -> Outcome:
    """Combine the jobs' measures over seeds and check every claim."""
    by_run: dict[str, list[JobResult]] = {}
    for job in jobs:
        by_run.setdefault(job.run, []).append(job)
    values: dict[tuple[str, str], MeasureValue] = {}
    for measure in study.measures:
        for run in measure.runs:
            seeds = {job.seed: job.values.get(measure.name) for job in by_run.get(run, [])}
            values[(measure.name, run)] = MeasureValue(
                measure.name,
                run,
                seeds,
                _combine(measure.stat, list(seeds.values())),
                measure.published.get(run),
            )
    claims = [
        dataclasses.replace(
            check_claim(claim, values), calibrated=study.calibration(claim.id) is not None
        )
        for claim in study.claims
    ]
    return Outcome(study, values, claims, list(jobs))


def _combine(stat: str, values: Sequence[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    numbers = [float(v) for v in values if v is not None]
    if stat == "mean":
        combined = math.fsum(numbers) / len(numbers)
    elif stat == "median":
        combined = float(statistics.median(numbers))
    elif stat == "min":
        combined = min(numbers)
    else:
        combined = max(numbers)
    return _round(combined)


def check_claim(claim: ClaimSpec, values: Mapping[tuple[str, str], MeasureValue]) -> ClaimResult:
    """Evaluate a claim's expression and compare it with its bound."""
    refs = {ref: values[(ref.measure, ref.run)].value for ref in claim.expr.refs}
    try:
        value = claim.expr.evaluate(refs)
    except ExprError as exc:
        return ClaimResult(claim, None, False, str(exc))
    if claim.range is not None or claim.op is not None:
        if isinstance(value, bool):
            return ClaimResult(claim, value, False, "the expression is a truth value, not a number")
        number = _round(float(value))
        assert number is not None
        if claim.range is not None:
            low, high = claim.range
            ok = low <= number <= high
        else:
            assert claim.value is not None and claim.op is not None
            ok = _OPS[claim.op](number, claim.value)
        return ClaimResult(claim, number, ok, "")
    if not isinstance(value, bool):
        return ClaimResult(claim, _round(value), False, "the expression is a number; give a bound")
    return ClaimResult(claim, value, value, "")


_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


# --------------------------------------------------------------------------- study.json


def study_json(outcome: Outcome) -> str:
    """study.json's text: sorted keys, two-space indent, a trailing newline."""
    study = outcome.study
    seeds_of: dict[str, list[int]] = {}
    dirs_of: dict[str, list[str]] = {}
    for job in outcome.jobs:
        seeds_of.setdefault(job.run, []).append(job.seed)
        dirs_of.setdefault(job.run, []).append(job.directory)
    document: dict[str, Any] = {
        "format_version": STUDY_JSON_VERSION,
        "tool_version": outcome.tool_version,
        "study": study.id,
        "title": study.title,
        "source": study.source,
        "description": study.description,
        "verdict": outcome.verdict,
        "claims_passed": outcome.count()[0],
        "claims_gaps": outcome.gaps(),
        "claims_calibrated": outcome.calibrated(),
        "calibrated": [
            {
                "parameter": param.parameter,
                "value": param.value,
                "what": param.what,
                "calibrated_from": param.calibrated_from,
            }
            for param in study.calibrated
        ],
        "claims_total": outcome.count()[1],
        "runs": [
            {
                "name": run.name,
                "label": run.label,
                "group": run.group,
                "scenario": run.scenario_name,
                "set": list(run.sets),
                "vars": dict(run.vars),
                "seeds": seeds_of.get(run.name, []),
                "seeds_declared": [seed for seed in run.seeds if seed is not None],
                "seed_matters": outcome.seed_matters(run.name),
                "dirs": dirs_of.get(run.name, []),
            }
            for run in study.runs
        ],
        "measures": [
            {
                "name": measure.name,
                "label": measure.label,
                "unit": measure.unit,
                "source": measure.source_text,
                "stat": measure.stat,
                "values": {
                    run: {
                        "value": outcome.values[(measure.name, run)].value,
                        "seeds": {
                            str(seed): value
                            for seed, value in outcome.values[(measure.name, run)].seeds.items()
                        },
                        "published": outcome.values[(measure.name, run)].published,
                    }
                    for run in measure.runs
                },
            }
            for measure in study.measures
        ],
        "claims": [
            {
                "id": result.claim.id,
                "text": result.claim.text,
                "expr": result.claim.expr.text,
                "bound": result.claim.bound_text,
                "why": result.claim.why,
                "value": result.value,
                "verdict": result.verdict,
                "detail": result.detail,
                "gap": result.claim.gap,
                "calibrated": (
                    param.parameter if (param := study.calibration(result.claim.id)) else None
                ),
            }
            for result in outcome.claims
        ],
    }
    if outcome.robust is not None:
        document["robust"] = robust_json(outcome)
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def robust_json(outcome: Outcome) -> dict[str, Any]:
    """study.json's ``robust``: the variants (with the overrides each added to each
    run), every claim's verdict and value in each, the variants outside its stated
    range (``holds``), and the FRAGILE claims."""
    robust = outcome.robust
    return {
        "simulations": robust.simulations,
        "variants": [
            {"name": variant.name, "set": robust.sets.get(variant.tag, {})}
            for variant, _ in robust.variants
        ],
        "fragile": robust.fragile(outcome),
        "claims": {
            result.claim.id: {
                "nominal": result.verdict,
                "flips": [name for name, _, _ in robust.flips(outcome, result.claim.id)],
                "outside": [name for name, _, _ in robust.outside(outcome, result.claim.id)],
                "variants": {
                    variant.name: {"verdict": other.verdict, "value": other.value}
                    for variant, out in robust.variants
                    for other in out.claims
                    if other.claim.id == result.claim.id
                },
            }
            for result in outcome.claims
        },
    }


# --------------------------------------------------------------------------- the whole study


def check_scenarios(study: Study) -> None:
    """Validate every run's scenario with its overrides; :class:`StudyError` names the run."""
    from l4slab import _native, api

    for run in study.runs:
        try:
            api.validate(run.scenario, overrides=list(run.sets))
        except _native.ScenarioError as exc:
            raise StudyError(
                f"{study.file}: {run.declared_at} (run {run.name}, {run.scenario_name}): {exc}"
            ) from None


def cell_store(target: Path) -> Path:
    """Where a study's runs are kept until the study is complete: ``.<id>.cells/`` beside
    its directory, one bundle per cell key. An interrupted ``reproduce`` (Ctrl-C, a crash,
    a failed run) leaves it, and the next one reads back every run found complete there
    instead of simulating it again; a complete study moves the bundles into its
    directory and removes the store."""
    return target.parent / f".{target.name}.cells"


def _keyed(jobs: Sequence[Job]) -> list[Job]:
    """The jobs with their cell keys (one validation per run and its overrides)."""
    from l4slab import _native, api
    from l4slab.sweep.spec import cell_key

    version = str(_native.__version__)
    resolved: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
    out = []
    for job in jobs:
        scenario = resolved.get((job.scenario, job.sets))
        if scenario is None:
            scenario = api.validate(job.scenario, overrides=list(job.sets))
            resolved[(job.scenario, job.sets)] = scenario
        seed = job.seed if job.seed is not None else int(scenario["seed"])
        out.append(dataclasses.replace(job, seed=seed, key=cell_key(scenario, seed, version)))
    return out


def _open_store(store: Path, jobs: Sequence[Job]) -> None:
    """Create the store, or clean what a killed run left in it (hidden staging folders)."""
    store.mkdir(parents=True, exist_ok=True)
    for job in jobs:
        for note in clean_stale_staging(store / job.key):
            warnings.warn(note, OutputWarning, stacklevel=3)


def _take_bundles(store: Path, tmp: Path, moves: Sequence[tuple[str, str]]) -> None:
    """Move each run's bundle from the store into the study's staging folder (a copy for
    a second run with the same key: the same scenario and seed)."""
    placed: dict[str, Path] = {}
    for key, directory in moves:
        dest = tmp / directory
        dest.parent.mkdir(parents=True, exist_ok=True)
        if key in placed:
            shutil.copytree(placed[key], dest)
        else:
            (store / key).rename(dest)
            placed[key] = dest


def _close_store(store: Path) -> None:
    """Remove the store of a complete study: what is left in it are bundles of cells this
    study no longer has (it changed since an interrupted run), named by their key."""
    for entry in store.iterdir():
        if _is_key(entry.name) and entry.is_dir() and bundle_complete(entry):
            shutil.rmtree(entry)
    try:
        store.rmdir()
    except OSError:
        leftover = ", ".join(sorted(e.name for e in store.iterdir())[:3])
        warnings.warn(
            f"kept {store}: it holds {leftover}, which l4slab did not put there",
            OutputWarning,
            stacklevel=3,
        )


def _is_key(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


def _run_study_jobs(
    study: Study,
    store: Path,
    jobs: Sequence[Job],
    *,
    workers: int,
    on_done: Callable[[JobResult], None] | None,
    on_skip: Callable[[Job], None] | None,
    dask: Any,
) -> list[JobResult]:
    """:func:`run_jobs` in the study's cell store; a measure that does not fit a run is
    a :class:`StudyError` naming study.toml."""
    try:
        return run_jobs(jobs, store, workers=workers, on_done=on_done, on_skip=on_skip, dask=dask)
    except JobError as exc:
        if exc.kind == "study":
            raise StudyError(f"{study.file}: {exc.message}") from None
        raise


def check_study_dir(path: Path) -> None:
    """Raise ``FileExistsError`` unless ``path`` is missing, empty or an earlier study run.

    An earlier study run is one whose manifest (``.l4slab-manifest.json``) lists every
    file in it (see :func:`l4slab.results.check_output_dir`): a file l4slab did not
    write, or a study written without a manifest, is refused and never replaced.
    """
    check_output_dir(path)


def reproduce(
    study: Study,
    out_root: str | os.PathLike[str],
    *,
    workers: int | None = None,
    on_done: Callable[[JobResult], None] | None = None,
    on_skip: Callable[[Job], None] | None = None,
    report: bool = True,
    dask: Any = None,
    robust: bool = False,
) -> Outcome:
    """Run ``study`` and write its results under ``out_root/<id>/``; return the outcome.

    A run whose first seed drew no random number is not run again for its other seeds
    (they would repeat it exactly; see :func:`run_jobs`): ``on_skip`` hears of each.

    ``robust``: then run it again with more seeds and its setup moved
    (:mod:`l4slab.studies.robust`; their cells go through the same store, so an
    interrupted robust study resumes too, and are not kept once it is complete) and
    set :attr:`Outcome.robust`; study.json gets a ``robust`` key.

    Raises :class:`StudyError` for a scenario or measure that does not fit,
    :class:`JobError` when a simulation fails, ``FileExistsError`` when the target is
    not a study's results directory. On any error nothing is left at the target.
    """
    from l4slab import _native
    from l4slab.studies.report import markdown_tables, write_study_report

    check_scenarios(study)
    target = Path(out_root) / study.id
    check_study_dir(target)
    jobs = _keyed(_jobs(study))
    extra: list[Job] = []
    if robust:
        from l4slab.studies import robust as robust_mod

        extra = _keyed(robust_mod.robust_jobs(study, jobs, {}))
    store = cell_store(target)
    _open_store(store, [*jobs, *extra])
    run = functools.partial(
        _run_study_jobs,
        study,
        store,
        workers=workers or default_jobs(),
        on_done=on_done,
        on_skip=on_skip,
        dask=dask,
    )
    outcome = evaluate(study, run(jobs))
    outcome.tool_version = str(_native.__version__)
    if robust:
        # A run whose first seed drew nothing gets no more seeds: they would repeat it.
        more = []
        for job in extra:
            name, tag = job.run.split(robust_mod.TAG, 1)
            if tag != "seeds" or outcome.seed_matters(name):
                more.append(job)
            elif on_skip is not None:
                on_skip(job)
        outcome.robust = robust_mod.evaluate_robust(study, outcome, more, run(more))
    keys = {job.directory: job.key for job in jobs}
    with staging_dir(target) as tmp:
        _take_bundles(store, tmp, [(keys[r.directory], r.directory) for r in outcome.jobs])
        (tmp / STUDY_JSON).write_text(study_json(outcome), encoding="utf-8")
        (tmp / TABLE_MD).write_text(markdown_tables(outcome), encoding="utf-8")
        if report:
            outcome.path = tmp
            write_study_report(outcome, tmp)
        write_manifest(tmp, "reproduce")
    _close_store(store)
    outcome.path = target
    return outcome
