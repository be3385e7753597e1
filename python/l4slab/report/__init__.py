"""The HTML report of one run: scenario, summary tables, figures, every metric, run facts.

``write_report(DIR)`` reads a results bundle and writes ``DIR/report.html`` (one
self-contained file: CSS inline, figures embedded as base64 PNG) and every figure
as PNG and SVG in ``DIR/figures/``. Tables use the same cells as the CLI
(:mod:`l4slab.tables`). Nothing is printed and no window is opened.

The package, one concern a module: :mod:`.figures` (which figures a run has, drawn
as PNG and SVG), :mod:`.sections` (the page's sections), :mod:`.scenario` (the
Scenario section: topology, queue disciplines, flows), :mod:`.page` (HTML building
blocks the comparison, sweep and study reports share), :mod:`._format` (values).
"""

from __future__ import annotations

import os
from pathlib import Path

from l4slab.report.figures import (
    DPI,
    FIGURES_DIR,
    WIFI_SECTION,
    FigureSpec,
    RenderedFigure,
    figure_files,
    render_figure,
    report_figures,
)
from l4slab.report.page import figures_html, html_page, html_table, write_text_atomic
from l4slab.report.scenario import topology_text, wifi_text
from l4slab.report.sections import SECTIONS, report_html
from l4slab.results import Results, load, write_files
from l4slab.tables import flow_order

__all__ = [
    "DPI",
    "FIGURES_DIR",
    "REPORT_FILE",
    "SECTIONS",
    "WIFI_SECTION",
    "FigureSpec",
    "RenderedFigure",
    "figure_files",
    "figures_html",
    "html_page",
    "html_table",
    "render_figure",
    "report_figures",
    "report_html",
    "topology_text",
    "wifi_text",
    "write_report",
    "write_text_atomic",
]

REPORT_FILE = "report.html"


def write_report(
    results_dir: str | os.PathLike[str] | Results,
    out: str | os.PathLike[str] | None = None,
    *,
    flow: str | None = None,
    tsg_window: tuple[float, float] | None = None,
) -> Path:
    """Write ``report.html`` and ``figures/`` for a results bundle; return the HTML's path.

    ``out`` is the directory to write into (default: the results directory itself).
    ``flow`` picks the flow of the time-sequence graph (default: the first flow);
    that graph needs the packet trace, the rest does not. ``tsg_window=(t0, t1)``
    (seconds) is the time range of the zoomed time-sequence graph (default: around
    the flow's first loss, retransmission or CE mark). The packet trace is read as
    a stream, so memory stays bounded however long it is. The report's files
    replace those of an earlier report (per the directory's manifest,
    ``.l4slab-manifest.json``): figures it no longer draws are removed, and
    nothing else in the directory or in ``figures/`` is touched. A file the
    report would overwrite that l4slab did not write raises ``FileExistsError``
    before anything is written.
    """
    results = results_dir if isinstance(results_dir, Results) else load(results_dir)
    if out is None:
        if results.path is None:
            raise ValueError("these results were never saved; give out= a directory")
        target = results.path
    else:
        target = Path(out)
    if flow is not None and flow not in results.flows():
        there = ", ".join(repr(name) for name in flow_order(results.summary)) or "none"
        raise KeyError(f"no flow {flow!r}; there are: {there}")
    specs = report_figures(results, flow=flow, tsg_window=tsg_window)
    rendered = [render_figure(spec) for spec in specs]
    files = figure_files(rendered)
    files[REPORT_FILE] = report_html(results, rendered).encode("utf-8")
    write_files(target, "report", files)
    return target / REPORT_FILE
