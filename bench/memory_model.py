#!/usr/bin/env python3
"""The scenarios behind the memory models of the cost estimate (docs/PERFORMANCE.md,
"What a run holds in memory: stations, calls, probes"), printed as TOML.

    python3 bench/memory_model.py --stations 500 --duration 2s > /tmp/s.toml
    python3 bench/memory_model.py --calls 100 --duration 8s > /tmp/s.toml
    python3 bench/memory_model.py --ping 10us --duration 2s > /tmp/s.toml
    /usr/bin/time -f %M l4slab run /tmp/s.toml -o /tmp/out --allow-large

``--stations N``: one 802.11ax 80 MHz 2x2 cell, N stations (SNR 15 to 39 dB), each with
one Cubic download, behind a 1 Gbit/s WAN. ``--calls N``: N video calls over RTP with
SCReAM on a 1 Gbit/s bottleneck. ``--ping INTERVAL``: one ping flow. Peak RSS is the
``%M`` (KiB) of ``/usr/bin/time``.
"""

from __future__ import annotations

import argparse

HEAD = """format = 1
duration = "{duration}"
[bottleneck]
rate = "1Gbit"
delay = "8ms"
buffer = "5000pkt"
"""


def stations(n: int) -> str:
    parts = ['[wifi]\nstandard = "ax"\nwidth = "80MHz"\nnss = 2\n']
    parts += [
        f'[hosts.s{i}]\nside = "client"\nwifi = {{ snr_db = {15 + i % 25} }}\n' for i in range(n)
    ]
    parts += [
        f'[[flows]]\nname = "d{i}"\nclient = "s{i}"\ncc = "cubic"\napp = "bulk"\n' for i in range(n)
    ]
    return "".join(parts)


def calls(n: int) -> str:
    app = '{ kind = "video_call", transport = "rtp", media_cc = "scream" }'
    return f"[[flows]]\ncount = {n}\napp = {app}\n"


def ping(interval: str) -> str:
    return f'[[flows]]\napp = {{ kind = "ping", interval = "{interval}" }}\n'


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--stations", type=int, help="a Wi-Fi cell of N stations")
    which.add_argument("--calls", type=int, help="N RTP video calls")
    which.add_argument("--ping", help="one ping flow at this interval")
    ap.add_argument("--duration", default="2s", help="simulated duration (default 2s)")
    args = ap.parse_args()
    if args.stations is not None:
        body = stations(args.stations)
    elif args.calls is not None:
        body = calls(args.calls)
    else:
        body = ping(args.ping)
    print(HEAD.format(duration=args.duration) + body)


if __name__ == "__main__":
    main()
