#!/usr/bin/env python3
"""Simulator vs emulator: the same scenarios on both backends (needs root).

    sudo python3 bench/emu/compare.py     # scenarios/emu/*.toml at 20 and 50 Mbit/s
    sudo python3 bench/emu/compare.py --rates 20Mbit --out results/sim-vs-emu

Runs each scenario in scenarios/emu/ (kernel cubic through FIFO, CoDel and
DualPI2) with ``--backend sim`` and ``--backend emu`` at each rate, keeps the
bundles under OUT/<scenario>-<rate>-<backend>/, prints a Markdown table of
goodput, RTT and queue delay side by side (the one in docs/emulator.md; each
cell is "sim / emu", "steady" columns average the samples after 3 s), and
draws OUT/queue-delay.png: the bottleneck's queue delay over time, sim vs emu.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import l4slab

HERE = Path(__file__).resolve().parent
SCENARIOS = sorted((HERE.parent.parent / "scenarios" / "emu").glob("cubic-*.toml"))


#: Start of the steady state (after slow start) for the "steady" columns.
STEADY_S = 3.0


def steady_mean(res: l4slab.Results, series: str, key: str) -> float:
    t, v = res.series(series, key)
    keep = v[t >= STEADY_S]
    return float(keep.mean()) if len(keep) else float("nan")


def health(res: l4slab.Results) -> str:
    """How undisturbed an emulated run was: its timing error and the time its
    threads waited for a CPU (other load on the machine)."""
    emu = res.summary.get("emulator") or {}
    t = emu.get("timing_error_us") or {}
    threads = emu.get("threads") or {}
    wait = {k: v.get("runqueue_wait_s", float("nan")) for k, v in threads.items()}
    return (
        f"timing p99 {t.get('p99', float('nan')):.0f} us, "
        f"run-queue wait forwarder {wait.get('forwarder', float('nan')):.2f} s "
        f"/ applications {wait.get('applications', float('nan')):.2f} s"
    )


def metrics(res: l4slab.Results) -> dict[str, Any]:
    flow = res.flow("download")
    q = res.queue("bottleneck.down")
    soj = q["sojourn_ms"] or {}
    rtt = flow["rtt_ms"] or {}
    drops = q["drops"]["total"]
    return {
        "goodput": flow["goodput_bps"] / 1e6,
        "rtt_p50": rtt.get("p50", float("nan")),
        "soj_p50": soj.get("p50", float("nan")),
        "soj_p99": soj.get("p99", float("nan")),
        "drops": drops,
        "retrans": flow["retransmits"],
        "steady_goodput": steady_mean(res, "flow/download", "goodput_bps") / 1e6,
        "steady_soj": steady_mean(res, "queue/bottleneck.down", "sojourn_ms"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", nargs="+", default=["20Mbit", "50Mbit"])
    ap.add_argument("--out", type=Path, default=Path("results/sim-vs-emu"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    notes: list[str] = []
    traces: dict[str, tuple[Any, Any]] = {}
    for path in SCENARIOS:
        for rate in args.rates:
            sets = [f"bottleneck.rate={rate}"]
            pair = {}
            for backend in ("sim", "emu"):
                out = args.out / f"{path.stem}-{rate}-{backend}"
                res = l4slab.run(path, out=out, overrides=sets, backend=backend)
                pair[backend] = metrics(res)
                if backend == "emu":
                    notes.append(f"{path.stem} {rate}: {health(res)}")
                traces[f"{path.stem} {rate} {backend}"] = res.series(
                    "queue/bottleneck.down", "sojourn_ms"
                )
            rows.append((path.stem.removeprefix("cubic-"), rate, pair["sim"], pair["emu"]))
    print(
        "| qdisc | rate | goodput Mbit/s | RTT p50 ms | queue delay p50 ms "
        "| queue delay p99 ms | drops | steady goodput Mbit/s | steady queue delay ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for qdisc, rate, s, e in rows:
        print(
            f"| {qdisc} | {rate} | {s['goodput']:.2f} / {e['goodput']:.2f} "
            f"| {s['rtt_p50']:.1f} / {e['rtt_p50']:.1f} "
            f"| {s['soj_p50']:.2f} / {e['soj_p50']:.2f} "
            f"| {s['soj_p99']:.2f} / {e['soj_p99']:.2f} | {s['drops']} / {e['drops']} "
            f"| {s['steady_goodput']:.2f} / {e['steady_goodput']:.2f} "
            f"| {s['steady_soj']:.2f} / {e['steady_soj']:.2f} |"
        )
    print(f"(each cell: sim / emu; steady = mean over t >= {STEADY_S:g} s of the 100 ms samples)")
    print("emulated runs (a loaded machine shows here first):")
    for note in notes:
        print(f"  {note}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is optional here
        return
    names = [p.stem for p in SCENARIOS]
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 2.4 * len(names)), sharex=True)
    for ax, name in zip(axes, names, strict=True):
        rate = args.rates[0]
        for backend, style in (("sim", "-"), ("emu", "--")):
            t, v = traces[f"{name} {rate} {backend}"]
            ax.plot(t, v, style, label=f"{backend}")
        ax.set_title(f"{name} at {rate}: queue delay (mean per 100 ms)")
        ax.set_ylabel("ms")
        ax.legend(loc="upper right")
    axes[-1].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(args.out / "queue-delay.png", dpi=110)
    print(f"figure: {args.out / 'queue-delay.png'}")


if __name__ == "__main__":
    main()
