#!/usr/bin/env python3
"""Regenerate the tables and figures of docs/apps.md's "Behaviour study" (issue 26).

    python bench/apps_study.py video [--seeds 5] [--figures docs/figures]
    python bench/apps_study.py web   [--seeds 5] [--figures docs/figures]

``video`` runs scenarios/studies-apps/video-vs-download.toml over
qdisc (fifo, fq_codel, dualpi2) x ABR rule (throughput, bba, bola) x seeds 1..N x
the download's start time (``--starts``, default 6, 8, 10, 12, 14 s: FIFO and
FQ-CoDel draw no random number here, so only the start varies their runs);
``web`` runs scenarios/studies-apps/web-vs-download.toml over the three qdiscs x
seeds. Both print a Markdown table: each metric as the median over the runs with
its range (min-max) in brackets. With ``--figures``, ``video`` draws buffer level
and bitrate over time of seed 1, download from 10 s, of each queue and rule, and
``web`` the page-load CDF of every page of every seed, per queue, with l4slab's
plotting helpers.
Everything runs in the simulator, in this process (a few seconds per run in a
debug build).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from l4slab import api
from l4slab.plots._style import COLORS, new_axes
from l4slab.plots.cdf import cdf_line

ROOT = Path(__file__).resolve().parent.parent
VIDEO = ROOT / "scenarios/studies-apps/video-vs-download.toml"
WEB = ROOT / "scenarios/studies-apps/web-vs-download.toml"
QDISCS = ("fifo", "fq_codel", "dualpi2")
RULES = ("throughput", "bba", "bola")


def spread(values: Sequence[float], fmt: Callable[[float], str]) -> str:
    """Median over the seeds and the range, ``m (lo-hi)``; one value alone."""
    if not values:
        return "—"
    med, lo, hi = statistics.median(values), min(values), max(values)
    if lo == hi:
        return fmt(med)
    return f"{fmt(med)} ({fmt(lo)}\u2013{fmt(hi)})"


def video(seeds: int, starts: Sequence[float], figures: Path | None) -> None:
    rows: list[list[str]] = []
    runs: dict[tuple[str, str], Any] = {}
    for q in QDISCS:
        for rule in RULES:
            cells: list[dict[str, Any]] = []
            for seed, start in [(s, t) for s in range(1, seeds + 1) for t in starts]:
                res = api.run(
                    VIDEO,
                    seed=seed,
                    overrides=[
                        f"bottleneck.qdisc={q}",
                        f'flows[0].app.abr="{rule}"',
                        f'flows[1].start="{start:g}s"',
                    ],
                )
                if seed == 1 and start == 10:
                    runs[(q, rule)] = res
                m = res.flow("tv")["app_metrics"]
                segs = m["segments"]
                game = sum(
                    f["goodput_bps"] for name, f in res.flows().items() if name.startswith("game")
                )
                cells.append(
                    {
                        "startup": m["startup_delay_s"],
                        "events": m["rebuffer_events"],
                        "rebuf": m["rebuffer_s"],
                        "ratio": m["rebuffer_ratio"] * 100,
                        "rung": statistics.mean(s["rung"] for s in segs),
                        "mbps": m["mean_bitrate_bps"] / 1e6,
                        "switches": m["bitrate_switches"],
                        "p50": m["segment_fetch_ms"]["p50"] / 1e3,
                        "p95": float(np.percentile([s["fetch_s"] for s in segs], 95)),
                        "max": m["segment_fetch_ms"]["max"] / 1e3,
                        "game": game / 1e6,
                    }
                )

            def col(
                k: str, fmt: Callable[[float], str], cells: list[dict[str, Any]] = cells
            ) -> str:
                return spread([c[k] for c in cells], fmt)

            rows.append(
                [
                    q,
                    rule,
                    f"{sum(c['events'] > 0 for c in cells)}/{len(cells)}",
                    col("startup", lambda v: f"{v:.2f}"),
                    col("events", lambda v: f"{v:g}"),
                    col("rebuf", lambda v: f"{v:.1f}"),
                    col("ratio", lambda v: f"{v:.1f}"),
                    col("rung", lambda v: f"{v:.1f}"),
                    col("mbps", lambda v: f"{v:.2f}"),
                    col("switches", lambda v: f"{v:g}"),
                    col("p50", lambda v: f"{v:.1f}"),
                    col("p95", lambda v: f"{v:.1f}"),
                    col("max", lambda v: f"{v:.1f}"),
                    col("game", lambda v: f"{v:.2f}"),
                ]
            )
    head = [
        "queue",
        "ABR",
        "runs with a stall",
        "startup s",
        "stalls",
        "stalled s",
        "rebuffer %",
        "mean rung",
        "mean Mbit/s",
        "switches",
        "fetch p50 s",
        "fetch p95 s",
        "fetch max s",
        "download Mbit/s",
    ]
    table(head, rows)
    if figures is not None:
        video_figure(runs, figures / "apps-study-video.png")


def video_figure(runs: dict[tuple[str, str], Any], path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(13, 6), sharex=True, sharey="row")
    for j, q in enumerate(QDISCS):
        top, bottom = axes[0][j], axes[1][j]
        for rule, color in zip(RULES, COLORS, strict=False):
            res = runs[(q, rule)]
            t, b = res.series("flow/tv", "video_buffer_s")
            top.plot(t, b, color=color, label=rule)
            t, r = res.series("flow/tv", "video_bitrate_bps")
            bottom.step(t, r / 1e6, where="post", color=color, label=rule)
        top.set_title(f"{q}: buffer level (seed 1)")
        bottom.set_title(f"{q}: bitrate of the latest segment")
        bottom.set_xlabel("time (s)")
        for ax in (top, bottom):
            ax.axvline(10, color="0.6", linestyle=":", linewidth=1)
            ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("buffer (s)")
    axes[1][0].set_ylabel("bitrate (Mbit/s)")
    axes[0][0].legend(title="ABR", loc="upper left")
    fig.suptitle("HD stream beside 8 Cubic downloads (from 10 s, dotted), 10 Mbit/s, 250 ms buffer")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    print(f"wrote {path}")


def web(seeds: int, figures: Path | None) -> None:
    rows: list[list[str]] = []
    loads: dict[str, list[float]] = {}
    for q in QDISCS:
        cells: list[dict[str, float]] = []
        every: list[float] = []
        for seed in range(1, seeds + 1):
            res = api.run(WEB, seed=seed, overrides=[f"bottleneck.qdisc={q}"])
            m = res.flow("browse")["app_metrics"]
            pages = [p["load_s"] * 1e3 for p in m["pages"] if p.get("load_s") is not None]
            ttfb = [p["ttfb_s"] * 1e3 for p in m["pages"] if p.get("ttfb_s") is not None]
            every += pages
            cells.append(
                {
                    "pages": len(pages),
                    "p50": float(np.percentile(pages, 50)),
                    "p95": float(np.percentile(pages, 95)),
                    "ttfb": float(np.percentile(ttfb, 50)),
                }
            )
        loads[q] = every
        rows.append(
            [
                q,
                spread([c["pages"] for c in cells], lambda v: f"{v:g}"),
                spread([c["ttfb"] for c in cells], lambda v: f"{v:.0f}"),
                spread([c["p50"] for c in cells], lambda v: f"{v:.0f}"),
                spread([c["p95"] for c in cells], lambda v: f"{v:.0f}"),
                f"{np.percentile(every, 50):.0f}",
                f"{np.percentile(every, 95):.0f}",
            ]
        )
    head = [
        "queue",
        "pages per run",
        "first byte p50 ms",
        "load p50 ms",
        "load p95 ms",
        "all pages p50 ms",
        "all pages p95 ms",
    ]
    table(head, rows)
    if figures is not None:
        ax = new_axes(None)
        for q, color in zip(QDISCS, COLORS, strict=False):
            cdf_line(ax, np.asarray(loads[q]) / 1e3, f"{q} ({len(loads[q])} pages)", color=color)
        ax.set_xscale("log")
        ax.set_xlabel("page load time (s)")
        ax.set_ylabel("fraction of pages")
        ax.set_title(f"Page loads beside 8 Cubic downloads, 10 Mbit/s ({seeds} seeds)")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right")
        path = figures / "apps-study-web-cdf.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        ax.figure.savefig(path, dpi=90, bbox_inches="tight")
        print(f"wrote {path}")


def table(head: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("study", choices=("video", "web"))
    p.add_argument("--seeds", type=int, default=5, help="seeds 1..N per cell (default 5)")
    p.add_argument(
        "--starts",
        default="6,8,10,12,14",
        help="video: the download's start times in s, each with every seed (default 6,8,10,12,14)",
    )
    p.add_argument("--figures", type=Path, help="directory for the figures (docs/figures)")
    a = p.parse_args()
    if a.study == "video":
        video(a.seeds, [float(t) for t in a.starts.split(",")], a.figures)
    else:
        web(a.seeds, a.figures)


if __name__ == "__main__":
    main()
