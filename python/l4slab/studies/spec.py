"""``study.toml``: read, check and expand a study's declaration (docs/studies.md).

A study lives in ``scenarios/studies/<id>/``: scenario files, a README and a
``study.toml`` that declares the runs (scenario + ``--set`` overrides + seeds,
with sweeps expanded), the measures taken from each run, the published values,
the claims (checked predicates over measures) and the figures. Everything is
checked here, before anything runs; a mistake is a :class:`StudyError` naming
the file, the key path and a valid example, like a scenario error::

    scenarios/studies/x/study.toml: claims[1].range: expected [low, high];
        write e.g. range = [0.9, 1.1]
"""

from __future__ import annotations

import fnmatch
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import tomllib

from l4slab.studies import figures as figures_mod
from l4slab.studies import metrics as metrics_mod
from l4slab.studies.expr import Expr, ExprError, compile_expr

__all__ = [
    "CLAIM_OPS",
    "FORMAT_VERSION",
    "RESERVED_RUN_NAMES",
    "STATS",
    "STUDY_FILE",
    "CalibratedParam",
    "ClaimRange",
    "ClaimSpec",
    "FigureDecl",
    "MeasureSpec",
    "RunSpec",
    "Study",
    "StudyError",
    "find_studies",
    "load_study",
    "slug",
]

STUDY_FILE = "study.toml"
FORMAT_VERSION = 1

#: How a measure's values over a run's seeds become one number.
STATS = ("mean", "median", "min", "max")
#: The comparison operators of a claim's ``op``.
CLAIM_OPS = ("<", "<=", ">", ">=", "==", "!=")
#: Names a run may not take: they are files of the study's results directory.
RESERVED_RUN_NAMES = ("figures",)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_STUDY_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class StudyError(ValueError):
    """A study declaration is invalid: the message names the file, key path and a fix."""


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class RunSpec:
    """One run of a study after sweep expansion: a scenario, overrides and its seeds."""

    name: str
    label: str
    group: str
    scenario: Path
    scenario_name: str
    sets: tuple[str, ...]
    seeds: tuple[int | None, ...]
    vars: Mapping[str, str]
    declared_at: str

    def dirs(self) -> list[str]:
        """The results directory of each seed, relative to the study's results directory."""
        if len(self.seeds) == 1:
            return [self.name]
        return [f"{self.name}/seed-{seed}" for seed in self.seeds]


@dataclass(frozen=True)
class MeasureSpec:
    """A named value taken from each run: a summary.json path or a registered metric."""

    name: str
    label: str
    unit: str
    path: tuple[str, ...] | None
    metric: str | None
    args: Mapping[str, Any]
    runs: tuple[str, ...]
    stat: str
    digits: int
    published: Mapping[str, float | str]
    scale: float = 1.0

    @property
    def source_text(self) -> str:
        """How the value is obtained, e.g. ``flows.file.completion_s`` or ``metric(args)``."""
        if self.path is not None:
            text = ".".join(self.path)
        else:
            args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
            text = f"{self.metric}({args})"
        return text if self.scale == 1.0 else f"{text} x {self.scale:g}"


@dataclass(frozen=True)
class ClaimSpec:
    """A checked statement: an expression and its bound, with the publication's words."""

    id: str
    text: str
    expr: Expr
    range: tuple[float, float] | None
    op: str | None
    value: float | None
    why: str
    #: A known model gap: why the model cannot meet this claim (with the
    #: evidence). A failing claim with a gap is reported as GAP, not FAIL.
    gap: str | None = None
    #: Where the claim is stated to hold, as moves of the setup (``--robust``).
    holds: ClaimRange | None = None

    @property
    def bound_text(self) -> str:
        """The bound as text: ``in [2.6, 5.9]``, ``<= 1.1`` or ``is true``."""
        if self.range is not None:
            return f"in [{_num(self.range[0])}, {_num(self.range[1])}]"
        if self.op is not None and self.value is not None:
            return f"{self.op} {_num(self.value)}"
        return "is true"


@dataclass(frozen=True)
class ClaimRange:
    """Where a claim is stated to hold, as moves of the study's setup: its rates
    multiplied by a factor in ``[rate_min, rate_max]``, its base RTT moved by
    ``[rtt_min_ms, rtt_max_ms]`` (``None``: no bound). A ``--robust`` variant outside
    is reported with its verdict but does not make the claim FRAGILE."""

    rate_min: float | None
    rate_max: float | None
    rtt_min_ms: float | None
    rtt_max_ms: float | None
    why: str

    def covers(self, kind: str, amount: float) -> bool:
        """Whether a variant of ``kind`` (``rate``, ``rtt``, ``seeds``) moved by
        ``amount`` lies inside."""
        if kind == "rate":
            low, high = self.rate_min, self.rate_max
        elif kind == "rtt":
            low, high = self.rtt_min_ms, self.rtt_max_ms
        else:
            return True
        return (low is None or amount >= low) and (high is None or amount <= high)


@dataclass(frozen=True)
class CalibratedParam:
    """A setup parameter the publication does not state, fitted to one published number.

    The claim it was fitted to (``calibrated_from``) is not a test of the model: it
    prints CALIBRATED, never PASS; every other claim must hold out of sample.
    """

    parameter: str
    value: str
    what: str
    calibrated_from: str


@dataclass(frozen=True)
class RobustKeys:
    """Which override keys ``reproduce --robust`` moves: rates (x0.8, x1.2) and one-way
    delays (together moved by +-5 ms of round trip). ``None``: the generic rule (the
    bottleneck's ``down`` and ``up`` rate and delay); an empty tuple: not moved, for
    ``why``."""

    rate: tuple[str, ...] | None = None
    delay: tuple[str, ...] | None = None
    why: str = ""


@dataclass(frozen=True)
class FigureDecl:
    """A figure of the study report: a registered kind and its arguments."""

    name: str
    kind: str
    title: str
    caption: str
    wide: bool
    args: Mapping[str, Any]


@dataclass(frozen=True)
class Study:
    """A checked, expanded study."""

    id: str
    path: Path
    title: str
    source: str
    description: str
    runs: tuple[RunSpec, ...]
    measures: tuple[MeasureSpec, ...]
    claims: tuple[ClaimSpec, ...]
    figures: tuple[FigureDecl, ...]
    file: Path = field(repr=False, default=Path(STUDY_FILE))
    calibrated: tuple[CalibratedParam, ...] = ()
    robust: RobustKeys = RobustKeys()

    def calibration(self, claim: str) -> CalibratedParam | None:
        """The parameter fitted to ``claim``, if one was."""
        for param in self.calibrated:
            if param.calibrated_from == claim:
                return param
        return None

    def run(self, name: str) -> RunSpec:
        """The run called ``name``."""
        for run in self.runs:
            if run.name == name:
                return run
        raise KeyError(f"study {self.id} has no run {name!r}")

    def measure(self, name: str) -> MeasureSpec:
        """The measure called ``name``."""
        for measure in self.measures:
            if measure.name == name:
                return measure
        raise KeyError(f"study {self.id} has no measure {name!r}")

    @property
    def jobs(self) -> int:
        """How many simulations the study runs (runs x seeds)."""
        return sum(len(run.seeds) for run in self.runs)


# --------------------------------------------------------------------------- finding studies


def find_studies(root: str | Path) -> list[Path]:
    """The study directories under ``root`` (those holding a study.toml), sorted by name."""
    base = Path(root)
    if not base.is_dir():
        return []
    return sorted(p.parent for p in base.glob(f"*/{STUDY_FILE}") if p.is_file())


def load_study(directory: str | Path) -> Study:
    """Read and check ``directory/study.toml``; raise :class:`StudyError` on any mistake."""
    folder = Path(directory)
    file = folder / STUDY_FILE
    if not file.is_file():
        raise StudyError(f"{folder}: no {STUDY_FILE} here; a study is a directory with one")
    study_id = folder.resolve().name
    if not _STUDY_ID.match(study_id):
        raise StudyError(
            f"{folder}: {study_id!r} is not a study id; name the directory with lower-case "
            "letters, digits and '-', e.g. litespeed-bbr-loss"
        )
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{file}: TOML syntax error: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StudyError(f"{file}: cannot read: {exc}") from None
    return _Parser(file, study_id).study(data)


# --------------------------------------------------------------------------- parsing


_TOP_KEYS = (
    "format", "title", "source", "description", "runs", "measures", "claims", "figures",
    "calibrated", "robust",
)  # fmt: skip
_CALIBRATED_KEYS = ("parameter", "value", "what", "calibrated_from")
_ROBUST_KEYS = ("rate", "delay", "why")
_RUN_KEYS = ("name", "scenario", "set", "seed", "seeds", "sweep", "group", "label")
_MEASURE_KEYS = (
    "label", "unit", "path", "metric", "args", "scale", "runs", "stat", "digits", "published",
)  # fmt: skip
_CLAIM_KEYS = ("id", "text", "expr", "range", "op", "value", "why", "gap", "holds")
#: A claim's ``holds`` keys: bounds on the setup's moves, and why.
_HOLDS_KEYS = ("rate_min", "rate_max", "rtt_min_ms", "rtt_max_ms", "why")
_FIGURE_KEYS = ("name", "kind", "title", "caption", "wide", "args")


class _Parser:
    def __init__(self, file: Path, study_id: str):
        self.file = file
        self.folder = file.parent
        self.study_id = study_id

    def error(self, key: str, problem: str, example: str | None = None) -> StudyError:
        text = f"{self.file}: {key}: {problem}" if key else f"{self.file}: {problem}"
        if example:
            text += f"; write e.g. {example}"
        return StudyError(text)

    # ---- helpers

    def table(self, value: Any, key: str, example: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(key, f"expected a table, found {_kind(value)}", example)
        return value

    def known(self, table: Mapping[str, Any], key: str, valid: Sequence[str]) -> None:
        for name in table:
            if name not in valid:
                where = f"{key}.{name}" if key else name
                raise self.error(where, f"unknown key; valid keys here: {', '.join(valid)}")

    def text(
        self, table: Mapping[str, Any], name: str, key: str, example: str, *, required: bool
    ) -> str:
        value = table.get(name)
        where = f"{key}.{name}" if key else name
        if value is None:
            if required:
                raise self.error(where, "missing", example)
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            raise self.error(where, f"expected a non-empty string, found {_kind(value)}", example)
        return value.strip()

    # ---- the file

    def study(self, data: dict[str, Any]) -> Study:
        self.known(data, "", _TOP_KEYS)
        version = data.get("format")
        if version is None:
            raise self.error("format", "missing", "format = 1")
        if version != FORMAT_VERSION or isinstance(version, bool):
            raise self.error(
                "format", f"unsupported version {version!r}; this l4slab reads format = 1"
            )
        title = self.text(
            data, "title", "", 'title = "BBR vs Cubic under random loss"', required=True
        )
        source = self.text(
            data, "source", "", 'source = "Author, Title, venue, year, URL"', required=True
        )
        description = self.text(data, "description", "", 'description = "..."', required=False)
        runs = self.runs(data.get("runs"))
        measures = self.measures(data.get("measures"), runs)
        claims = self.claims(data.get("claims"), measures)
        figures = self.figures(data.get("figures"), runs, measures)
        calibrated = self.calibrated(data.get("calibrated"), claims)
        robust = self.robust(data.get("robust"))
        return Study(
            id=self.study_id,
            path=self.folder,
            title=title,
            source=source,
            description=description,
            runs=tuple(runs),
            measures=tuple(measures),
            claims=tuple(claims),
            figures=tuple(figures),
            file=self.file,
            calibrated=tuple(calibrated),
            robust=robust,
        )

    # ---- runs

    def runs(self, value: Any) -> list[RunSpec]:
        example = '[[runs]] name = "cubic_{loss}", scenario = "file.toml", set = [...]'
        if value is None:
            raise self.error("runs", "missing: a study needs at least one [[runs]] table", example)
        if not isinstance(value, list) or not value:
            raise self.error("runs", "expected one or more [[runs]] tables", example)
        runs: list[RunSpec] = []
        seen: dict[str, str] = {}
        for index, item in enumerate(value):
            key = f"runs[{index}]"
            for run in self.run(self.table(item, key, example), key):
                if run.name in seen:
                    raise self.error(
                        f"{key}.name",
                        f"run {run.name!r} is declared twice (also by {seen[run.name]}); "
                        "run names must be unique after sweep expansion",
                        'name = "cubic_{loss}" with a sweep over loss',
                    )
                seen[run.name] = key
                runs.append(run)
        return runs

    def run(self, table: dict[str, Any], key: str) -> list[RunSpec]:
        self.known(table, key, _RUN_KEYS)
        name = self.text(table, "name", key, 'name = "cubic_0"', required=True)
        scenario = self.text(table, "scenario", key, 'scenario = "file.toml"', required=True)
        sets = table.get("set", [])
        if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
            raise self.error(
                f"{key}.set",
                f"expected a list of KEY=VALUE strings, found {_kind(sets)}",
                'set = ["flows[0].cc=cubic", "bottleneck.down.loss=1%"]',
            )
        for i, item in enumerate(sets):
            if "=" not in item:
                raise self.error(
                    f"{key}.set[{i}]",
                    f"{item!r} is not KEY=VALUE",
                    '"bottleneck.down.loss=1%"',
                )
        seeds = self.seeds(table, key)
        group = self.text(table, "group", key, 'group = "sensitivity"', required=False) or "main"
        label = self.text(table, "label", key, 'label = "Cubic, {loss} loss"', required=False)
        sweep = self.sweep(table.get("sweep"), key)
        variables = list(sweep)
        for field_name, template in (("name", name), ("label", label), ("scenario", scenario)):
            for var in _PLACEHOLDER.findall(template):
                if var not in sweep:
                    known = ", ".join(variables) or "none (add a sweep table)"
                    raise self.error(
                        f"{key}.{field_name}",
                        f"{{{var}}} is not a sweep variable; sweep variables: {known}",
                        'sweep = { loss = ["0%", "1%"] }',
                    )
        if sweep and not all(f"{{{var}}}" in name for var in variables):
            missing = [var for var in variables if f"{{{var}}}" not in name]
            raise self.error(
                f"{key}.name",
                f"the name must contain every sweep variable, so that each run has its own "
                f"name; missing {', '.join('{' + v + '}' for v in missing)}",
                f'name = "{name}_{{{missing[0]}}}"',
            )
        out: list[RunSpec] = []
        combos = itertools.product(*(sweep[var] for var in variables)) if sweep else [()]
        for combo in combos:
            values = dict(zip(variables, combo, strict=True))
            run_name = _fill(name, {var: slug(value) for var, value in values.items()})
            if not _IDENT.match(run_name):
                raise self.error(
                    f"{key}.name",
                    f"{run_name!r} is not a run name: use letters, digits and '_' "
                    "(it is used as measure.run in claims)",
                    'name = "cubic_3"',
                )
            if run_name in RESERVED_RUN_NAMES:
                raise self.error(
                    f"{key}.name", f"{run_name!r} is reserved for the study's own files"
                )
            scenario_file = _fill(scenario, values)
            path = (self.folder / scenario_file).resolve()
            if not path.is_relative_to(self.folder.resolve()):
                # A study is one folder: shipped, copied and archived whole; a run that
                # reads another folder's file (or any file on the machine) is not its.
                raise self.error(
                    f"{key}.scenario",
                    f"{scenario_file}: leaves the study directory {self.folder}",
                    f'scenario = "{PurePosixPath(scenario_file).name}" (a file in the study '
                    "directory, copied there)",
                )
            if not path.is_file():
                raise self.error(
                    f"{key}.scenario",
                    f"{scenario_file}: no such file in {self.folder}",
                    'scenario = "file.toml" (a path relative to the study directory)',
                )
            out.append(
                RunSpec(
                    name=run_name,
                    label=_fill(label, values) if label else run_name,
                    group=group,
                    scenario=path,
                    scenario_name=scenario_file,
                    sets=tuple(_fill(item, values) for item in sets),
                    seeds=seeds,
                    vars=values,
                    declared_at=key,
                )
            )
        return out

    def seeds(self, table: Mapping[str, Any], key: str) -> tuple[int | None, ...]:
        if "seed" in table and "seeds" in table:
            raise self.error(f"{key}.seeds", "give seed or seeds, not both", "seeds = [1, 2, 3]")
        if "seed" in table:
            seed = table["seed"]
            if not _is_int(seed) or seed < 0:
                raise self.error(
                    f"{key}.seed", f"{seed!r} is not a seed (integer >= 0)", "seed = 1"
                )
            return (int(seed),)
        if "seeds" in table:
            seeds = table["seeds"]
            if (
                not isinstance(seeds, list)
                or not seeds
                or not all(_is_int(s) and s >= 0 for s in seeds)
            ):
                raise self.error(
                    f"{key}.seeds",
                    f"expected a list of integers >= 0, found {seeds!r}",
                    "seeds = [1, 2, 3, 4, 5]",
                )
            if len(set(seeds)) != len(seeds):
                raise self.error(f"{key}.seeds", "a seed is listed twice", "seeds = [1, 2, 3]")
            return tuple(int(s) for s in seeds)
        return (None,)

    def sweep(self, value: Any, key: str) -> dict[str, list[str]]:
        example = 'sweep = { loss = ["0.5%", "1%", "2%"] }'
        if value is None:
            return {}
        table = self.table(value, f"{key}.sweep", example)
        out: dict[str, list[str]] = {}
        for var, values in table.items():
            where = f"{key}.sweep.{var}"
            if not _IDENT.match(var):
                raise self.error(
                    where, "a sweep variable is a name of letters, digits, '_'", example
                )
            if not isinstance(values, list) or not values:
                raise self.error(
                    where, f"expected a non-empty list, found {_kind(values)}", example
                )
            texts = []
            for item in values:
                if isinstance(item, bool) or not isinstance(item, str | int | float):
                    raise self.error(
                        where, f"{item!r}: sweep values are strings or numbers", example
                    )
                texts.append(item if isinstance(item, str) else str(item))
            if len({slug(t) for t in texts}) != len(texts):
                raise self.error(
                    where, "two values give the same run name (they differ only in punctuation)"
                )
            out[var] = texts
        return out

    # ---- measures

    def measures(self, value: Any, runs: Sequence[RunSpec]) -> list[MeasureSpec]:
        example = '[measures.time] path = "flows.file.completion_s"'
        if value is None:
            raise self.error("measures", "missing: declare at least one measure", example)
        table = self.table(value, "measures", example)
        if not table:
            raise self.error("measures", "declare at least one measure", example)
        names = [run.name for run in runs]
        return [
            self.measure(name, self.table(item, f"measures.{name}", example), names)
            for name, item in table.items()
        ]

    def measure(self, name: str, table: dict[str, Any], run_names: list[str]) -> MeasureSpec:
        key = f"measures.{name}"
        if not _IDENT.match(name):
            raise self.error(key, "a measure name is letters, digits and '_'", "[measures.time]")
        self.known(table, key, _MEASURE_KEYS)
        has_path, has_metric = "path" in table, "metric" in table
        if has_path == has_metric:
            raise self.error(
                key,
                "give either path (a dotted path into summary.json) or metric (a registered "
                "function)",
                'path = "flows.file.completion_s" or metric = "delivery_plateau_max_ms"',
            )
        path: tuple[str, ...] | None = None
        metric: str | None = None
        args: dict[str, Any] = {}
        if has_path:
            path = self.path(table["path"], f"{key}.path")
            if "args" in table:
                raise self.error(f"{key}.args", "only a metric takes args")
        else:
            metric = table["metric"]
            registered = metrics_mod.METRICS
            if not isinstance(metric, str) or metric not in registered:
                raise self.error(
                    f"{key}.metric",
                    f"unknown metric {metric!r}; registered metrics: "
                    + ", ".join(sorted(registered)),
                    'metric = "delivery_plateau_max_ms"',
                )
            raw = self.table(table.get("args", {}), f"{key}.args", 'args = { flow = "video" }')
            try:
                args = registered[metric].check_args(raw)
            except ValueError as exc:
                raise self.error(f"{key}.args", str(exc), registered[metric].example) from None
        runs = self.run_patterns(table.get("runs"), f"{key}.runs", run_names)
        stat = table.get("stat", "mean")
        if stat not in STATS:
            raise self.error(
                f"{key}.stat", f"{stat!r}: choose one of {', '.join(STATS)}", 'stat = "mean"'
            )
        scale = table.get("scale", 1.0)
        if not _is_number(scale) or scale == 0:
            raise self.error(
                f"{key}.scale", f"{scale!r}: expected a non-zero number", "scale = 1e-6"
            )
        digits = table.get("digits", 3)
        if not _is_int(digits) or not 0 <= digits <= 9:
            raise self.error(f"{key}.digits", f"{digits!r}: expected 0 to 9", "digits = 2")
        published_raw = self.table(
            table.get("published", {}), f"{key}.published", "published = { cubic_0 = 4.5 }"
        )
        published: dict[str, float | str] = {}
        for run, number in published_raw.items():
            where = f"{key}.published.{run}"
            if run not in runs:
                raise self.error(
                    where, f"no run {run!r} for this measure; its runs: {', '.join(runs)}"
                )
            if isinstance(number, bool) or not isinstance(number, int | float | str):
                raise self.error(
                    where, f"expected a number or a text, found {_kind(number)}", f"{run} = 4.5"
                )
            published[run] = float(number) if isinstance(number, int | float) else number
        return MeasureSpec(
            name=name,
            label=self.text(table, "label", key, 'label = "transfer time"', required=False) or name,
            unit=self.text(table, "unit", key, 'unit = "s"', required=False),
            path=path,
            metric=metric,
            args=args,
            runs=runs,
            stat=stat,
            digits=int(digits),
            published=published,
            scale=float(scale),
        )

    def path(self, value: Any, key: str) -> tuple[str, ...]:
        example = 'path = "flows.file.completion_s" (or a list, ["flows", "bulk.0", "goodput_bps"])'
        if isinstance(value, str):
            parts = value.split(".")
        elif isinstance(value, list) and all(isinstance(p, str) for p in value):
            parts = list(value)
        else:
            raise self.error(key, f"expected a dotted path, found {_kind(value)}", example)
        if not parts or any(not p for p in parts):
            raise self.error(key, f"{value!r} has an empty part", example)
        return tuple(parts)

    def run_patterns(self, value: Any, key: str, run_names: list[str]) -> tuple[str, ...]:
        if value is None:
            return tuple(run_names)
        example = 'runs = ["cubic_*", "bbr_*"]'
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise self.error(
                key, f"expected a list of run names or patterns, found {_kind(value)}", example
            )
        chosen: list[str] = []
        for pattern in value:
            hits = [name for name in run_names if fnmatch.fnmatchcase(name, pattern)]
            if not hits:
                raise self.error(
                    key, f"{pattern!r} matches no run; runs: {', '.join(run_names)}", example
                )
            chosen.extend(hit for hit in hits if hit not in chosen)
        return tuple(name for name in run_names if name in chosen)

    # ---- claims

    def claims(self, value: Any, measures: Sequence[MeasureSpec]) -> list[ClaimSpec]:
        example = '[[claims]] text = "...", expr = "time.cubic_3 / time.cubic_0", range = [3, 6]'
        if value is None:
            raise self.error("claims", "missing: a study checks at least one claim", example)
        if not isinstance(value, list) or not value:
            raise self.error("claims", "expected one or more [[claims]] tables", example)
        runs_of = {m.name: list(m.runs) for m in measures}
        claims: list[ClaimSpec] = []
        for index, item in enumerate(value):
            key = f"claims[{index}]"
            table = self.table(item, key, example)
            self.known(table, key, _CLAIM_KEYS)
            claim_id = table.get("id", f"c{index + 1}")
            if not isinstance(claim_id, str) or not re.match(
                r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", claim_id
            ):
                raise self.error(f"{key}.id", f"{claim_id!r} is not an id", 'id = "cubic-steep"')
            if any(c.id == claim_id for c in claims):
                raise self.error(
                    f"{key}.id", f"claim id {claim_id!r} is used twice", 'id = "bbr-flat"'
                )
            text = self.text(
                table, "text", key, 'text = "BBR stays within a few percent"', required=True
            )
            why = self.text(
                table, "why", key, 'why = "a few percent: we accept 10 %"', required=True
            )
            source = self.text(
                table, "expr", key, 'expr = "time.bbr_3 / time.bbr_0"', required=True
            )
            try:
                expr = compile_expr(source, measures=runs_of)
            except ExprError as exc:
                raise self.error(f"{key}.expr", str(exc)) from None
            bound_range, op, bound_value = self.bound(table, key)
            gap = self.text(
                table,
                "gap",
                key,
                'gap = "the model is Linux TCP; the publication ran QUIC"',
                required=False,
            )
            holds = self.holds(table.get("holds"), f"{key}.holds")
            claims.append(
                ClaimSpec(
                    claim_id, text, expr, bound_range, op, bound_value, why, gap or None, holds
                )
            )
        return claims

    def holds(self, value: Any, key: str) -> ClaimRange | None:
        """A claim's stated range (``holds``): at least one bound, the study's own
        setting (rate x1, RTT +0 ms) inside, and why."""
        example = 'holds = { rate_min = 0.95, why = "one 1500 B packet takes ..." }'
        if value is None:
            return None
        table = self.table(value, key, example)
        self.known(table, key, _HOLDS_KEYS)
        why = self.text(table, "why", key, example, required=True)
        bounds: dict[str, float | None] = {}
        for name in _HOLDS_KEYS[:4]:
            bound = table.get(name)
            if bound is not None and not _is_number(bound):
                raise self.error(f"{key}.{name}", f"expected a number, found {bound!r}", example)
            bounds[name] = None if bound is None else float(bound)
        if all(b is None for b in bounds.values()):
            raise self.error(key, "missing: at least one of " + ", ".join(_HOLDS_KEYS[:4]), example)
        # The study's own setting (rate x1, RTT +0 ms) is where the claim is checked.
        for name, nominal, setting in (
            ("rate_min", 1.0, "rate x1"),
            ("rate_max", 1.0, "rate x1"),
            ("rtt_min_ms", 0.0, "RTT +0 ms"),
            ("rtt_max_ms", 0.0, "RTT +0 ms"),
        ):
            bound = bounds[name]
            if bound is not None and (bound > nominal if "min" in name else bound < nominal):
                raise self.error(
                    f"{key}.{name}",
                    f"the study's own setting ({setting}) must lie inside: the claim is "
                    "checked there",
                    example,
                )
        return ClaimRange(
            bounds["rate_min"], bounds["rate_max"], bounds["rtt_min_ms"], bounds["rtt_max_ms"], why
        )

    def bound(
        self, table: Mapping[str, Any], key: str
    ) -> tuple[tuple[float, float] | None, str | None, float | None]:
        has_range, has_op, has_value = "range" in table, "op" in table, "value" in table
        if has_range and (has_op or has_value):
            raise self.error(key, "give range, or op and value, not both", "range = [0.9, 1.1]")
        if has_range:
            bounds = table["range"]
            if (
                not isinstance(bounds, list)
                or len(bounds) != 2
                or not all(_is_number(b) for b in bounds)
            ):
                raise self.error(
                    f"{key}.range", f"expected [low, high], found {bounds!r}", "range = [0.9, 1.1]"
                )
            low, high = float(bounds[0]), float(bounds[1])
            if low > high:
                raise self.error(
                    f"{key}.range",
                    f"low {_num(low)} is above high {_num(high)}",
                    "range = [0.9, 1.1]",
                )
            return (low, high), None, None
        if has_op != has_value:
            missing = "value" if has_op else "op"
            raise self.error(
                f"{key}.{missing}", "missing: op and value go together", 'op = "<=", value = 1.1'
            )
        if has_op:
            op, value = table["op"], table["value"]
            if op not in CLAIM_OPS:
                raise self.error(
                    f"{key}.op", f"{op!r}: choose one of {' '.join(CLAIM_OPS)}", 'op = "<="'
                )
            if not _is_number(value):
                raise self.error(
                    f"{key}.value", f"expected a number, found {_kind(value)}", "value = 1.1"
                )
            return None, op, float(value)
        return None, None, None

    # ---- calibration and robustness

    def calibrated(self, value: Any, claims: Sequence[ClaimSpec]) -> list[CalibratedParam]:
        example = (
            '[[calibrated]] parameter = "wifi.ap.l4s_step", value = "6ms", what = "...", '
            'calibrated_from = "game-rate"'
        )
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error("calibrated", "expected [[calibrated]] tables", example)
        ids = [claim.id for claim in claims]
        out: list[CalibratedParam] = []
        for index, item in enumerate(value):
            key = f"calibrated[{index}]"
            table = self.table(item, key, example)
            self.known(table, key, _CALIBRATED_KEYS)
            parameter = self.text(
                table, "parameter", key, 'parameter = "wifi.ap.l4s_step"', required=True
            )
            raw = table.get("value")
            if raw is None:
                raise self.error(f"{key}.value", "missing: the value it was given", 'value = "6ms"')
            if isinstance(raw, bool) or not isinstance(raw, str | int | float):
                raise self.error(
                    f"{key}.value",
                    f"expected a number or a text, found {_kind(raw)}",
                    'value = "6ms"',
                )
            what = self.text(
                table,
                "what",
                key,
                "what = \"the AP's marking step: not published; fitted to the L4S game's rate\"",
                required=True,
            )
            claim = self.text(
                table, "calibrated_from", key, 'calibrated_from = "game-rate"', required=True
            )
            if claim not in ids:
                raise self.error(
                    f"{key}.calibrated_from",
                    f"no claim {claim!r}; claims: {', '.join(ids)}",
                    f'calibrated_from = "{ids[0]}"',
                )
            for other, param in enumerate(out):
                if param.calibrated_from == claim:
                    raise self.error(
                        f"{key}.calibrated_from",
                        f"claim {claim!r} already calibrates calibrated[{other}] "
                        f"({param.parameter}): a claim fits at most one parameter, and then "
                        "is no test of the model",
                    )
                if param.parameter == parameter:
                    raise self.error(
                        f"{key}.parameter",
                        f"{parameter!r} is declared twice (also calibrated[{other}]): a "
                        "parameter is fitted to one published number",
                    )
            out.append(
                CalibratedParam(parameter, raw if isinstance(raw, str) else f"{raw:g}", what, claim)
            )
        return out

    def robust(self, value: Any) -> RobustKeys:
        example = 'robust = { rate = ["bottleneck.down.rate"], delay = ["bottleneck.down.delay"] }'
        if value is None:
            return RobustKeys()
        table = self.table(value, "robust", example)
        self.known(table, "robust", _ROBUST_KEYS)
        keys: dict[str, tuple[str, ...] | None] = {}
        for name in ("rate", "delay"):
            item = table.get(name)
            if item is None:
                keys[name] = None
                continue
            if not isinstance(item, list) or not all(
                isinstance(k, str) and re.match(r"^[A-Za-z0-9_.\[\]-]+$", k) for k in item
            ):
                raise self.error(
                    f"robust.{name}",
                    f"expected a list of override keys (as --set takes them), found {_kind(item)}",
                    example,
                )
            keys[name] = tuple(item)
        why = self.text(
            table, "why", "robust", 'why = "the Wi-Fi PHY rate is no key"', required=False
        )
        if any(keys[name] == () for name in keys) and not why:
            raise self.error(
                "robust.why",
                "missing: say why the setup is not moved where a list is empty",
                'why = "the Wi-Fi PHY rate follows from the SNR, not a rate key"',
            )
        return RobustKeys(keys["rate"], keys["delay"], why)

    # ---- figures

    def figures(
        self, value: Any, runs: Sequence[RunSpec], measures: Sequence[MeasureSpec]
    ) -> list[FigureDecl]:
        example = '[[figures]] name = "completion", kind = "measure_plot", title = "..."'
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error("figures", "expected [[figures]] tables", example)
        out: list[FigureDecl] = []
        context = figures_mod.DeclContext(
            runs=[run.name for run in runs], measures={m.name: list(m.runs) for m in measures}
        )
        for index, item in enumerate(value):
            key = f"figures[{index}]"
            table = self.table(item, key, example)
            self.known(table, key, _FIGURE_KEYS)
            name = self.text(table, "name", key, 'name = "completion-vs-loss"', required=True)
            if not re.match(r"^[a-z0-9][a-z0-9-]*$", name) or any(f.name == name for f in out):
                raise self.error(
                    f"{key}.name",
                    f"{name!r}: a unique name of lower-case letters, digits and '-'",
                    'name = "completion-vs-loss"',
                )
            kind = table.get("kind")
            registered = figures_mod.FIGURES
            if not isinstance(kind, str) or kind not in registered:
                raise self.error(
                    f"{key}.kind",
                    f"unknown figure kind {kind!r}; choose one of {', '.join(sorted(registered))}",
                    'kind = "measure_plot"',
                )
            raw = self.table(table.get("args", {}), f"{key}.args", registered[kind].example)
            try:
                args = registered[kind].check(raw, context)
            except ValueError as exc:
                raise self.error(f"{key}.args", str(exc), registered[kind].example) from None
            wide = table.get("wide", registered[kind].wide)
            if not isinstance(wide, bool):
                raise self.error(f"{key}.wide", "expected true or false", "wide = true")
            out.append(
                FigureDecl(
                    name=name,
                    kind=kind,
                    title=self.text(table, "title", key, 'title = "..."', required=True),
                    caption=self.text(table, "caption", key, 'caption = "..."', required=False),
                    wide=wide,
                    args=args,
                )
            )
        return out


# --------------------------------------------------------------------------- helpers


def slug(value: str) -> str:
    """A sweep value as part of a run name: every run of other characters than letters and
    digits becomes ``_`` (leading and trailing ones dropped): ``"0.5%"`` -> ``"0_5"``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", value).strip("_")


def _fill(template: str, values: Mapping[str, str]) -> str:
    """Replace ``{var}`` placeholders (only known variables: TOML braces are left alone)."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _num(value: float) -> str:
    return f"{value:g}"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, int | float):
        return f"the number {value}"
    return type(value).__name__
