"""How the report writes values: metrics, times, rates, nested keys, anchors."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from l4slab.tables import MISSING


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """``{"a": {"b": 1}, "c": [1, 2]}`` -> ``[("a.b", 1), ("c", [1, 2])]``."""
    if isinstance(value, Mapping):
        out: list[tuple[str, Any]] = []
        for key, inner in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(inner, Mapping) and inner:
                out.extend(_flatten(inner, path))
            else:
                out.append((path, inner))
        return out
    return [(prefix, value)]


def _value(value: Any) -> str:
    """A metric value as text: integers with separators, floats to 6 significant digits."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        number = float(value)
        if not math.isfinite(number):
            return MISSING
        if number == int(number) and abs(number) < 1e15:
            return f"{int(number):,}"
        return f"{number:,.6g}" if abs(number) >= 1e-3 or number == 0 else f"{number:.3g}"
    if isinstance(value, Mapping | list):
        return json.dumps(value) if value else MISSING
    return str(value)


def _ms(ns: Any) -> str:
    if not isinstance(ns, int | float) or isinstance(ns, bool):
        return MISSING
    return f"{ns / 1e6:g} ms"


def _seconds(ns: Any) -> str:
    if not isinstance(ns, int | float) or isinstance(ns, bool):
        return MISSING
    return f"{ns / 1e9:g} s"


def _seconds_value(s: Any) -> str:
    if not isinstance(s, int | float) or isinstance(s, bool):
        return MISSING
    return f"{s:.3f} s" if s < 10 else f"{s:.1f} s"


def _rate(bps: Any) -> str:
    if not isinstance(bps, int | float) or isinstance(bps, bool):
        return MISSING
    for unit, size in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= size:
            return f"{bps / size:g} {unit}"
    return f"{bps:g} bit/s"


def _anchor(title: str) -> str:
    """A title as an HTML id or file stem: ``"Frame latency (up)"`` -> ``frame-latency-up``."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
