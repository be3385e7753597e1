"""The home-network apps' QoE from a real run: the tables hold the bundle's numbers, the
printed summary and the report show them, and the figures are drawn."""

from __future__ import annotations

import html
import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

import l4slab
from headless import chromium, chromium_screenshot
from l4slab import plots
from l4slab.qoe import downloads_data, qoe_tables, video_data, web_browse_data
from l4slab.report import FIGURES_DIR, report_figures, write_report
from l4slab.tables import TableData, summary_view

# A player of 2 s segments, a person reading each page for 1 s on average, and a 4 MB
# download over two connections from 4 s: all three apps in 20 s.
SCENARIO = """
format = 1
duration = "20s"
[bottleneck]
rate = "10Mbit"
delay = "10ms"
buffer = "100ms"
[[flows]]
name = "tv"
cc = "cubic"
start = "500ms"
app = { kind = "video_stream", segment = "2s", buffer_target = "10s", startup = "2s" }
[[flows]]
name = "browse"
cc = "cubic"
app = { kind = "web_browse", reading_time = "1s" }
[[flows]]
name = "update"
cc = "cubic"
start = "4s"
app = { kind = "download", size = "4MB", connections = 2 }
"""


@pytest.fixture(scope="module")
def run(native, tmp_path_factory) -> l4slab.Results:
    return l4slab.run(SCENARIO, out=tmp_path_factory.mktemp("qoe") / "run")


def cells(table: TableData | None, row: int = 0) -> dict[str, str]:
    """A table's row as ``{header on one line: cell}``."""
    assert table is not None
    return {
        c.header.replace("\n", " "): v
        for c, v in zip(table.columns, table.rows[row].cells, strict=True)
    }


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(max(math.ceil(q * len(ordered)), 1), len(ordered)) - 1]


def test_the_video_table_holds_the_players_numbers(run):
    m: Mapping[str, Any] = run.flow("tv")["app_metrics"]
    row = cells(video_data(run.summary))
    segments = m["segments"]
    assert m["segments_fetched"] == len(segments) > 5
    # The player's summary agrees with its per-segment list.
    assert m["mean_bitrate_bps"] == round(np.mean([s["bitrate_bps"] for s in segments]))
    assert m["mean_rung"] == pytest.approx(np.mean([s["rung"] for s in segments]), abs=1e-6)
    fetch = m["segment_fetch_ms"]
    assert fetch["p50"] <= fetch["p95"] <= fetch["p99"]

    assert row == {
        "player": "tv",
        "ABR": "throughput",
        "startup s": f"{m['startup_delay_s']:.2f}",
        "rebuffer events": str(m["rebuffer_events"]),
        "rebuffer s": f"{m['rebuffer_s']:.1f}",
        "rebuffer %": f"{m['rebuffer_ratio'] * 100:.1f}",
        "mean bitrate Mbit/s": f"{m['mean_bitrate_bps'] / 1e6:.2f}",
        "mean rung / top": f"{m['mean_rung']:.1f} / 8",  # Apple's ladder: 9 rungs
        "switches": str(m["bitrate_switches"]),
        "segments": str(len(segments)),
        "fetch s p50": f"{fetch['p50'] / 1e3:.2f}",
        "fetch s p95": f"{fetch['p95'] / 1e3:.2f}",
    }
    # Started at 0.5 s, within a second on an empty 10 Mbit/s link.
    assert 0 < m["startup_delay_s"] < 1.0


def test_the_browsing_table_holds_the_page_loads(run):
    m: Mapping[str, Any] = run.flow("browse")["app_metrics"]
    pages = m["pages"]
    loads = [p["load_s"] * 1e3 for p in pages if p["load_s"] is not None]
    firsts = [p["ttfb_s"] * 1e3 for p in pages if p["ttfb_s"] is not None]
    assert len(loads) == m["pages_loaded"] >= 3
    # The summary's percentiles are the nearest-rank ones of the per-page list.
    for key, values in (("page_load_ms", loads), ("first_byte_ms", firsts)):
        for q, name in ((0.5, "p50"), (0.95, "p95")):
            assert m[key][name] == pytest.approx(nearest_rank(values, q), abs=1e-3), key
    assert m["first_byte_ms"]["p50"] < m["page_load_ms"]["p50"]

    assert cells(web_browse_data(run.summary)) == {
        "browser": "browse",
        "pages started": str(m["pages_started"]),
        "pages loaded": str(m["pages_loaded"]),
        "first byte ms p50": f"{m['first_byte_ms']['p50']:,.0f}",
        "first byte ms p95": f"{m['first_byte_ms']['p95']:,.0f}",
        "page load ms p50": f"{m['page_load_ms']['p50']:,.0f}",
        "page load ms p95": f"{m['page_load_ms']['p95']:,.0f}",
        "page load ms max": f"{m['page_load_ms']['max']:,.0f}",
    }


def test_the_downloads_table_holds_each_downloads_completion(run):
    d = run.summary["downloads"]["update"]
    parts = [run.flow(name)["completion_s"] for name in ("update.0", "update.1")]
    assert d["complete"] and d["completion_s"] == max(parts)
    assert cells(downloads_data(run.summary)) == {
        "download": "update",
        "dir": "down",
        "conns": "2",
        "size": "4.00 MB",
        "start s": "4.0",
        "delivered": "4.00 MB",
        "parts done": "2",
        "completion s": f"{d['completion_s']:.2f}",
        "goodput Mbit/s": f"{d['goodput_bps'] / 1e6:.2f}",
    }


def test_only_the_apps_present_get_a_table(make_native_result):
    import json

    summary = json.loads(make_native_result()["summary_json"])
    assert qoe_tables(summary) == []
    for name in ("tv", "browse"):
        without = {**summary, "flows": {name: {"app": "bulk", "app_metrics": None}}}
        assert qoe_tables(without) == []


def test_the_printed_summary_shows_the_tables(run):
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(summary_view(run))
    text = console.export_text()
    for title in ("video players", "web browsing (page loads)", "downloads"):
        assert title in text
    for table in qoe_tables(run.summary):
        for row in table.rows:
            assert " ".join(row.cells[:2]) in " ".join(text.split()), row.cells


def test_the_player_figure_draws_its_series_and_fetches(run):
    ax = plots.video_player(run, "tv")
    t, buffer = run.series("flow/tv", "video_buffer_s")
    line = ax.get_lines()[0]
    assert np.array_equal(line.get_xdata(), t) and np.array_equal(line.get_ydata(), buffer)
    # One bar per fetched segment, from its request (in run time: the flow starts at 0.5 s).
    fetches = plots.segment_fetches(run, "tv")
    first = run.flow("tv")["app_metrics"]["segments"][0]
    assert fetches[0, 0] == pytest.approx(0.5 + first["requested_s"])
    bars = [c for c in ax.collections if c.get_label() == "segment fetches"]
    assert len(bars) == 1 and len(bars[0].get_paths()) == len(fetches)
    # The bitrate on the right axis, in Mbit/s.
    (rate,) = [a for a in ax.figure.axes if a is not ax]
    _, bitrate = run.series("flow/tv", "video_bitrate_bps")
    assert np.array_equal(rate.get_lines()[0].get_ydata(), bitrate / 1e6)


@pytest.fixture(scope="module")
def report_page(run, tmp_path_factory) -> Path:
    return write_report(run, tmp_path_factory.mktemp("qoe-report"))


def test_the_report_shows_the_tables_and_figures(run, report_page):
    slugs = [spec.slug for spec in report_figures(run)]
    assert "video-tv" in slugs and "page-load-cdf" in slugs
    page = report_page.read_text(encoding="utf-8")
    for table in qoe_tables(run.summary):
        assert f"<caption>{html.escape(table.title)}</caption>" in page
        for row in table.rows:
            for cell in row.cells:
                assert f">{html.escape(cell)}</td>" in page, cell
    for slug in ("video-tv", "page-load-cdf"):
        png = report_page.parent / FIGURES_DIR / f"{slug}.png"
        assert png.stat().st_size > 10_000
        assert f'id="fig-{slug}"' in page


@pytest.mark.skipif(
    chromium() is None,
    reason="Chromium is not installed (apt-get install chromium); docs/report.md describes "
    "the same check by hand",
)
def test_the_report_renders_in_headless_chromium(report_page, tmp_path: Path):
    from PIL import Image

    shot = tmp_path / "report.png"
    done = chromium_screenshot(report_page, shot, (1280, 3200))
    assert shot.is_file(), done.stderr[-2_000:]
    with Image.open(shot) as image:
        assert image.size == (1280, 3200)
        pixels = np.asarray(image.convert("RGB"), dtype=np.int16)
    # Text, tables and the embedded figures drew: many distinct colours.
    assert len(np.unique(pixels.reshape(-1, 3)[::7], axis=0)) > 200
