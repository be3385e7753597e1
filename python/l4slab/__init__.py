"""l4slab: a lab for low-latency networking (L4S, DualQ, classic AQMs).

The public API::

    import l4slab

    res = l4slab.run("scenarios/examples/reno-20mbit.toml", out="results/reno", seed=7,
                     overrides=["bottleneck.down.rate=50Mbit"])
    res.flows()["download"]["goodput_bps"]
    t, cwnd = res.series("flow/download", "cwnd_bytes")
    same = l4slab.load("results/reno")

:func:`run`, :func:`validate`, :func:`estimate`, :class:`ScenarioError`, :class:`SimulationError`
and ``__version__`` come from the compiled simulator (``l4slab._native``);
:func:`load` and :class:`Results` work without it. Every name is loaded on first
use, so ``import l4slab`` (and ``python -m l4slab._emu``, the emulator, which must
start before any library starts threads of its own) imports nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from l4slab._native import ScenarioError, SimulationError, __version__
    from l4slab.api import estimate, run, validate
    from l4slab.results import Results, load

__all__ = [
    "Results",
    "ScenarioError",
    "SimulationError",
    "__version__",
    "estimate",
    "load",
    "run",
    "validate",
]

# name -> module that defines it; imported on first access (PEP 562).
_LAZY = {
    "Results": "l4slab.results",
    "load": "l4slab.results",
    "run": "l4slab.api",
    "estimate": "l4slab.api",
    "validate": "l4slab.api",
    "ScenarioError": "l4slab._native",
    "SimulationError": "l4slab._native",
    "__version__": "l4slab._native",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'l4slab' has no attribute {name!r}")
    if module_name == "l4slab._native":
        importlib.import_module("l4slab.api")  # turns a missing build into a clear ImportError
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
