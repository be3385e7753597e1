#!/usr/bin/env python3
"""How DualPI2's base probability p' moves over time, and what that does to the
coupled probabilities (RFC 9332 §2 assumes a steady p').

    python3 bench/pi2_variance.py                  # 50 and 10 Mbit/s, seed 1
    python3 bench/pi2_variance.py --seeds 1 2 3    # more seeds

Runs the `dualq` scenario of the l4s-building-blocks study (one Prague and one
Cubic flow through DualPI2 with Linux defaults, 20 ms base RTT) for 60 s,
sampling every 16 ms (PI2's `tupdate`), and reports over [10 s, 60 s]: the mean,
spread and autocorrelation of p' (the `prob` series), E[p_C] = E[p'^2] against
the p_C a steady p' would give (mean(p')^2), and E[p_L] = E[min(1, k p')].
Record the figures in docs/models/dualpi2.md with this command.
"""

from __future__ import annotations

import argparse

import numpy as np

import l4slab
from l4slab import shipped

WARMUP_S = 10.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--rates", nargs="+", default=["50Mbit", "10Mbit"])
    args = ap.parse_args()
    scenario = shipped.studies_dir() / "l4s-building-blocks" / "dualq.toml"
    print(
        "rate seed  mean p'  cv(p')  p10    p90    E[p'^2]/mean(p')^2  E[p_L]  acf(16ms, 160ms, 1s)"
    )
    for rate in args.rates:
        for seed in args.seeds:
            res = l4slab.run(
                scenario,
                seed=seed,
                overrides=[f"bottleneck.rate={rate}", "duration=60s", "sample_interval=16ms"],
            )
            t, p = res.series("queue/bottleneck.down", "prob")
            p = p[t >= WARMUP_S]
            x = p - p.mean()
            acf = [float(x[:-k] @ x[k:] / (x @ x)) for k in (1, 10, 62)]
            print(
                f"{rate:>7} {seed:>3}  {p.mean():.4f}  {p.std() / p.mean():.2f}   "
                f"{np.percentile(p, 10):.4f} {np.percentile(p, 90):.4f} "
                f"{(p * p).mean() / p.mean() ** 2:>10.2f}          "
                f"{np.minimum(1.0, 2 * p).mean():.4f}  " + ", ".join(f"{a:.2f}" for a in acf)
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
