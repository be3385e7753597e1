"""``l4slab reproduce --robust``: rerun a study with more seeds and its setup moved.

A claim that holds (or fails) only at the study's one setting is not a finding.
:func:`robust_jobs` makes, for every run of a study, the simulations of five
**variants** (docs/studies.md, "Robustness"):

* ``seeds+2``: two more seeds than the run lists (the nominal seeds plus them; a
  run whose first seed drew no random number gets none: every seed repeats it);
* ``rate x0.8`` and ``rate x1.2``: every rate key of the setup scaled;
* ``rtt -5ms`` and ``rtt +5ms``: the one-way delay keys scaled together so that
  their sum, the base round trip through them, moves by 5 ms (each keeps its share).

The keys are the bottleneck's ``down`` and ``up`` ``rate`` and ``delay`` (of the
scenario as the run resolves it, with its overrides), unless study.toml's
``[robust]`` names others (or none, with ``why``). The moved values are appended
to the run's overrides, exactly as ``--set`` would take them, so the cells are
keyed, cached and resumed as the nominal ones are.

:func:`evaluate_robust` checks every claim in every variant: a claim whose verdict
(holds or not) differs in any variant from the nominal one is **FRAGILE**, with the
variants that flip it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from l4slab.studies.spec import RunSpec, Study, StudyError

__all__ = [
    "EXTRA_SEEDS",
    "GENERIC_DELAY_KEYS",
    "GENERIC_RATE_KEYS",
    "RATE_FACTORS",
    "RTT_STEPS_MS",
    "RobustOutcome",
    "Variant",
    "estimate",
    "evaluate_robust",
    "robust_jobs",
    "variants",
]

#: More seeds per run than it lists.
EXTRA_SEEDS = 2
#: The setup's rates are multiplied by these.
RATE_FACTORS = (0.8, 1.2)
#: The base round trip through the delay keys moves by these (ms).
RTT_STEPS_MS = (-5.0, 5.0)
#: Where rates and delays are found when a study does not say.
GENERIC_RATE_KEYS = ("bottleneck.down.rate", "bottleneck.up.rate")
GENERIC_DELAY_KEYS = ("bottleneck.down.delay", "bottleneck.up.delay")

#: Separates a run's name from its variant's tag in a robust job's run name.
TAG = "@"


@dataclass(frozen=True)
class Variant:
    """One way of moving a study: ``kind`` is ``seeds``, ``rate`` or ``rtt``."""

    name: str
    tag: str
    kind: str
    amount: float = 0.0


def variants(study: Study) -> list[Variant]:
    """The variants ``--robust`` runs for ``study`` (none of a kind whose keys it
    declares empty)."""
    out = [Variant(f"seeds+{EXTRA_SEEDS}", "seeds", "seeds")]
    if study.robust.rate != ():
        out += [Variant(f"rate x{f:g}", f"rate{f:g}", "rate", f) for f in RATE_FACTORS]
    if study.robust.delay != ():
        out += [Variant(f"rtt {ms:+g}ms", f"rtt{ms:+g}", "rtt", ms) for ms in RTT_STEPS_MS]
    return out


def estimate(study: Study) -> int:
    """How many simulations ``--robust`` adds at most (fewer when a run has nothing
    random: its extra seeds are not run, nor are the seeds of its moved setups)."""
    count = 0
    for variant in variants(study):
        if variant.kind == "seeds":
            count += EXTRA_SEEDS * len(study.runs)
        else:
            count += study.jobs
    return count


# --------------------------------------------------------------------------- the moved setup


def _lookup(resolved: Mapping[str, Any], key: str) -> Any:
    """The value at an override key (``bottleneck.down.rate``, ``flows[0].x``) in a
    resolved scenario, or ``None``."""
    node: Any = resolved
    for part in key.split("."):
        match = re.fullmatch(r"([^\[\]]+)((?:\[\d+\])*)", part)
        if match is None or not isinstance(node, Mapping):
            return None
        node = node.get(match.group(1))
        for index in re.findall(r"\[(\d+)\]", match.group(2)):
            if not isinstance(node, list) or int(index) >= len(node):
                return None
            node = node[int(index)]
    return node


def _numbers(
    study: Study, resolved: Mapping[str, Any], keys: Sequence[str], what: str, run: RunSpec
) -> list[float]:
    values = []
    for key in keys:
        value = _lookup(resolved, key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise StudyError(
                f"{study.file}: robust.{what}: {key} is no {what} of run {run.name} "
                f"({run.scenario_name}); name the keys that hold its {what}, e.g. "
                f'robust = {{ {what} = ["bottleneck.down.{what}"] }}, or none with a why'
            )
        values.append(float(value))
    return values


def moved_sets(
    study: Study, run: RunSpec, variant: Variant, resolved: Mapping[str, Any]
) -> tuple[str, ...]:
    """The overrides that move ``run``'s setup (resolved with its own overrides) as
    ``variant`` says; ``()`` for the seeds variant."""
    if variant.kind == "rate":
        keys = study.robust.rate or GENERIC_RATE_KEYS
        values = _numbers(study, resolved, keys, "rate", run)
        return tuple(
            f"{key}={round(value * variant.amount)}bit"
            for key, value in zip(keys, values, strict=True)
        )
    if variant.kind == "rtt":
        keys = study.robust.delay or GENERIC_DELAY_KEYS
        values = _numbers(study, resolved, keys, "delay", run)  # ns
        total = sum(values)
        step = variant.amount * 1e6
        if total <= 0 or total + step < 0:
            raise StudyError(
                f"{study.file}: robust.delay: run {run.name}'s delays ({', '.join(keys)}) "
                f"add up to {total / 1e6:g} ms: they cannot move by {variant.amount:+g} ms; "
                "name the keys that hold its delay, or none with a why"
            )
        scale = (total + step) / total
        return tuple(
            f"{key}={round(value * scale)}ns" for key, value in zip(keys, values, strict=True)
        )
    return ()


def robust_jobs(
    study: Study, nominal: Sequence[Any], seed_matters: Mapping[str, bool]
) -> list[Any]:
    """The robust simulations of ``study`` as jobs (run names tagged ``run@variant``),
    keyed like the nominal ones (``nominal``: its keyed jobs, for the seeds it ran)."""
    from l4slab import _native, api
    from l4slab.studies.runner import Job

    seeds_of: dict[str, list[int]] = {}
    for job in nominal:
        seeds_of.setdefault(job.run, []).append(int(job.seed))
    jobs: list[Job] = []
    for run in study.runs:
        measures = next(j.measures for j in nominal if j.run == run.name)
        resolved: dict[str, Any] | None = None
        for variant in variants(study):
            tagged = f"{run.name}{TAG}{variant.tag}"
            if variant.kind == "seeds":
                if not seed_matters.get(run.name, True):
                    continue
                top = max(seeds_of[run.name])
                seeds = [top + i for i in range(1, EXTRA_SEEDS + 1)]
                sets = run.sets
            else:
                if resolved is None:
                    resolved = api.validate(run.scenario, overrides=list(run.sets))
                seeds = seeds_of[run.name]
                sets = run.sets + moved_sets(study, run, variant, resolved)
                try:
                    api.validate(run.scenario, overrides=list(sets))
                except _native.ScenarioError as exc:
                    raise StudyError(
                        f"{study.file}: {run.declared_at} (run {run.name}, {variant.name}): {exc}"
                    ) from None
            for seed in seeds:
                directory = f"{variant.tag}/{run.name}/seed-{seed}"
                jobs.append(Job(tagged, seed, directory, str(run.scenario), sets, measures))
    return jobs


# --------------------------------------------------------------------------- verdicts


@dataclass
class RobustOutcome:
    """Each variant's outcome, and the claims whose verdict one of them flips."""

    variants: list[tuple[Variant, Any]]
    simulations: int
    #: The overrides each variant added to each run (for study.json).
    sets: dict[str, dict[str, list[str]]] = dataclasses.field(default_factory=dict)

    def flips(self, nominal: Any, claim_id: str) -> list[tuple[str, str, Any]]:
        """The variants inside the claim's stated range (``holds``; all, without one)
        in which ``claim_id`` holds where it does not nominally (or the reverse):
        (variant, its verdict there, its value there)."""
        base = next(c for c in nominal.claims if c.claim.id == claim_id)
        return [
            (variant.name, result.verdict, result.value)
            for variant, result, inside in self._results(base)
            if inside and result.passed != base.passed
        ]

    def outside(self, nominal: Any, claim_id: str) -> list[tuple[str, str, Any]]:
        """The variants outside the claim's stated range, whatever their verdict:
        reported beside it, never counted as FRAGILE."""
        base = next(c for c in nominal.claims if c.claim.id == claim_id)
        return [
            (variant.name, result.verdict, result.value)
            for variant, result, inside in self._results(base)
            if not inside
        ]

    def _results(self, base: Any) -> list[tuple[Variant, Any, bool]]:
        """Each variant, the claim's result there, and whether its range covers it."""
        holds = base.claim.holds
        out = []
        for variant, outcome in self.variants:
            result = next(c for c in outcome.claims if c.claim.id == base.claim.id)
            inside = holds is None or holds.covers(variant.kind, variant.amount)
            out.append((variant, result, inside))
        return out

    def fragile(self, nominal: Any) -> list[str]:
        """The ids of the FRAGILE claims."""
        return [c.claim.id for c in nominal.claims if self.flips(nominal, c.claim.id)]


def evaluate_robust(
    study: Study, nominal: Any, jobs: Sequence[Any], done: Sequence[Any]
) -> RobustOutcome:
    """Check every claim in every variant (``done``: the robust jobs' results)."""
    from l4slab.studies.runner import evaluate

    by_variant: dict[str, list[Any]] = {}
    for result in done:
        name, tag = result.run.split(TAG, 1)
        by_variant.setdefault(tag, []).append(dataclasses.replace(result, run=name))
    sets: dict[str, dict[str, list[str]]] = {}
    for job in jobs:
        name, tag = job.run.split(TAG, 1)
        extra = list(job.sets[len(study.run(name).sets) :])
        sets.setdefault(tag, {})[name] = extra
    out = []
    for variant in variants(study):
        results = by_variant.get(variant.tag, [])
        if variant.kind == "seeds":
            results = list(nominal.jobs) + results
        out.append((variant, evaluate(study, results)))
    return RobustOutcome(out, len(done), sets)
