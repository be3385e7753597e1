"""Run and validate scenarios through the native simulator (``l4slab._native``).

Validating needs the simulator alone: :mod:`l4slab.results` (numpy, pyarrow) is
imported when a scenario runs (:func:`run_text`), so ``l4slab validate`` does without it.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from l4slab import shipped
from l4slab._read import read_scenario_file
from l4slab._types import SEED_MAX, RunCost
from l4slab.output import (
    STRING_SOURCE,
    OutputWarning,
    RunStaging,
    check_output_dir,
    clean_stale_staging,
    output_path,
)
from l4slab.shipped import find_scenario

if TYPE_CHECKING:
    from l4slab.results import Results

try:
    from l4slab import _native
except ImportError as exc:  # pragma: no cover - depends on how l4slab was installed
    raise ImportError(
        "l4slab._native, the compiled simulator, is not built or does not load "
        f"({exc}). Build it from the repository root with: python3 -m pip install -e ."
    ) from exc

__all__ = [
    "SEED_MAX",
    "ProgressCallback",
    "RunCost",
    "Scenario",
    "check_seed",
    "estimate",
    "read_scenario",
    "run",
    "run_text",
    "trace_dirs",
    "validate",
    "validate_text",
]

#: A scenario: a path to a TOML file, or the TOML text itself.
Scenario: TypeAlias = str | os.PathLike[str]

#: ``progress(sim_time_s, duration_s)``, called about every 0.1 s of wall time.
ProgressCallback: TypeAlias = Callable[[float, float], None]

_STRING_SOURCE = STRING_SOURCE


def check_seed(seed: object) -> None:
    """Raise :class:`l4slab.ScenarioError` unless ``seed`` is ``None`` or a valid seed.

    The same range as the scenario's ``seed`` key: an integer from 0 to :data:`SEED_MAX`.
    """
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise _native.ScenarioError(
            f"seed: expected an integer, found {type(seed).__name__} ({seed!r}); write e.g. seed=7"
        )
    if not 0 <= seed <= SEED_MAX:
        raise _native.ScenarioError(
            f"seed: {seed} is out of range; must be an integer from 0 to {SEED_MAX}; "
            "write e.g. seed=7"
        )


def read_scenario(scenario: Scenario) -> tuple[str, str]:
    """Return ``(toml_text, source)`` for a scenario given as a path or as TOML text.

    A ``Path`` (any ``os.PathLike``) is always a file. A ``str`` is TOML text if
    it spans several lines, otherwise a file path. A bare name that is no file names a
    shipped scenario (``"reno-20mbit"``; :func:`l4slab.shipped.find_scenario`). A file
    that cannot be read, is not UTF-8 or is larger than 16 MiB raises
    :class:`~l4slab._read.ScenarioFileError` (an ``OSError``) naming the path.
    """
    if isinstance(scenario, str) and "\n" in scenario:
        return scenario, _STRING_SOURCE
    path = find_scenario(Path(scenario))
    return read_scenario_file(path), str(path)


def validate(scenario: Scenario, *, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Parse, validate and resolve a scenario; return the resolved scenario as a dict.

    ``overrides`` are ``"key.path=value"`` strings applied on top of the file
    (what ``l4slab run --set`` passes). Raises :class:`l4slab.ScenarioError`.
    """
    text, source = read_scenario(scenario)
    return validate_text(text, source, overrides)


def validate_text(
    text: str, source: str, overrides: Iterable[str] = (), *, limits: str | None = None
) -> dict[str, Any]:
    """Like :func:`validate` for TOML ``text``; ``source`` names it in error messages.

    With ``limits`` (``"sim"`` or ``"emu"``), a scenario past that backend's limits is a
    :class:`l4slab.ScenarioError` too (as :func:`run` would raise).
    """
    resolved: dict[str, Any] = json.loads(
        _native.validate(text, source, list(overrides), trace_dirs(), limits=limits)
    )
    return resolved


def estimate(scenario: Scenario, *, overrides: Iterable[str] = (), backend: str = "sim") -> RunCost:
    """The estimated cost of running a scenario, and the backend's limits; nothing runs.

    Returns a dict: ``flows``, ``samples``, ``rows_per_sample``, ``series_rows``,
    ``trace_rows`` and ``limits`` (the same three keys' limits; docs/scenarios.md,
    "Limits"). Raises :class:`l4slab.ScenarioError` for an invalid scenario.
    """
    text, source = read_scenario(scenario)
    return _native.estimate(text, source, list(overrides), trace_dirs(), backend)


def trace_dirs() -> list[str]:
    """Where the native parser finds a trace given by name: the shipped traces."""
    return [os.fspath(shipped.traces_dir())]


def run(
    scenario: Scenario,
    *,
    out: str | os.PathLike[str] | None = None,
    seed: int | None = None,
    overrides: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    command: Sequence[str] | None = None,
    backend: str = "sim",
    allow_large: bool = False,
) -> Results:
    """Simulate a scenario and return its :class:`~l4slab.results.Results`.

    ``seed`` replaces the scenario's seed. With ``out``, the results bundle is
    also written there atomically (summary.json, series.parquet, run.json, and
    packets.parquet when traced, pcap/*.pcap with ``pcap = true``; see
    docs/results.md). The output directory is
    checked and its staging directory created before the run starts, so a
    directory that is not l4slab's (``FileExistsError``) or not writable
    (:class:`~l4slab.results.OutputDirError`) fails at once; the packet trace
    streams into it while the simulation runs, so memory stays bounded
    (read it back with :meth:`Results.iter_packets`). A symlinked ``out`` is
    followed. Leftovers of killed runs beside ``out`` are cleaned up, or
    reported as an :class:`~l4slab.results.OutputWarning`. ``command`` is
    recorded in run.json (default ``sys.argv``).
    Raises :class:`l4slab.ScenarioError` or :class:`l4slab.SimulationError`;
    ``KeyboardInterrupt`` (e.g. from ``progress``) stops the run and writes nothing.

    A scenario whose estimated cost (:func:`estimate`: flows, series rows, packet-trace
    rows) is past the backend's limits (docs/scenarios.md, "Limits") raises
    :class:`l4slab.ScenarioError` naming the key and the estimate, before anything
    runs; ``allow_large=True`` lifts the limits.

    ``backend="emu"`` runs the scenario in real time through the emulator, with
    kernel TCP flows (root; see docs/emulator.md and :func:`l4slab.emu.run_scenario`);
    ``progress`` is not called then, and it raises :class:`l4slab.emu.EmuError`.
    """
    text, source = read_scenario(scenario)
    return run_text(
        text,
        source,
        out=out,
        seed=seed,
        overrides=overrides,
        progress=progress,
        command=command,
        backend=backend,
        allow_large=allow_large,
    )


def run_text(
    text: str,
    source: str,
    *,
    out: str | os.PathLike[str] | None = None,
    seed: int | None = None,
    overrides: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    command: Sequence[str] | None = None,
    backend: str = "sim",
    allow_large: bool = False,
) -> Results:
    """:func:`run` for scenario ``text`` read elsewhere; ``source`` names it.

    ``source`` is the scenario file the text came from (its stem is the default
    scenario name, and the manifest records it), or ``"<string>"``. A sweep's workers
    run cells this way: they get the text, and may not have the file.
    """
    from l4slab._parquet import write_packets
    from l4slab.results import Results

    if backend not in ("sim", "emu"):
        raise ValueError(f"unknown backend {backend!r}; choose 'sim' or 'emu'")
    check_seed(seed)
    overrides = list(overrides)  # read more than once below
    if backend == "emu" and not allow_large:
        # The simulator checks its own limits as it starts; the emulator's are checked here.
        validate_text(text, source, overrides, limits="emu")
    source_id = source if source == _STRING_SOURCE else str(Path(source).resolve())
    staging: RunStaging | None = None
    if out is not None:
        target = output_path(out)
        check_output_dir(target)
        for note in clean_stale_staging(target):
            warnings.warn(note, OutputWarning, stacklevel=2)
        staging = RunStaging(target)
    try:
        started = time.perf_counter()
        result: Any
        if backend == "emu":
            from l4slab import emu

            pcap_dir = staging.path if staging is not None else None
            result = emu.run_scenario(text, source, list(overrides), seed, pcap_dir=pcap_dir)
        else:
            sink = staging.packets if staging is not None else None
            result = _native.run(
                text,
                source,
                list(overrides),
                seed,
                progress,
                sink,
                trace_dirs(),
                allow_large=allow_large,
                pcap_dir=str(staging.path) if staging is not None else None,
            )
        wall_s = time.perf_counter() - started
        if "wall_s" not in result["stats"]:
            result["stats"]["wall_s"] = wall_s
        results = Results.from_native(result, command=command, source=source_id)
        if staging is None and results.scenario.get("pcap"):
            warnings.warn(
                "the scenario sets pcap = true, but pcap files are written only into a "
                "results folder: give out= (l4slab run -o DIR)",
                OutputWarning,
                stacklevel=2,
            )
        if staging is not None:
            if results.packets is not None:  # the emulator's trace comes whole
                write_packets(results.packets, staging.packets_path)
            traced = staging.packets.opened or results.packets is not None
            staging.finish(results)
            staging.commit()
            results._saved_at(staging.target, packets=traced)
    except BaseException:
        if staging is not None:
            staging.abort()
        raise
    return results
