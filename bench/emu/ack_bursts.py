#!/usr/bin/env python3
"""ACK and burst structure of one bulk download, from packet traces.

    l4slab run scenarios/emu/cubic-codel.toml --backend sim --set packet_trace=true -o R/sim
    sudo l4slab run scenarios/emu/cubic-codel.toml --backend emu --set packet_trace=true -o R/emu
    python3 bench/emu/ack_bursts.py R/sim R/emu

For each results directory (a run with ``packet_trace = true`` whose flow is
``download``), after the start-up (``--from`` seconds), prints a Markdown row:

* **ACKs covering >= 5 segments, per second**: cumulative ACKs from the
  receiver whose acknowledged sequence advanced by 5 or more full segments
  (stretch ACKs; a delayed-ACK receiver acknowledges every second segment,
  so loss recovery is the only other source);
* **burst size**: data packets that reach the bottleneck queue less than
  100 us apart form one burst; the mean burst a packet belongs to
  (packet-weighted) and the share of packets in bursts of 5 or more;
* **steady queue delay**: mean of the ``sojourn_ms`` samples of the
  bottleneck's down queue;
* **apps-thread run-queue wait**: for emulated runs, the time the thread of
  the endpoints' socket calls spent runnable but not running
  (``summary.emulator.threads``).

docs/emulator.md uses it to show where the simulator and the emulator
differed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

MSS = 1448
GAP_S = 100e-6


def row(path: Path, start: float) -> str:
    summary = json.loads((path / "summary.json").read_text())
    p = pq.read_table(path / "packets.parquet").to_pydict()
    t = np.array(p["t_s"])
    ev = np.array(p["event"], dtype=str)
    side = np.array(p["side"], dtype=str)
    length = np.array(p["len"])
    ack = np.array(p["ack"])
    steady = t >= start
    secs = t[steady].max() - start
    acks = ack[(ev == "send") & (side == "ack") & steady]
    step = np.diff(acks)
    stretch = int((step >= 5 * MSS).sum())
    arrivals = t[(ev == "send") & (side == "data") & (length > 0) & steady]
    bursts = np.diff(
        np.flatnonzero(np.diff(arrivals) >= GAP_S), prepend=-1, append=len(arrivals) - 1
    )
    bursts = bursts[bursts > 0]
    weighted = float((bursts**2).sum() / bursts.sum())
    big = float(bursts[bursts >= 5].sum() / bursts.sum())
    s = pq.read_table(path / "series.parquet").to_pydict()
    ts = np.array(s["t_s"])
    sel = (
        (np.array(s["series"], dtype=str) == "queue/bottleneck.down")
        & (np.array(s["key"], dtype=str) == "sojourn_ms")
        & (ts >= start)
    )
    soj = float(np.array(s["value"])[sel].mean())
    threads = (summary.get("emulator") or {}).get("threads")
    wait = f"{threads['applications']['runqueue_wait_s']:.2f} s" if threads else "—"
    backend = summary.get("backend", "sim")
    return (
        f"| {path.name} ({backend}) | {stretch / secs:.1f} | {weighted:.2f} | {big:.1%} "
        f"| {soj:.2f} | {wait} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--from", dest="start", type=float, default=3.0, help="skip the start-up (s)")
    args = ap.parse_args()
    print(
        "| run | ACKs covering >= 5 segments /s | burst size (pkt-weighted mean) "
        "| packets in bursts >= 5 | steady queue delay ms | apps-thread run-queue wait |"
    )
    print("|---|---|---|---|---|---|")
    for path in args.results:
        print(row(path, args.start))


if __name__ == "__main__":
    main()
