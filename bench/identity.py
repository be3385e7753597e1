#!/usr/bin/env python3
"""Digest every shipped scenario's results, to show a refactor changes no number.

    python3 bench/identity.py -o before.json          # on the old commit
    python3 bench/identity.py --compare before.json   # on the new one: exit 1 on any change
    python3 bench/identity.py --native OLD.so -o before.json   # an old build kept aside

Runs each scenario under scenarios/golden, scenarios/examples, bench/scenarios and
scenarios/studies/*/ (every file but study.toml) in the simulator with its own seed,
and digests what the run returns: summary.json without its wall-clock fields, and
the series rows in order as series.parquet holds them (names, not the codes
the native module happened to intern them under). ``--studies`` also digests each
study's study.json from ``l4slab reproduce all`` (the verdicts, published vs
measured). Prints one line per scenario; with ``--compare``, the ones whose digest
changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from l4slab import _native, api

ROOT = Path(__file__).resolve().parent.parent
GLOBS = [
    "scenarios/golden/*.toml",
    "scenarios/examples/*.toml",
    "bench/scenarios/*.toml",
    "scenarios/studies/*/*.toml",
]
# Fields that measure the machine, not the model.
WALL_KEYS = {"wall_s", "wall_time_s", "wall_clock_s", "events_per_s"}


def strip_wall(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_wall(v) for k, v in value.items() if k not in WALL_KEYS}
    if isinstance(value, list):
        return [strip_wall(v) for v in value]
    return value


def digest_run(native: Any, path: Path) -> str:
    out = native.run(path.read_text(), str(path), [], None, None, None, api.trace_dirs(), True)
    h = hashlib.sha256()
    summary = strip_wall(json.loads(out["summary_json"]))
    h.update(json.dumps(summary, sort_keys=True).encode())
    series = out["series"]
    names = series["names"]
    for col in ("t_s", "value"):
        h.update(np.frombuffer(series[col], dtype=np.float64).tobytes())
    for col in ("series", "key"):
        codes = np.frombuffer(series[col], dtype=np.uint32).tolist()
        h.update("\0".join(names[i] for i in codes).encode())
    return h.hexdigest()[:16]


def digest_studies() -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "l4slab", "reproduce", "all", "-o", tmp],
            check=False,
            capture_output=True,
        )
        return {
            f"study:{p.parent.name}": hashlib.sha256(
                json.dumps(strip_wall(json.loads(p.read_text())), sort_keys=True).encode()
            ).hexdigest()[:16]
            for p in sorted(Path(tmp).glob("*/study.json"))
        }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-o", "--out", type=Path, help="write the digests here (JSON)")
    ap.add_argument("--compare", type=Path, help="compare with digests written earlier")
    ap.add_argument("--studies", action="store_true", help="also digest `l4slab reproduce all`")
    ap.add_argument(
        "--native", type=Path, help="a build of the native module kept aside (not --studies)"
    )
    args = ap.parse_args()
    native: Any = _native
    if args.native:
        sys.path.insert(0, str(ROOT / "bench"))
        import ab

        native = ab.load(args.native, "identity")
    digests: dict[str, str] = {}
    for pattern in GLOBS:
        for path in sorted(ROOT.glob(pattern)):
            if path.name == "study.toml":
                continue
            key = str(path.relative_to(ROOT))
            try:
                digests[key] = digest_run(native, path)
            except Exception as e:  # a scenario that does not run is recorded as such
                digests[key] = f"error: {type(e).__name__}: {str(e).splitlines()[0]}"
            print(f"{digests[key]}  {key}", flush=True)
    if args.studies:
        for key, d in digest_studies().items():
            digests[key] = d
            print(f"{d}  {key}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    if args.compare:
        before = json.loads(args.compare.read_text())
        changed = sorted(
            k for k in before.keys() | digests.keys() if before.get(k) != digests.get(k)
        )
        for k in changed:
            print(f"CHANGED {k}: {before.get(k)} -> {digests.get(k)}")
        print(f"{len(digests)} digests, {len(changed)} changed")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
