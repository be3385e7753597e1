"""The HTML report of a sweep, and its figures: ``DIR/report.html``, ``DIR/figures/``.

The figures are chosen from the grid: each headline metric (per flow goodput and RTT
p99, the bottleneck's queue delay p99 and utilization) against the first numeric grid
key, one line per combination of the word-valued keys (AQM, congestion control, ...),
one panel per value of the other numeric keys; and, with two numeric keys, heatmaps
over them, one panel per combination of the rest. The page also lists the grid, every
grid point's metrics (mean over seeds) and the cells that failed.
"""

from __future__ import annotations

import html
import io
import itertools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from l4slab.plots import heatmap, metric_vs_param
from l4slab.report import (
    DPI,
    REPORT_FILE,
    FigureSpec,
    RenderedFigure,
    figure_files,
    figures_html,
    html_page,
)
from l4slab.results import write_files
from l4slab.sweep.data import Param, SweepData, metric_info

__all__ = ["PanelFigure", "default_figures", "render", "sweep_html", "write_sweep_report"]

#: At most this many panels in one figure (the rest of a large grid is left out, said so).
MAX_PANELS = 8
#: Flows whose metrics the report shows (the first ones of the dataset).
MAX_FLOWS = 4


@dataclass(frozen=True)
class PanelFigure:
    """A figure of one or more panels: a file stem, a heading, a caption, how to draw."""

    slug: str
    title: str
    caption: str
    draw: Callable[[Figure], object]
    panels: int = 1


def render(spec: PanelFigure) -> RenderedFigure:
    """Draw a figure and render it as PNG bytes and SVG text."""
    cols = min(spec.panels, 4)
    rows = math.ceil(spec.panels / cols)
    figure = Figure(figsize=(4.6 * cols + 1.6, 3.6 * rows), layout="constrained")
    spec.draw(figure)
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=DPI, metadata={"Software": None})
    figure.set_layout_engine("none")
    svg = io.StringIO()
    figure.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    shown = FigureSpec(spec.slug, spec.title, spec.caption, lambda ax: None, wide=spec.panels > 1)
    return RenderedFigure(shown, png.getvalue(), svg.getvalue())


def headline_metrics(data: SweepData) -> list[str]:
    """The metrics the report plots, those of them the sweep has."""
    flows = list(dict.fromkeys(m.split("/")[1] for m in data.metrics if m.startswith("flow/")))
    wanted = [
        *(f"flow/{name}/{metric}" for name in flows[:MAX_FLOWS] for metric in ("goodput_bps",)),
        *(f"flow/{name}/{metric}" for name in flows[:MAX_FLOWS] for metric in ("rtt_ms_p99",)),
        "queue/bottleneck.down/sojourn_ms_p99",
        "queue/bottleneck.down/utilization",
    ]
    return [m for m in wanted if m in data.metrics]


def _combos(params: Sequence[Param]) -> list[dict[str, str]]:
    return [
        dict(zip((p.key for p in params), labels, strict=True))
        for labels in itertools.product(*(p.labels for p in params))
    ]


def _slug(text: str) -> str:
    out = "".join(c if c.isalnum() else "-" for c in text.lower())
    return "-".join(part for part in out.split("-") if part)


def default_figures(data: SweepData) -> list[PanelFigure]:
    """The report's figures for this sweep's grid (see the module's description)."""
    varying = data.varying()
    numeric = [p for p in varying if p.numeric]
    words = [p for p in varying if not p.numeric]
    figures: list[PanelFigure] = []
    if not varying:
        return figures
    x = numeric[0] if numeric else words[0]
    panel_params = numeric[1:] if numeric else []
    panels = _combos(panel_params)[:MAX_PANELS]
    lines = [p for p in varying if p is not x and p not in panel_params]
    seeds = len(data.info.get("seeds", [])) or 1
    for metric in headline_metrics(data):
        info = metric_info(metric)

        def draw(
            figure: Figure, metric: str = metric, panels: list[dict[str, str]] = panels
        ) -> None:
            axes = figure.subplots(
                math.ceil(len(panels) / min(len(panels), 4)), min(len(panels), 4), squeeze=False
            ).ravel()
            for ax, where in zip(axes, panels, strict=False):
                last = ax is axes[len(panels) - 1]
                metric_vs_param(
                    ax,
                    data,
                    metric,
                    x.key,
                    by=[p.key for p in lines],
                    where=where,
                    legend="outside" if last else None,
                )
            for ax in axes[len(panels) :]:
                ax.set_visible(False)

        by_text = " · ".join(p.key for p in lines)
        caption = (
            f"{info.name} against {x.key}"
            + (f", one line per {by_text}" if by_text else "")
            + (f", one panel per {', '.join(p.key for p in panel_params)}" if panel_params else "")
            + (
                f". Mean over {seeds} seeds; the band spans their minimum to maximum."
                if seeds > 1
                else "."
            )
        )
        figures.append(
            PanelFigure(
                f"{_slug(metric)}-vs-{_slug(x.key)}",
                f"{info.name} vs {x.key}",
                caption,
                draw,
                panels=len(panels),
            )
        )
    if len(numeric) >= 2:
        hx, hy = numeric[0], numeric[1]
        rest = [p for p in varying if p not in (hx, hy)]
        cells = _combos(rest)[:MAX_PANELS]
        for metric in headline_metrics(data):
            info = metric_info(metric)

            def draw_map(figure: Figure, metric: str = metric, cells: Any = cells) -> None:
                axes = figure.subplots(
                    math.ceil(len(cells) / min(len(cells), 4)), min(len(cells), 4), squeeze=False
                ).ravel()
                values = data.values(metric, data.rows()) * metric_info(metric).scale
                values = values[~np.isnan(values)]
                low, high = (float(values.min()), float(values.max())) if values.size else (0, 1)
                for ax, where in zip(axes, cells, strict=False):
                    heatmap(ax, data, metric, hx.key, hy.key, where=where, vmin=low, vmax=high)
                for ax in axes[len(cells) :]:
                    ax.set_visible(False)

            figures.append(
                PanelFigure(
                    f"{_slug(metric)}-map-{_slug(hx.key)}-{_slug(hy.key)}",
                    f"{info.name} over {hx.key} x {hy.key}",
                    f"{info.name}, mean over seeds, for each {hx.key} and {hy.key}"
                    + (f"; one panel per {', '.join(p.key for p in rest)}" if rest else "")
                    + ". One colour scale for every panel.",
                    draw_map,
                    panels=len(cells),
                )
            )
    return figures


# --------------------------------------------------------------------------- page


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _number(value: float | None, scale: float = 1.0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    shown = value * scale
    return f"{shown:.4g}"


def _grid_html(data: SweepData) -> str:
    rows = []
    for param in data.params:
        columns = param.column + (
            f", {param.number_column}" if param.number_column not in (None, param.column) else ""
        )
        rows.append(
            f'<tr><td class="text">{_e(param.key)}</td>'
            f'<td class="text">{_e(", ".join(param.labels))}</td>'
            f'<td class="text">{_e(columns)}</td></tr>'
        )
    seeds = ", ".join(str(s) for s in data.info.get("seeds", []))
    rows.append(
        f'<tr><td class="text">seeds</td><td class="text">{_e(seeds)}</td>'
        '<td class="text">seed</td></tr>'
    )
    return (
        '<div class="scroll"><table><thead><tr><th class="text">grid key</th>'
        '<th class="text">values</th><th class="text">cells.parquet columns</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _points_html(data: SweepData) -> str:
    metrics = headline_metrics(data)
    infos = [metric_info(m) for m in metrics]
    head = "".join(f'<th class="text">{_e(p.key)}</th>' for p in data.params)
    head += "".join(f'<th class="num">{_e(i.label)}</th>' for i in infos)
    head += '<th class="num">cells ok</th>'
    points = data.column("point")
    status = data.column("status")
    by_point: dict[int, list[int]] = {}
    for row, point in enumerate(points):
        by_point.setdefault(point, []).append(row)
    body = []
    for rows in by_point.values():
        first = rows[0]
        cells = "".join(f'<td class="text">{_e(data.label_of(p, first))}</td>' for p in data.params)
        ok_rows = [r for r in rows if status[r] == "ok"]
        for metric, info in zip(metrics, infos, strict=True):
            values = data.values(metric, ok_rows)
            values = values[~np.isnan(values)]
            mean = float(np.mean(values)) if values.size else None
            cells += f'<td class="num">{_number(mean, info.scale)}</td>'
        cells += f'<td class="num">{len(ok_rows)} of {len(rows)}</td>'
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
        '<p class="note">Each metric is the mean over the grid point\'s seeds; windowed '
        "metrics describe the steady state after the scenario's warmup (docs/results.md).</p>"
    )


def _failed_html(data: SweepData) -> str:
    failed = data.info.get("failed") or []
    if not failed:
        return '<p class="note">Every cell ran.</p>'
    items = "".join(
        f"<li><code>{_e(f['cell'][:12])}</code>: {_e(f['error'])} "
        f'(<a href="{_e(f["record"])}">{_e(f["record"])}</a>)</li>'
        for f in failed
    )
    return f"<ul>{items}</ul><p class=note>Run the sweep again to retry them.</p>"


def sweep_html(data: SweepData, figures: Sequence[RenderedFigure]) -> str:
    """The sweep's report page."""
    info = data.info
    name = str(info.get("scenario", "sweep"))
    ok = info.get("ok", 0)
    cells = info.get("cells", 0)
    lead = (
        f"{cells} cells: {info.get('points', 0)} grid points x {len(info.get('seeds', []))} "
        f"seeds; {ok} ran, {cells - ok} failed. Scenario file {info.get('scenario_file', '?')}"
        + (f", with --set {' '.join(info.get('set', []))}" if info.get("set") else "")
        + "."
    )
    parts = [
        f'<h1>{_e(name)} <span class="kind">— l4slab sweep</span></h1>',
        f'<p class="lead">{_e(lead)}</p>',
        '<nav><a href="#grid">Grid</a><a href="#figures">Figures</a>'
        '<a href="#points">Grid points</a><a href="#failed">Failed cells</a></nav>',
        f'<section id="grid"><h2>Grid</h2>\n{_grid_html(data)}\n</section>',
        f'<section id="figures"><h2>Figures</h2>\n{figures_html(figures)}\n</section>',
        f'<section id="points"><h2>Grid points</h2>\n{_points_html(data)}\n</section>',
        f'<section id="failed"><h2>Failed cells</h2>\n{_failed_html(data)}\n</section>',
    ]
    return html_page(f"{name} — l4slab sweep", "\n".join(parts), str(info.get("tool_version")))


def write_sweep_report(data: SweepData, out: str | os.PathLike[str] | None = None) -> Path:
    """Write ``report.html`` and ``figures/`` of a sweep (into its directory by default);
    return the page's path. Replaces only the files an earlier report wrote there."""
    target = Path(out) if out is not None else data.path
    if target is None:
        raise ValueError("this sweep was not loaded from a directory; give out=")
    rendered = [render(spec) for spec in default_figures(data)]
    files = figure_files(rendered)
    files[REPORT_FILE] = sweep_html(data, rendered).encode("utf-8")
    write_files(target, "report", files)
    return target / REPORT_FILE


def figure_file(figure: Figure, path: Path) -> bytes:
    """``figure`` as the bytes of ``path``'s format (PNG or SVG)."""
    buffer = io.BytesIO()
    if path.suffix == ".svg":
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    else:
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()
