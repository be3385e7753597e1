"""The ``check-l4s`` report: ``summary.json``, one figure per phase, ``report.html``.

Figures are plain functions taking an ``Axes`` (DESIGN §7); the page is
self-contained HTML that links the figures next to it. JSON has no NaN or
infinity: a number that is not finite is written as ``null`` and its path is
listed in ``summary.json``'s ``null_numbers`` with the reason (:func:`finite`).
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

from l4slab.check.judge import Check, phase_problems
from l4slab.check.measure import PhaseMetrics

__all__ = ["finite", "format_text", "plot_phase", "write_report"]

_COLOURS = {
    "PASS": "#1a7f37",
    "FAIL": "#cf222e",
    "WARN": "#9a6700",
    "NOT OBSERVABLE": "#57606a",
    "NOT APPLICABLE": "#57606a",
    "INCONCLUSIVE": "#8250df",
}


def finite(value: Any, nulls: dict[str, str], path: str = "") -> Any:
    """``value`` with every NaN or infinite float replaced by None, each one's
    path and reason added to ``nulls`` (a measured quantity divided by a zero
    duration or count gives infinity; an empty set's mean NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        nulls[path] = (
            "not a number (no samples)" if math.isnan(value) else "infinite (divided by zero)"
        )
        return None
    if isinstance(value, dict):
        return {k: finite(v, nulls, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v, nulls, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def _nan(v: list[float | None]) -> list[float]:
    return [math.nan if x is None else x for x in v]


def plot_phase(axes: Any, m: PhaseMetrics) -> None:
    """Three stacked panels on ``axes`` (a sequence of 3 Axes): delivered rate,
    CE fraction and ECT(1) share, queue delay; over the phase's time."""
    s = m.series
    t = _nan(s["t_s"])
    ax0, ax1, ax2 = axes
    ax0.plot(t, _nan(s["rate_mbit"]), label="application", color="#0969da")
    if m.competitor_mbit is not None:
        ax0.plot(t, _nan(s["competitor_mbit"]), label="kernel Cubic (ECN)", color="#bc4c00")
        ax0.legend(fontsize=7, loc="upper right")
    ax0.set_ylabel("Mbit/s")
    ax0.set_title(f"{m.name}", fontsize=9)
    ax1.plot(t, _nan(s["ce_fraction"]), label="CE fraction (marked by the path)", color="#cf222e")
    ax1.plot(t, _nan(s["ect1_share"]), label="ECT(1) share (sender)", color="#8250df", ls="--")
    ax1.set_ylim(-0.02, 1.02)
    ax1.legend(fontsize=7, loc="upper right")
    ax2.plot(t, _nan(s["qdelay_ms"]), color="#1a7f37")
    ax2.set_ylabel("queue ms")
    ax2.set_xlabel("time since the first data packet (s)")
    for ax in axes:
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)


def _figure(m: PhaseMetrics, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(4.2, 4.2), sharex=True)
    plot_phase(axes, m)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def format_text(checks: list[Check], verdict: str) -> str:
    """The verdicts as lines for a terminal."""
    lines = []
    for c in checks:
        lines.append(f"{c.verdict:<14} {c.title} [{c.rfc}, {c.level}]")
        lines.append(f"{'':<14} {c.evidence}")
    lines.append(f"verdict: {verdict}")
    return "\n".join(lines)


def write_report(
    out: Path,
    *,
    checks: list[Check],
    metrics: dict[str, PhaseMetrics],
    verdict: str,
    meta: dict[str, Any],
) -> None:
    """Write ``out/summary.json``, ``out/figures/<phase>.png`` and ``out/report.html``."""
    (out / "figures").mkdir(parents=True, exist_ok=True)
    nulls: dict[str, str] = {}
    summary = finite(
        {
            "format_version": 1,
            "verdict": verdict,
            "failed": [c.id for c in checks if c.verdict == "FAIL"],
            "inconclusive": [c.id for c in checks if c.verdict == "INCONCLUSIVE"],
            "checks": [c.to_json() for c in checks],
            "phases": {k: m.to_json() for k, m in metrics.items()},
            **meta,
        },
        nulls,
    )
    summary["null_numbers"] = nulls
    text = json.dumps(summary, indent=1, sort_keys=True, allow_nan=False)
    (out / "summary.json").write_text(text + "\n")
    for m in metrics.values():
        _figure(m, out / "figures" / f"{m.name}.png")
    (out / "report.html").write_text(_html(checks, metrics, verdict, meta))


def _html(
    checks: list[Check], metrics: dict[str, PhaseMetrics], verdict: str, meta: dict[str, Any]
) -> str:
    e = html.escape
    rows = []
    for c in checks:
        colour = _COLOURS.get(c.verdict, "#000")
        phases = ", ".join(f'<a href="#{e(p)}">{e(p)}</a>' for p in c.phases if p in metrics)
        rows.append(
            f'<tr><td style="color:{colour};font-weight:bold">{e(c.verdict)}</td>'
            f"<td><b>{e(c.title)}</b><br><small>{e(c.meaning)}</small></td>"
            f"<td>{e(c.rfc)}<br>{e(c.level)}</td><td>{e(c.evidence)}</td><td>{phases}</td></tr>"
        )
    figs = []
    for m in metrics.values():
        title = e(str(meta.get("phase_titles", {}).get(m.name, m.name)))
        problems = phase_problems(m)
        note = (
            f'<p style="color:#8250df">{e(problems[0])}: {e("; ".join(problems[1]))}</p>'
            if problems
            else ""
        )
        figs.append(
            f'<div class="fig" id="{e(m.name)}"><h3>{e(m.name)}</h3><p>{title}</p>{note}'
            f'<img src="figures/{e(m.name)}.png" alt="{e(m.name)}"></div>'
        )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>l4slab check-l4s</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; max-width: 80em; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #d0d7de; padding: .4em;
vertical-align: top; font-size: 90%; }}
.fig {{ display: inline-block; margin: .5em; vertical-align: top; width: 390px; }}
.fig p {{ font-size: 80%; margin: 0; }}
</style></head><body>
<h1>l4slab check-l4s</h1>
<p><b>Verdict: {e(verdict)}</b></p>
<p>Client: <code>{e(str(meta.get("client", "")))}</code><br>
Server: <code>{e(str(meta.get("server", "")))}</code><br>
{e(str(meta.get("phase_seconds", "")))} s per phase; data direction
{e(str(meta.get("data_dir", "")))}; l4slab {e(str(meta.get("version", "")))}</p>
<table><tr><th>verdict</th><th>requirement</th><th>where</th><th>evidence</th>
<th>phases</th></tr>
{"".join(rows)}
</table>
<h2>Phases</h2>
<p>Each figure: the application's data delivered past the bottleneck; the share of its
ECN-capable data the path marked CE and the share it sent as ECT(1); the queue delay of
its data. All from the bottleneck's own capture (both directions) in
<code>phases/&lt;phase&gt;/pcap/</code>.</p>
{"".join(figs)}
</body></html>
"""
