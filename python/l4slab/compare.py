"""Compare runs side by side: the same flows and queues in several results bundles.

``compare([DIR1, DIR2, ...], OUT)`` writes ``OUT/compare.html`` (self-contained)
and its figures as PNG and SVG in ``OUT/figures/``: a table per flow name and
per queue name with one column per run, overlaid RTT CDFs (one line per run)
and overlaid queue-delay CDFs. Typical use: one scenario under FIFO, CoDel and
DualPI2. Nothing is printed.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

from matplotlib.axes import Axes

from l4slab.plots import (
    cdf_line,
    has_packet_trace,
    queue_delay_samples,
    rtt_samples,
    segment_rtt_distributions,
)
from l4slab.plots._style import new_axes, styles
from l4slab.plots.cdf import percentile_markers
from l4slab.report import (
    FIGURES_DIR,
    FigureSpec,
    RenderedFigure,
    figure_files,
    figures_html,
    html_page,
    html_table,
    render_figure,
)
from l4slab.results import MANIFEST_FILE, Results, load, read_manifest, write_files
from l4slab.tables import (
    MISSING,
    Column,
    Row,
    TableData,
    flow_order,
    format_bytes,
    format_count,
    format_number,
)

__all__ = [
    "COMPARE_FILE",
    "MAX_FLOW_FIGURES",
    "check_compare_dir",
    "compare",
    "compare_html",
    "comparison_tables",
    "queue_delay_cdf_overlay",
    "rtt_cdf_overlay",
    "run_labels",
    "shared_names",
]

COMPARE_FILE = "compare.html"
#: At most this many per-flow RTT CDFs (the tables still list every shared flow).
MAX_FLOW_FIGURES = 12
#: Below this delay p99 (ms) in every run, a queue hardly held packets: no CDF is drawn.
_IDLE_MS = 0.1


def compare(
    dirs: Sequence[str | os.PathLike[str] | Results],
    out: str | os.PathLike[str],
    *,
    labels: Sequence[str] | None = None,
) -> Path:
    """Compare results bundles; write ``out/compare.html`` and ``out/figures/``.

    ``labels`` name the runs (default: the scenario names, or the directory names
    when scenario names repeat). ``out`` may be missing, empty or a previous
    comparison (:func:`check_compare_dir`); anything else raises ``FileExistsError``.
    The comparison's files replace those of the previous one (per ``out``'s
    manifest); other files in ``out/figures/`` are never touched. Returns the
    HTML's path.
    """
    if len(dirs) < 2:
        raise ValueError("give at least two results directories to compare")
    runs = [d if isinstance(d, Results) else load(d) for d in dirs]
    names = list(labels) if labels is not None else run_labels(runs)
    if len(names) != len(runs):
        raise ValueError(f"{len(names)} labels for {len(runs)} runs; give one label per run")
    if len(set(names)) != len(names):
        raise ValueError(f"run labels must differ: {', '.join(names)}")
    target = Path(out)
    check_compare_dir(target)
    rendered = [render_figure(spec) for spec in _figures(runs, names)]
    files = figure_files(rendered)
    files[COMPARE_FILE] = compare_html(runs, names, rendered).encode("utf-8")
    write_files(target, "compare", files)
    return target / COMPARE_FILE


def check_compare_dir(path: str | os.PathLike[str]) -> None:
    """Raise ``FileExistsError`` unless ``path`` is missing, empty or a previous comparison.

    A previous comparison is a directory whose files, apart from those in ``figures/``,
    its manifest lists as l4slab's. Files of others in ``figures/`` may stay (they are
    never touched); a ``compare.html`` no manifest lists (an earlier l4slab version's) is
    refused, since nothing shows l4slab wrote it.
    """
    target = Path(path)
    if not target.exists():
        return
    if not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a directory")
    try:
        manifest = read_manifest(target)
    except ValueError as exc:
        raise FileExistsError(f"refusing to write into {target}: {exc}") from None
    listed = set(manifest.files) if manifest is not None else set()
    entries = sorted(entry.name for entry in target.iterdir())
    strangers = [
        name for name in entries if name not in listed and name not in (FIGURES_DIR, MANIFEST_FILE)
    ]
    if strangers:
        raise FileExistsError(
            f"refusing to write into {target}: it holds {', '.join(strangers[:3])}, which a "
            f"comparison did not write (not in {MANIFEST_FILE}); choose another output "
            "directory (-o) or remove it"
        )


def run_labels(runs: Sequence[Results]) -> list[str]:
    """Scenario names if they differ, else directory names if those do, else ``n: dir``."""
    names = [run.name or "?" for run in runs]
    if len(set(names)) == len(names):
        return names
    dirs = [run.path.name if run.path is not None else f"run {i + 1}" for i, run in enumerate(runs)]
    if len(set(dirs)) == len(dirs):
        return dirs
    return [f"{i + 1}: {d}" for i, d in enumerate(dirs)]


def shared_names(items: Sequence[Sequence[str]]) -> list[str]:
    """Names found in at least two of the lists (every name if no list shares one),
    in order of first appearance."""
    seen: list[str] = []
    for names in items:
        seen.extend(name for name in names if name not in seen)
    shared = [name for name in seen if sum(name in names for names in items) >= 2]
    return shared or seen


# --------------------------------------------------------------------------- tables


def comparison_tables(runs: Sequence[Results], labels: Sequence[str]) -> list[TableData]:
    """The runs table, then one table per flow name and per queue name; a column per run."""
    tables = [_runs_table(runs, labels)]
    for flow in shared_names([flow_order(run.summary) for run in runs]):
        tables.append(_flow_table(runs, labels, flow))
    for queue in shared_names([list(run.queues()) for run in runs]):
        tables.append(_queue_table(runs, labels, queue))
    return tables


def _columns(labels: Sequence[str]) -> tuple[Column, ...]:
    return (Column("", numeric=False, no_wrap=True), *(Column(label) for label in labels))


def _runs_table(runs: Sequence[Results], labels: Sequence[str]) -> TableData:
    def qdisc(run: Results, direction: str) -> str:
        link = (run.scenario.get("bottleneck") or {}).get(direction) or {}
        return str((link.get("qdisc") or {}).get("kind", MISSING))

    rows = [
        Row(("directory", *(str(run.path) if run.path else MISSING for run in runs))),
        Row(("scenario", *(run.name or MISSING for run in runs))),
        Row(("qdisc down", *(qdisc(run, "down") for run in runs))),
        Row(("qdisc up", *(qdisc(run, "up") for run in runs))),
        Row(("flows", *(str(len(run.flows())) for run in runs))),
        Row(
            (
                "duration s",
                *(format_number(run.summary.get("duration_s"), digits=1) for run in runs),
            )
        ),
        Row(("seed", *(str(run.seed) for run in runs))),
    ]
    return TableData("runs", _columns(labels), tuple(rows))


def _flow_table(runs: Sequence[Results], labels: Sequence[str], flow: str) -> TableData:
    metrics: list[tuple[str, Any]] = [
        ("cc", lambda f, q: f.get("cc") or MISSING),
        ("ECN", lambda f, q: f.get("ecn") or MISSING),
        ("goodput Mbit/s", lambda f, q: format_number(f.get("goodput_bps"), scale=1e-6, digits=2)),
        ("delivered", lambda f, q: format_bytes(f.get("bytes_delivered"))),
        ("completion s", lambda f, q: format_number(f.get("completion_s"), digits=3)),
        ("RTT p50 ms", lambda f, q: format_number(_get(f, "rtt_ms", "p50"))),
        ("RTT p99 ms", lambda f, q: format_number(_get(f, "rtt_ms", "p99"))),
        ("retransmits", lambda f, q: format_count(f.get("retransmits"))),
        ("lost pkts", lambda f, q: format_count(f.get("lost_packets"))),
        ("CE marks received", lambda f, q: format_count(f.get("ce_marks_received"))),
        ("queue", lambda f, q: q[0]),
        ("queue delay p50 ms", lambda f, q: format_number(q[1].get("p50"), digits=2)),
        ("queue delay p99 ms", lambda f, q: format_number(q[1].get("p99"), digits=2)),
    ]
    rows = []
    for title, cell in metrics:
        cells = []
        for run in runs:
            metrics_of = run.flows().get(flow)
            if metrics_of is None:
                cells.append("not in this run" if title == "cc" else "")
            else:
                cells.append(str(cell(metrics_of, _flow_queue(run, flow))))
        rows.append(Row((title, *cells)))
    return TableData(f"flow {flow}", _columns(labels), tuple(rows))


def _flow_queue(run: Results, flow: str) -> tuple[str, Mapping[str, Any]]:
    """``("bottleneck.down (fifo)", sojourn percentiles of this flow's packets there)``."""
    metrics = run.flows().get(flow) or {}
    direction = metrics.get("direction")
    if direction is None:
        for spec in run.scenario.get("flows") or []:
            if isinstance(spec, Mapping) and spec.get("name") == flow:
                direction = spec.get("direction")
    name = f"bottleneck.{direction or 'down'}"
    queue = run.queues().get(name)
    if queue is None:
        return MISSING, {}
    by_flow = (queue.get("sojourn_ms_by_flow") or {}).get(flow)
    sojourn = by_flow if isinstance(by_flow, Mapping) else queue.get("sojourn_ms") or {}
    return f"{name} ({queue.get('kind', '?')})", sojourn


def _queue_table(runs: Sequence[Results], labels: Sequence[str], queue: str) -> TableData:
    def cells(get: Any) -> tuple[str, ...]:
        out = []
        for run in runs:
            metrics = run.queues().get(queue)
            out.append("" if metrics is None else str(get(metrics)))
        return tuple(out)

    rows = [
        Row(("kind", *cells(lambda q: q.get("kind") or MISSING))),
        Row(
            (
                "delay p50 ms",
                *cells(lambda q: format_number(_get(q, "sojourn_ms", "p50"), digits=2)),
            )
        ),
        Row(
            (
                "delay p99 ms",
                *cells(lambda q: format_number(_get(q, "sojourn_ms", "p99"), digits=2)),
            )
        ),
    ]
    has_subqueues = any((run.queues().get(queue) or {}).get("subqueues") for run in runs)
    if has_subqueues:
        for sub in ("l", "c"):
            for which in ("p50", "p99"):
                rows.append(
                    Row(
                        (
                            f"{sub.upper()} queue delay {which} ms",
                            *cells(
                                lambda q, s=sub, w=which: (
                                    format_number(
                                        _get(q, "subqueues", s, "sojourn_ms", w), digits=2
                                    )
                                    if q.get("subqueues")
                                    else ""
                                )
                            ),
                        ),
                        sub=True,
                    )
                )
    rows += [
        Row(("drops", *cells(lambda q: format_count(_get(q, "drops", "total"))))),
        Row(("CE marks", *cells(lambda q: format_count(_get(q, "marks", "total"))))),
        Row(
            (
                "utilization %",
                *cells(lambda q: format_number(q.get("utilization"), scale=100.0, digits=1)),
            )
        ),
    ]
    return TableData(f"queue {queue}", _columns(labels), tuple(rows))


def _get(mapping: Mapping[str, Any], *keys: str) -> Any:
    value: Any = mapping
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


# --------------------------------------------------------------------------- figures


def _figures(runs: Sequence[Results], labels: Sequence[str]) -> list[FigureSpec]:
    traced = all(has_packet_trace(run) for run in runs)
    what = (
        "per-segment RTT (send to the first ACK or SACK covering it), from the packet traces"
        if traced
        else "per-interval means of the rtt_ms series (not every run has a packet trace)"
    )
    specs = []
    flows = shared_names([flow_order(run.summary) for run in runs])
    for flow in flows[:MAX_FLOW_FIGURES]:
        specs.append(
            FigureSpec(
                f"rtt-cdf-{_slug(flow)}",
                f"RTT CDF of {flow}",
                f"One line per run; RTT samples {what}.",
                partial(rtt_cdf_overlay, runs, flow, labels=labels),
            )
        )
    for queue in shared_names([list(run.queues()) for run in runs]):
        if not _queued(runs, queue):
            continue
        specs.append(
            FigureSpec(
                f"queue-delay-cdf-{_slug(queue)}",
                f"Queue delay CDF of {queue}",
                "One line per run (DualPI2: L dashed, C solid); CDF of the per-interval mean "
                "sojourn; dots mark the exact per-packet p50, p90, p99 and p99.9.",
                partial(queue_delay_cdf_overlay, runs, queue, labels=labels),
            )
        )
    return specs


def rtt_cdf_overlay(
    runs: Sequence[Results],
    flow: str,
    ax: Axes | None = None,
    labels: Sequence[str] | None = None,
    source: Literal["auto", "trace", "series"] = "auto",
) -> Axes:
    """CDF of one flow's RTT in each run that has it: one line per run, labelled by run.

    ``source="auto"`` uses per-segment samples when every run has a packet trace and
    the per-interval means otherwise, so the lines are always alike.
    """
    ax = new_axes(ax)
    names = list(labels) if labels is not None else run_labels(runs)
    if source == "auto":
        source = "trace" if all(has_packet_trace(run) for run in runs) else "series"
    for run, label, (color, linestyle) in zip(runs, names, styles(), strict=False):
        if flow in run.flows():
            # A trace is read as a stream into a bounded histogram, whatever its length.
            values = (
                segment_rtt_distributions(run, [flow])[flow]
                if source == "trace"
                else rtt_samples(run, flow, source)
            )
            cdf_line(ax, values, label, color=color, linestyle=linestyle)
    ax.set_xlabel("RTT per segment (ms)" if source == "trace" else "RTT, mean per interval (ms)")
    ax.set_ylabel("fraction of samples")
    ax.set_title(f"RTT CDF — {flow}")
    _finish(ax)
    return ax


def queue_delay_cdf_overlay(
    runs: Sequence[Results],
    queue: str,
    ax: Axes | None = None,
    labels: Sequence[str] | None = None,
) -> Axes:
    """CDF of one queue's delay (per-interval means) in each run; DualPI2's L dashed, C solid.

    Dots mark each run's exact per-packet percentiles from its summary.
    """
    ax = new_axes(ax)
    names = list(labels) if labels is not None else run_labels(runs)
    for run, label, (color, _) in zip(runs, names, styles(), strict=False):
        if queue not in run.queues():
            continue
        for sub, values, percentiles in queue_delay_samples(run, queue):
            name = label if sub is None else f"{label} {sub.upper()}"
            cdf_line(ax, values, name, color=color, linestyle="--" if sub == "l" else "-")
            percentile_markers(ax, percentiles, color=color)
    ax.set_xlabel("queue delay, mean per interval (ms)")
    ax.set_ylabel("fraction of intervals")
    ax.set_title(f"Queue delay CDF — {queue}")
    _finish(ax)
    return ax


def _queued(runs: Sequence[Results], queue: str) -> bool:
    for run in runs:
        p99 = _get(run.queues().get(queue) or {}, "sojourn_ms", "p99")
        if isinstance(p99, int | float) and p99 > _IDLE_MS:
            return True
    return False


def _finish(ax: Axes) -> None:
    ax.set_ylim(0.0, 1.02)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize="small")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "x"


# --------------------------------------------------------------------------- page


def compare_html(
    runs: Sequence[Results], labels: Sequence[str], figures: Sequence[RenderedFigure]
) -> str:
    """The comparison page as one HTML string."""
    tables = comparison_tables(runs, labels)
    title = " vs ".join(labels)
    flows = [t for t in tables if t.title.startswith("flow ")]
    queues = [t for t in tables if t.title.startswith("queue ")]
    skipped = [
        q for q in shared_names([list(run.queues()) for run in runs]) if not _queued(runs, q)
    ]
    notes = []
    all_flows = shared_names([flow_order(run.summary) for run in runs])
    if len(all_flows) > MAX_FLOW_FIGURES:
        notes.append(
            f"RTT CDFs are drawn for the first {MAX_FLOW_FIGURES} of {len(all_flows)} flows."
        )
    if skipped:
        notes.append(
            f"No queue-delay CDF for {', '.join(skipped)}: its delay p99 stayed below "
            f"{_IDLE_MS:g} ms in every run."
        )
    note = "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes)
    lonely = [
        f"{flow} ({label})"
        for run, label in zip(runs, labels, strict=True)
        for flow in flow_order(run.summary)
        if flow not in all_flows
    ]
    flow_note = (
        f'<p class="note">In one run only (not compared): {html.escape(", ".join(lonely))}.</p>'
        if lonely
        else ""
    )
    body = "\n".join(
        [
            f"<h1>{html.escape(title)} <span class=kind>— l4slab comparison</span></h1>",
            '<p class="lead">The same flows and queues in each run, side by side: one column '
            "(and one line in each figure) per run.</p>",
            '<nav><a href="#runs">Runs</a><a href="#flows">Flows</a>'
            '<a href="#queues">Queues</a><a href="#figures">Figures</a></nav>',
            '<section id="runs"><h2>Runs</h2>'
            + html_table(tables[0], caption=False)
            + "</section>",
            '<section id="flows"><h2>Flows</h2>'
            + flow_note
            + _side_by_side(flows, "No flows.")
            + '<p class="note">Goodput in Mbit/s; RTT and queue delay in ms; the queue delay '
            "of a flow is that of its own packets at the bottleneck its data crosses.</p>"
            "</section>",
            '<section id="queues"><h2>Queues</h2>'
            + _side_by_side(queues, "No queues.")
            + "</section>",
            '<section id="figures"><h2>Figures</h2>' + note + figures_html(figures) + "</section>",
        ]
    )
    versions = sorted({run.tool_version or "?" for run in runs})
    return html_page(f"{title} — l4slab comparison", body, ", ".join(versions))


def _side_by_side(tables: Sequence[TableData], empty: str) -> str:
    if not tables:
        return f'<p class="note">{html.escape(empty)}</p>'
    return '<div class="tables">' + "".join(html_table(t) for t in tables) + "</div>"
