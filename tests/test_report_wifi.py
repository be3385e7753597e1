"""The Wi-Fi cell in the report and its plots, on a hand-made results bundle.

The bundle is shaped like a run with a ``[wifi]`` table: summary.json's ``wifi``
object (``l4slab_wifi::stats::CellStats::summary``), the resolved
scenario's ``wifi`` (``l4slab_scenario::model::WifiSpec``), flows with a
``wifi_ac`` and the cell's queues. Figures are checked by what they draw.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from l4slab import load, plots
from l4slab.report import (
    FIGURES_DIR,
    SECTIONS,
    WIFI_SECTION,
    report_figures,
    topology_text,
    write_report,
)
from l4slab.results import Results, write_bundle
from l4slab.tables import (
    wifi_access_delay_data,
    wifi_links_data,
    wifi_station_order,
    wifi_stations_data,
)

WIFI_FIGURES = ["wifi-airtime", "wifi-access-delay", "wifi-ampdu"]

EDCA = [
    {"aifsn": 2, "cw_min": 3, "cw_max": 7, "txop": 2_080_000},
    {"aifsn": 2, "cw_min": 7, "cw_max": 15, "txop": 4_096_000},
    {"aifsn": 3, "cw_min": 15, "cw_max": 1023, "txop": 0},
    {"aifsn": 7, "cw_min": 15, "cw_max": 1023, "txop": 0},
]
FIFO = {"kind": "fifo", "limit": {"packets": 1000}, "head_drop": False}
LINK = {"rate": 100_000_000, "delay": 10_000_000, "loss": {"kind": "none"}, "qdisc": FIFO}


def station(airtime_share: float, **counts: float) -> dict[str, Any]:
    stats: dict[str, Any] = {
        "airtime_s": 0.0,
        "airtime_fraction": 0.0,
        "airtime_share": airtime_share,
        "mpdu_attempts": 0,
        "mpdu_failures": 0,
        "mpdu_retry_fraction": 0.0,
        "mpdu_drops": 0,
        "collisions": 0,
        "scans": 0,
        "scan_time_s": 0.0,
        "longest_scan_ms": 0.0,
    }
    stats.update(counts)
    return stats


WIFI_SUMMARY: dict[str, Any] = {
    "stations": {
        "gamer": station(
            0.61,
            airtime_s=3.05,
            airtime_fraction=0.53,
            mpdu_attempts=9000,
            mpdu_failures=800,
            mpdu_retry_fraction=0.088889,
            mpdu_drops=3,
            collisions=40,
            scans=2,
            scan_time_s=0.2,
            longest_scan_ms=100.0,
        ),
        "laptop": station(
            0.39,
            airtime_s=1.95,
            airtime_fraction=0.34,
            mpdu_attempts=4000,
            mpdu_failures=100,
            mpdu_retry_fraction=0.025,
            collisions=12,
        ),
    },
    "links": [
        {
            "phy": {"standard": "ax", "band": "5GHz", "width_mhz": 80, "nss": 2},
            "busy_fraction": 0.93,
            "txops": 5000,
            "ppdus": 5100,
            "collisions": 120,
            "collision_fraction": 0.024,
            "internal_collisions": 3,
        },
        {
            "phy": {"standard": "be", "band": "6GHz", "width_mhz": 320, "nss": 1},
            "busy_fraction": 0.415,
            "txops": 1500,
            "ppdus": 1500,
            "collisions": 0,
            "collision_fraction": 0.0,
            "internal_collisions": 0,
        },
    ],
    "access_delay_ms": {
        "vo": {
            "min": 0.05,
            "mean": 0.2,
            "p50": 0.15,
            "p90": 0.4,
            "p99": 1.2,
            "p999": 3.5,
            "max": 6.0,
            "samples": 1200,
        },
        "be": {
            "min": 0.05,
            "mean": 1.1,
            "p50": 0.6,
            "p90": 2.5,
            "p99": 9.0,
            "p999": 25.0,
            "max": 40.0,
            "samples": 8000,
        },
    },
    "ampdu": {
        "ppdus": 400,
        "mean_mpdus": 27.375,
        "mpdus_histogram": {"1": 100, "2": 50, "43": 250},
    },
}

WIFI_SCENARIO: dict[str, Any] = {
    "links": [
        {"standard": "ax", "band": "5GHz", "width_mhz": 80, "nss": 2},
        {"standard": "be", "band": "6GHz", "width_mhz": 320, "nss": 1},
    ],
    "retry_limit": 7,
    "ap_edca": EDCA,
    "ap_qdisc": {"kind": "fq_codel", "limit": 10240, "target": 5_000_000},
    "station_qdisc": FIFO,
    "stations": [
        {
            "host": 0,
            "edca": EDCA,
            "links": [
                {"link": 0, "snr_db": 40.0, "mcs": 11},
                {"link": 1, "snr_db": 25.5, "mcs": 7},
            ],
            "scan": {"every": 10_000_000_000, "duration": 100_000_000, "first": 5_000_000_000},
        },
        {"host": 1, "edca": EDCA, "links": [{"link": 0, "snr_db": 12.0, "mcs": 3}]},
    ],
}


def wifi_native(make_native_result: Any, *, wifi: bool = True) -> dict[str, Any]:
    """The conftest's native result with a scenario of two client hosts and a server, and
    (``wifi``) a Wi-Fi cell: its summary, its resolved scenario, its queues."""
    native: dict[str, Any] = make_native_result(name="wifi-unit" if wifi else "plain")
    summary = json.loads(native["summary_json"])
    scenario = summary["scenario"]
    scenario.update(
        sample_interval=100_000_000,
        bottleneck={"down": LINK, "up": LINK},
        hosts=[
            {"name": "gamer", "side": "client", "access_delay": 0},
            {"name": "laptop", "side": "client", "access_delay": 0},
            {"name": "server", "side": "server", "access_delay": 0},
        ],
        flows=[
            {
                "name": "download",
                "client": 0,
                "server": 2,
                "direction": "down",
                "cc": "reno",
                "app": {"kind": "bulk"},
                "start": 0,
                "transport": {"mss": 1448},
                **({"wifi_ac": "vi"} if wifi else {}),
            }
        ],
    )
    if wifi:
        scenario["wifi"] = WIFI_SCENARIO
        summary["wifi"] = WIFI_SUMMARY
        for ac in ("vi", "be"):
            for direction in ("down", "up"):
                summary["queues"][f"wifi.gamer.{direction}.{ac}"] = {
                    **summary["queues"]["bottleneck.down"],
                    "utilization": 0.0,
                }
    native["summary_json"] = json.dumps(summary, sort_keys=True, indent=2)
    return native


@pytest.fixture
def wifi_bundle(tmp_path: Path, make_native_result: Any) -> Path:
    """A results directory of a run with a Wi-Fi cell, as ``l4slab run`` writes it."""
    return write_bundle(tmp_path / "wifi", wifi_native(make_native_result), command=["test"])


@pytest.fixture
def wifi_results(wifi_bundle: Path) -> Results:
    return load(wifi_bundle)


def drawn(results: Results, slug: str) -> Axes:
    """Draw the report figure ``slug`` into a fresh Axes and return it."""
    spec = {spec.slug: spec for spec in report_figures(results)}[slug]
    ax = Figure().add_subplot()
    spec.draw(ax)
    return ax


def section(page: str, title: str) -> str:
    found = re.search(
        rf'<section id="[^"]*"><h2>{re.escape(html.escape(title))}</h2>(.*?)</section>',
        page,
        re.S,
    )
    assert found is not None, f"no section {title!r}"
    return found.group(1)


# --------------------------------------------------------------------------- tables


def test_the_wifi_tables_show_the_cells_counters(wifi_results):
    stations = wifi_stations_data(wifi_results.summary)
    links = wifi_links_data(wifi_results.summary)
    delays = wifi_access_delay_data(wifi_results.summary)

    assert stations is not None and links is not None and delays is not None
    assert [row.cells for row in stations.rows] == [
        ("gamer", "61.0", "53.0", "9,000", "8.9", "3", "40", "2", "100.0"),
        ("laptop", "39.0", "34.0", "4,000", "2.5", "0", "12", "0", "—"),
    ]
    assert [row.cells for row in links.rows] == [
        ("0", "802.11ax, 5GHz, 80 MHz, 2 streams", "93.0", "5,000", "5,100", "120", "2.4", "3"),
        ("1", "802.11be, 6GHz, 320 MHz, 1 stream", "41.5", "1,500", "1,500", "0", "0.0", "0"),
    ]
    # Only the ACs that had samples, highest priority first.
    assert [row.cells for row in delays.rows] == [
        ("VO (voice)", "1,200", "0.200", "0.150", "1.200", "3.500", "6.000"),
        ("BE (best effort)", "8,000", "1.100", "0.600", "9.000", "25.000", "40.000"),
    ]


def test_show_prints_the_wifi_tables(wifi_results):
    from rich.console import Console

    from l4slab.tables import summary_view

    console = Console(record=True, width=200)
    console.print(summary_view(wifi_results))
    text = console.export_text()
    for expected in ("gamer", "laptop", "802.11ax, 5GHz, 80 MHz, 2 streams", "VO (voice)", "8.9"):
        assert expected in text


def test_stations_are_in_scenario_order_not_summary_order():
    summary = {
        "scenario": {
            "hosts": [{"name": "zed"}, {"name": "amy"}, {"name": "srv"}],
            "wifi": {"stations": [{"host": 0}, {"host": 1}]},
        },
        "wifi": {"stations": {"amy": {}, "zed": {}, "ghost": {}}},
    }

    assert wifi_station_order(summary) == ["zed", "amy", "ghost"]


# --------------------------------------------------------------------------- the page


def test_report_of_a_run_with_a_wifi_cell(wifi_bundle):
    page = write_report(wifi_bundle).read_text(encoding="utf-8")
    res = load(wifi_bundle)

    # Its own section, after the summary, in the navigation too.
    headings = re.findall(r"<h2>(.*?)</h2>", page)
    assert headings == [
        "Scenario",
        "Summary",
        html.escape(WIFI_SECTION),
        "Figures",
        "All metrics",
        "Run",
    ]
    assert '<a href="#wi-fi-cell">Wi-Fi cell</a>' in page
    cell = section(page, WIFI_SECTION)
    # The tables, cell for cell.
    for table in (
        wifi_stations_data(res.summary),
        wifi_links_data(res.summary),
        wifi_access_delay_data(res.summary),
    ):
        assert table is not None
        assert f"<caption>{html.escape(table.title)}</caption>" in cell
        for row in table.rows:
            for value in row.cells:
                assert f">{html.escape(value)}</td>" in cell, value
    assert "400 PPDUs carried 27.4 MPDUs on average" in cell
    # Its three figures are in its section, not among the others; each also on disk.
    figures = section(page, "Figures")
    for slug in WIFI_FIGURES:
        assert f'<figure id="fig-{slug}">' in cell
        assert f'id="fig-{slug}"' not in figures
        assert (wifi_bundle / FIGURES_DIR / f"{slug}.png").is_file()
        assert (wifi_bundle / FIGURES_DIR / f"{slug}.svg").is_file()
    assert 'id="fig-goodput"' in figures
    # A card per link at a glance.
    assert re.search(r"Wi-Fi link 0 <span[^>]*>802\.11ax, 5GHz, 80 MHz, 2 streams", page)
    assert re.search(r'93\.0 <span class="small">% busy', page)
    # Every metric, once, in its own fold; not flattened into the run totals.
    assert "<summary>Wi-Fi cell: every metric</summary>" in page
    assert ">mpdu_retry_fraction<" in page and ">internal_collisions<" in page
    assert ">wifi.stations.gamer.airtime_s<" not in page


def test_the_scenario_section_describes_the_cell(wifi_bundle):
    page = write_report(wifi_bundle).read_text(encoding="utf-8")
    scenario = html.unescape(section(page, "Scenario"))

    assert topology_text(load(wifi_bundle).scenario) == (
        "gamer, laptop ~ Wi-Fi ~ AP — 100 Mbit/s, 10 ms, fifo — server\n"
        "Wi-Fi cell: an AP at the bottleneck's client end; stations gamer, laptop\n"
        "  link 0: 802.11ax, 5GHz, 80 MHz, 2 streams\n"
        "  link 1: 802.11be, 6GHz, 320 MHz, 1 stream\n"
        "  queues: AP fq_codel (one per station and AC), stations fifo (one per AC); "
        "retry limit 7\n"
        "  gamer: link 0 SNR 40 dB, MCS 11; link 1 SNR 25.5 dB, MCS 7; "
        "scans for 100 ms every 10 s (first at 5 s)\n"
        "  laptop: link 0 SNR 12 dB, MCS 3"
    )
    assert "link 1: 802.11be, 6GHz, 320 MHz, 1 stream" in scenario
    # The cell's queue disciplines beside the bottleneck's.
    assert "Queue discipline: fifo (both directions)" in scenario
    assert "Queue discipline: fq_codel (Wi-Fi AP, a queue per station and AC)" in scenario
    assert "Queue discipline: fifo (Wi-Fi stations, a queue per AC)" in scenario
    # The flow table says which access category each flow uses.
    assert re.search(r"<th [^>]*>Wi-Fi<br>AC</th>", scenario)
    assert re.search(r'<td class="text">vi</td></tr>', scenario)


def test_a_run_without_wifi_has_no_wifi_section(tmp_path, make_native_result):
    native = wifi_native(make_native_result, wifi=False)
    bundle = write_bundle(tmp_path / "plain", native, command=["test"])
    res = load(bundle)

    page = write_report(bundle).read_text(encoding="utf-8")

    # (The results directory, named after this test, is the only "wifi" on the page.)
    assert "Wi-Fi" not in page and "wifi" not in page.replace(html.escape(str(bundle)), "")
    assert re.findall(r"<h2>(.*?)</h2>", page) == list(SECTIONS)
    assert not [s for s in report_figures(res) if s.slug.startswith("wifi")]
    assert not list((bundle / FIGURES_DIR).glob("wifi-*"))
    assert wifi_stations_data(res.summary) is None and wifi_links_data(res.summary) is None
    assert topology_text(res.scenario) == ("gamer, laptop — 100 Mbit/s, 10 ms, fifo — server")
    assert not plots.has_wifi(res)


# --------------------------------------------------------------------------- figures


def test_airtime_figure_draws_each_stations_share(wifi_results):
    ax = drawn(wifi_results, "wifi-airtime")

    bars = ax.patches
    assert [round(bar.get_width(), 6) for bar in bars] == [61.0, 39.0]
    labels = [tick.get_text() for tick in ax.get_yticklabels()]
    assert labels == ["gamer", "laptop"]
    # The first station is on top (the y axis runs downwards).
    assert ax.get_ylim()[0] > ax.get_ylim()[1]
    assert [bar.get_y() + bar.get_height() / 2 for bar in bars] == [0.0, 1.0]
    texts = [text.get_text() for text in ax.texts]
    assert texts == [
        "61 % · 53 % of the time · retries 8.9 % · 3 drops",
        "39 % · 34 % of the time · retries 2.5 %",
    ]
    assert ax.get_xlim() == (0.0, 100.0)
    assert "%" in ax.get_xlabel()


def test_access_delay_figure_draws_a_percentile_curve_per_ac(wifi_results):
    ax = drawn(wifi_results, "wifi-access-delay")

    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["VO (voice), mean 0.2 ms", "BE (best effort), mean 1.1 ms"]
    vo, be = lines.values()
    assert list(vo.get_xdata()) == [0, 1, 2, 3, 4]
    assert list(vo.get_ydata()) == [0.15, 0.4, 1.2, 3.5, 6.0]
    assert list(be.get_ydata()) == [0.6, 2.5, 9.0, 25.0, 40.0]
    # Each AC in its own colour, the same wherever ACs are drawn.
    assert vo.get_color() == plots.AC_COLORS["vo"] and be.get_color() == plots.AC_COLORS["be"]
    assert len(set(plots.AC_COLORS.values())) == 4
    ticks = [tick.get_text() for tick in ax.get_xticklabels()]
    assert ticks == ["p50", "p90", "p99", "p99.9", "max"]
    # 0.15 ms to 40 ms: a log axis.
    assert ax.get_yscale() == "log"
    assert "ms" in ax.get_ylabel()


def test_ampdu_figure_weights_sizes_by_ppdus(wifi_results):
    ax = drawn(wifi_results, "wifi-ampdu")

    centres = [bar.get_x() + bar.get_width() / 2 for bar in ax.patches]
    heights = [bar.get_height() for bar in ax.patches]
    assert centres == pytest.approx([1, 2, 43])
    assert heights == pytest.approx([25.0, 12.5, 62.5]), "% of the 400 PPDUs"
    (mean,) = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert list(mean.get_xdata()) == [27.375, 27.375]
    assert mean.get_label() == "mean 27.4 MPDUs"
    assert "400 PPDUs" in ax.get_title()
    assert "MPDUs per PPDU" in ax.get_xlabel() and "PPDUs (%)" in ax.get_ylabel()


def test_wifi_plots_of_a_run_without_wifi_say_so(make_native_result):
    res = Results.from_native(make_native_result())

    for plot in (plots.wifi_airtime, plots.wifi_access_delay, plots.wifi_ampdu):
        ax = plot(res)
        assert not ax.patches and not ax.get_lines()
        assert [t.get_text() for t in ax.texts] == ["no Wi-Fi cell in this run (no [wifi] table)"]
