#!/usr/bin/env python3
"""Time the simulator of two builds of the native module on the same scenarios, alternating.

    python3 bench/ab.py BEFORE.so AFTER.so [SCENARIO.toml ...] [--repeat 7]

Each round runs every scenario once on each build, in alternating order, so that
whatever else the machine is doing falls on both alike; prints the median wall time
of each build per scenario and their ratio. Default scenarios: bench/scenarios/.
Copy a build's ``python/l4slab/_native.abi3.so`` aside to keep it as BEFORE.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def load(path: Path, tag: str) -> ModuleType:
    # The init symbol is PyInit__native whatever the file is called.
    loader = importlib.machinery.ExtensionFileLoader("_native", str(path))
    spec = importlib.util.spec_from_file_location("_native", path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    module.__dict__["_ab_tag"] = tag
    return module


def once(native: ModuleType, path: Path) -> float:
    text = path.read_text()
    t0 = time.perf_counter()
    native.run(text, str(path), [], None, None)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("scenarios", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    scenarios = args.scenarios or sorted((HERE / "scenarios").glob("*.toml"))
    # Two extension modules of one name cannot both live in one process: load one at
    # a time, each in a fresh interpreter.
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(args.repeat):
        order = [("before", args.before), ("after", args.after)]
        if r % 2:
            order.reverse()
        for tag, so in order:
            paths = [str(s) for s in scenarios]
            code = (
                f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import ab; "
                f"n = ab.load(ab.Path({str(so)!r}), {tag!r}); "
                f"print(json.dumps([ab.once(n, ab.Path(p)) for p in {paths!r}]))"
            )
            out = subprocess.run(
                [sys.executable, "-c", code], check=True, capture_output=True, text=True
            )
            for s, t in zip(scenarios, json.loads(out.stdout), strict=True):
                times.setdefault((tag, s.name), []).append(t)
        print(f"round {r + 1}/{args.repeat} done", file=sys.stderr)
    print(f"{'scenario':34} {'before s':>9} {'after s':>9} {'after/before':>13}")
    for s in scenarios:
        b = statistics.median(times[("before", s.name)])
        a = statistics.median(times[("after", s.name)])
        print(f"{s.name:34} {b:9.3f} {a:9.3f} {a / b:13.3f}")


if __name__ == "__main__":
    main()
