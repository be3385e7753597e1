"""What comes with l4slab, wherever it is installed: the example and golden scenarios,
the studies and the cellular traces.

All are package data (``l4slab/data/examples/``, ``l4slab/data/golden/``,
``l4slab/data/studies/<id>/`` and ``l4slab/data/traces/``), so a wheel installed anywhere
carries them; in the source tree ``scenarios/studies`` is a link to the same directory,
and ``scenarios/examples/`` and ``scenarios/golden/`` hold a link per file (so that
``find scenarios`` sees them). Nothing here depends on the working directory.

A scenario argument that is not a file but names a shipped scenario (``reno-20mbit``,
``reno-20mbit.toml``) is that scenario: :func:`find_scenario`.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ShippedDataError",
    "UnknownScenarioError",
    "example_description",
    "examples",
    "find_scenario",
    "studies_dir",
    "trace_names",
    "traces_dir",
]

#: The directories of shipped scenarios, in the order ``l4slab examples`` lists them.
SCENARIO_DIRS = ("examples", "golden")


class ShippedDataError(FileNotFoundError):
    """The installation lacks the data l4slab ships (a broken or partial install)."""


class UnknownScenarioError(FileNotFoundError):
    """A scenario argument that is neither a file nor the name of a shipped scenario."""


def _data_dir(name: str) -> Path:
    # A wheel or an editable install both give a real directory on disk: the package's
    # own (what importlib.resources.files("l4slab") names, without importing it and its
    # tempfile, random and zipfile on every run; issue 32).
    path = Path(__file__).parent / "data" / name
    if not path.is_dir():
        raise ShippedDataError(
            f"this l4slab installation has no {name} (looked in {path}); reinstall l4slab "
            "(pip install l4slab, or pip install . from the source tree)"
        )
    return path


def studies_dir() -> Path:
    """The directory of the studies l4slab ships (one sub-directory per study)."""
    return _data_dir("studies")


def traces_dir() -> Path:
    """The directory of the mahimahi link traces l4slab ships."""
    return _data_dir("traces")


def trace_names() -> list[str]:
    """The names of the shipped traces (what ``rate = { trace = NAME }`` accepts)."""
    return sorted(p.name for p in traces_dir().iterdir() if p.suffix in (".up", ".down"))


def examples() -> dict[str, Path]:
    """The shipped scenarios by name (the file's stem): the examples, then the golden
    scenarios (the regression tests' fixed points)."""
    found: dict[str, Path] = {}
    for sub in SCENARIO_DIRS:
        for path in sorted(_data_dir(sub).glob("*.toml")):
            found.setdefault(path.stem, path)
    return found


def example_description(path: Path) -> str:
    """The first line of a scenario's leading comment (``""`` when it has none)."""
    with path.open(encoding="utf-8") as file:
        for line in file:
            text = line.strip()
            if not text.startswith("#"):
                return ""
            text = text.lstrip("#").strip()
            if text:
                return text
    return ""


def find_scenario(path: Path) -> Path:
    """``path`` if it exists or names a directory part; else the shipped scenario a bare
    name (``reno-20mbit`` or ``reno-20mbit.toml``) names. Raises
    :class:`UnknownScenarioError` listing the shipped names when it names none."""
    if path.exists() or len(path.parts) != 1:
        return path
    name = path.name.removesuffix(".toml")
    shipped = examples()
    if name in shipped:
        return shipped[name]
    raise UnknownScenarioError(
        f"{path}: no such file, nor a shipped scenario; give a scenario .toml file or one of: "
        f"{', '.join(shipped)} (l4slab examples lists them)"
    )
