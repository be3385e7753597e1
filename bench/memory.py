#!/usr/bin/env python3
"""Peak memory of ``l4slab run`` on a long run with a per-packet trace.

    python3 bench/memory.py                     # 600 s, 100 Mbit/s, packet_trace = true
    python3 bench/memory.py --duration 60s      # shorter
    python3 bench/memory.py -- --set bottleneck.rate=200Mbit   # more l4slab run options

Runs ``l4slab run bench/scenarios/reno-100mbit.toml --set duration=600s --set
packet_trace=true -q -o <tmp>`` in a child process and reports the child's peak
resident set size (``getrusage(RUSAGE_CHILDREN).ru_maxrss``), its wall time, and the
rows and size of the ``packets.parquet`` it wrote. The bundle goes to a temporary
directory that is removed afterwards (``--keep DIR`` writes it to DIR instead).
Record the figures in docs/PERFORMANCE.md together with this command.
"""

from __future__ import annotations

import argparse
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "scenarios" / "reno-100mbit.toml"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scenario", type=Path, default=SCENARIO, help="scenario file")
    ap.add_argument("--duration", default="600s", help="simulated duration (default 600s)")
    ap.add_argument("--keep", type=Path, help="write the bundle here and keep it")
    ap.add_argument("extra", nargs="*", help="more l4slab run options (after --)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="l4slab-memory-"))
    out = args.keep if args.keep is not None else tmp / "bundle"
    command = [
        sys.executable,
        "-m",
        "l4slab",
        "run",
        str(args.scenario),
        "--set",
        f"duration={args.duration}",
        "--set",
        "packet_trace=true",
        "-q",
        "-o",
        str(out),
        *args.extra,
    ]
    print("command:", " ".join(command[2:]), flush=True)
    try:
        started = time.perf_counter()
        status = subprocess.run(command, check=False).returncode
        wall = time.perf_counter() - started
        # ru_maxrss is in KiB on Linux (bytes on macOS).
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        peak_mib = peak / (1 << 20) if sys.platform == "darwin" else peak / 1024
        print(f"exit status: {status}")
        print(f"peak RSS: {peak_mib:,.0f} MiB")
        print(f"wall: {wall:,.1f} s")
        packets = out / "packets.parquet"
        if packets.is_file():
            meta = pq.ParquetFile(packets).metadata
            print(
                f"packets.parquet: {meta.num_rows:,} rows in {meta.num_row_groups} row groups, "
                f"{packets.stat().st_size / 1e6:,.1f} MB"
            )
        print(f"host: {platform.machine()}, Python {platform.python_version()}")
        return status
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
