"""What comes with l4slab, wherever it is installed: the studies and the cellular traces.

Both are package data (``l4slab/data/studies/<id>/`` and ``l4slab/data/traces/``), so
a wheel installed anywhere carries them; in the source tree ``scenarios/studies`` is a
link to the same directory. Nothing here depends on the working directory.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ShippedDataError", "studies_dir", "trace_names", "traces_dir"]


class ShippedDataError(FileNotFoundError):
    """The installation lacks the data l4slab ships (a broken or partial install)."""


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
