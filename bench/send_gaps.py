#!/usr/bin/env python3
"""Where a check-l4s phase's sender went silent (issue 25): gaps between data
packets at the bottleneck's ingress.

    python3 bench/send_gaps.py /tmp/busy/alone-normal-0 /tmp/busy/alone-rt-0

For each check-l4s bundle (``busy_send.py`` writes them) reads the ``l4s``
phase's capture (``phases/l4s/pcap``, client to server), keeps the data
packets (payload > 1000 bytes) after the first 2 s, and prints: how many,
their CE share at the egress, the gaps longer than 2 ms before a packet (how
many, their sum: the time the sender sent nothing although the path would
take four packets) and the share of the time the link idled (the gaps beyond
one packet's serialization at ``--rate``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from l4slab.check.pcap import CE, read_direction


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundles", nargs="+", type=Path)
    ap.add_argument("--phase", default="l4s")
    ap.add_argument("--rate", type=float, default=20e6, help="bottleneck rate, bit/s")
    ap.add_argument("--skip", type=float, default=2.0, help="seconds left out at the start")
    ap.add_argument("--gap-ms", type=float, default=2.0, help="a gap longer than this counts")
    a = ap.parse_args()
    print(f"| bundle | data packets | CE | gaps > {a.gap_ms:g} ms | their sum ms | link idle |")
    print("|---|---|---|---|---|---|")
    for b in a.bundles:
        p = read_direction(b / "phases" / a.phase / "pcap", "up")
        data = p.payload > 1000
        t, ce = p.t_in[data], p.ecn_out[data] == CE
        keep = t > t[0] + a.skip
        t, ce = t[keep], ce[keep]
        gaps_ms = np.diff(t) * 1e3
        size = float(np.median(p.ip_len[data]))
        ser_ms = size * 8 / a.rate * 1e3
        long = gaps_ms > a.gap_ms
        idle = float(np.maximum(gaps_ms - ser_ms, 0).sum()) / ((t[-1] - t[0]) * 1e3)
        print(
            f"| {b} | {len(t)} | {ce.mean() * 100:.1f} % | {int(long.sum())} | "
            f"{gaps_ms[long].sum():.0f} | {idle * 100:.1f} % |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
