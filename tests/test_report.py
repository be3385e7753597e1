"""The HTML report: its content, its files, the CLI, and (with Chromium) how it renders."""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from headless import chromium, chromium_screenshot
from l4slab import api, load
from l4slab.cli import main
from l4slab.report import (
    FIGURES_DIR,
    REPORT_FILE,
    SECTIONS,
    report_figures,
    topology_text,
    write_report,
)
from l4slab.results import ROW_GROUP_SIZE, Results
from l4slab.tables import flows_data, queues_data

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TRACED_FIGURES = [
    "rtt-cdf",
    "goodput",
    "cwnd",
    "rtt",
    "queue-delay",
    "queue-delay-cdf",
    "drops-marks",
    "probability",
    "tsg",
    "tsg-zoom",
]


def embedded_pngs(page: str) -> list[bytes]:
    return [
        base64.b64decode(data)
        for data in re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    ]


def leaf_keys(value: object, prefix: str = "") -> list[str]:
    if isinstance(value, dict) and value:
        keys = []
        for key, inner in value.items():
            keys += leaf_keys(inner, f"{prefix}.{key}" if prefix else key)
        return keys
    return [prefix]


@pytest.fixture(scope="module")
def dualpi2_report(small_runs, tmp_path_factory) -> Path:
    """The report of the traced DualPI2 run, written once into a copy of its bundle."""
    bundle = tmp_path_factory.mktemp("report") / "dualpi2"
    shutil.copytree(small_runs["dualpi2"], bundle)
    return write_report(bundle)


@pytest.fixture
def one_figure(monkeypatch):
    """Reports with only their first figure: for tests of files and commands, not content."""
    from l4slab import report

    full = report.report_figures
    monkeypatch.setattr(report, "report_figures", lambda *a, **k: full(*a, **k)[:1])


def test_report_of_a_traced_dualpi2_run(dualpi2_report):
    bundle = dualpi2_report.parent
    res = load(bundle)
    page = dualpi2_report.read_text(encoding="utf-8")

    assert dualpi2_report == bundle / REPORT_FILE
    for section in SECTIONS:
        assert f"<h2>{section}</h2>" in page
    for name in [*res.flows(), *res.queues()]:
        assert html.escape(name) in page
    # One embedded PNG per figure, and each figure also on disk as PNG and SVG.
    pngs = embedded_pngs(page)
    assert len(pngs) == page.count("<figure") == len(TRACED_FIGURES)
    assert all(png.startswith(PNG_MAGIC) and len(png) > 5_000 for png in pngs)
    for slug in TRACED_FIGURES:
        png = bundle / FIGURES_DIR / f"{slug}.png"
        svg = bundle / FIGURES_DIR / f"{slug}.svg"
        assert png.read_bytes() in pngs
        assert "<svg" in svg.read_text(encoding="utf-8")[:2_000]
        assert f'href="{FIGURES_DIR}/{slug}.svg"' in page
    assert sorted(p.name for p in (bundle / FIGURES_DIR).iterdir()) == sorted(
        f"{slug}.{ext}" for slug in TRACED_FIGURES for ext in ("png", "svg")
    )


def test_report_has_the_cli_tables_and_every_metric(dualpi2_report):
    res = load(dualpi2_report.parent)
    page = dualpi2_report.read_text(encoding="utf-8")

    # The summary tables are the CLI's cells, one for one.
    for table in (flows_data(res.summary), queues_data(res.summary)):
        for row in table.rows:
            for cell in row.cells:
                assert html.escape(cell) in page, cell
    # Every metric of summary.json, by its key path.
    for metrics in [*res.flows().values(), *res.queues().values()]:
        for key in leaf_keys(metrics):
            assert f">{html.escape(key)}<" in page, key
    # Every time series, with its largest value.
    for series in res.series_names():
        for key in res.series_keys(series):
            assert f">{html.escape(key)}<" in page
    # The scenario's topology line and the run's facts.
    assert "client — 10 Mbit/s, 10 ms, dualpi2 — server" in page
    # Parameters in their declared units (asked of the native module): durations
    # in ms, byte counts as sizes.
    assert re.search(r">target</span> <strong>15 ms<", page)
    assert re.search(r">tupdate</span> <strong>16 ms<", page)
    assert re.search(r">memory_limit</span> <strong>[\d.]+ [kM]B<", page)
    assert f"{res.stats['events']:,}" in page


def test_the_topology_names_each_hosts_access_link() -> None:
    link = {"rate": 100_000_000, "delay": 10_000_000, "qdisc": {"kind": "fifo"}}
    scenario = {
        "bottleneck": {"down": link, "up": link},
        "hosts": [
            {
                "name": "laptop",
                "side": "client",
                "access_delay": 2_000_000,
                "access": {"down": {"rate": 50_000_000}, "up": {"rate": 10_000_000}},
            },
            {
                "name": "desk",
                "side": "client",
                "access": {"down": {"rate": 5e7}, "up": {"rate": 5e7}},
            },
            {"name": "phone", "side": "client", "access_delay": 30_000_000},
            {"name": "nic", "side": "server", "access": {"down": {"rate": 1e9}}},
        ],
    }
    assert topology_text(scenario) == (
        "laptop (+2 ms; access down 50 Mbit/s, up 10 Mbit/s), desk (access 50 Mbit/s), "
        "phone (+30 ms) — 100 Mbit/s, 10 ms, fifo — nic (access down 1 Gbit/s)"
    )


def test_report_is_self_contained(dualpi2_report):
    page = dualpi2_report.read_text(encoding="utf-8")

    assert "<link" not in page and "<script" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page), "no external resources"
    assert "<style>" in page


def test_report_into_another_directory_and_again(small_runs, tmp_path, one_figure):
    out = tmp_path / "elsewhere"

    first = write_report(small_runs["fifo"], out)
    (out / FIGURES_DIR / "mine.png").write_bytes(b"not l4slab's")
    second = write_report(small_runs["fifo"], out)

    assert first == second == out / REPORT_FILE
    # Only the report's own figures are replaced (issue 10; tests/test_cli.py has more).
    assert (out / FIGURES_DIR / "mine.png").read_bytes() == b"not l4slab's"
    assert not (small_runs["fifo"] / REPORT_FILE).exists()
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [".l4slab-manifest.json"]


def test_report_of_a_chosen_flow(small_runs):
    res = load(small_runs["fifo"])

    titles = [spec.title for spec in report_figures(res, flow="reno.1")]

    assert "Time-sequence graph of reno.1" in titles
    assert "Time-sequence graph of reno.0" not in titles
    with pytest.raises(KeyError, match=r"reno\.0"):
        write_report(res, small_runs["fifo"].parent / "unused", flow="nope")


def test_report_says_which_rtt_and_which_sojourn_each_number_is(dualpi2_report):
    """One metric, one name: the table's RTT is the sender's per-ACK samples, the CDF's
    line the per-segment RTT of the trace; each is named, and the difference explained."""
    page = html.unescape(dualpi2_report.read_text(encoding="utf-8"))

    per_ack = "per-ACK RTT: the sender's RTT samples, one per ACK that acknowledges new data"
    assert page.count(f'title="{per_ack}') == 3, "each RTT column of the flow table says so"
    assert page.count('title="queue sojourn: time each packet spent in the queue') == 2
    assert re.search(r"<th [^>]*>per-ACK<br>RTT ms<br>p99</th>", page)
    assert "per-ACK RTT p50" in page, "the at-a-glance cards name it too"
    caption = re.search(r'<figure id="fig-rtt-cdf">.*?</figure>', page, re.S)
    assert caption is not None
    text = caption.group(0)
    assert "Two different RTTs" in text and "per-segment RTT from the packet trace" in text
    assert "only from an ACK that acknowledges new data" in text
    assert "not the per-segment RTT of the packet trace" in page, "the summary's note"
    assert "Queue sojourn over time" in page and "Queue delay" not in page


def test_report_streams_the_trace_and_never_loads_it_whole(bundle_copy, monkeypatch):
    bundle = bundle_copy("file")

    def whole_table(self: Results) -> None:
        raise AssertionError("the report read the whole packet trace into memory")

    monkeypatch.setattr(Results, "packets", property(whole_table))
    page = write_report(bundle).read_text(encoding="utf-8")

    assert 'id="fig-tsg"' in page and 'id="fig-tsg-zoom"' in page and 'id="fig-rtt-cdf"' in page


def test_report_zooms_where_asked(bundle_copy):
    res = load(bundle_copy("file"))

    specs = {spec.slug: spec for spec in report_figures(res, tsg_window=(0.5, 0.75))}

    assert specs["tsg-zoom"].caption.startswith("0.500 s to 0.750 s: the range asked for")
    with pytest.raises(ValueError, match="not a range"):
        report_figures(res, tsg_window=(2.0, 1.0))


def tile_trace(source: Path, target: Path, copies: int) -> tuple[int, float]:
    """Write ``copies`` of a packet trace one after the other (times and sequence numbers
    shifted, SACK blocks too), in row groups as l4slab writes them; ``(rows, seconds)``."""
    table = pq.read_table(source)
    span_t = float(np.ceil(pc.max(table["t_s"]).as_py()))
    span_seq = int(pc.max(table["seq"]).as_py()) + 1_000_000
    sack = table["sack"].combine_chunks()
    names = table.column_names

    def shifted(value: str | None, by: int) -> str:
        blocks = [block.split("-") for block in (value or "").split(";") if block]
        return ";".join(f"{int(lo) + by}-{int(hi) + by}" for lo, hi in blocks)

    with pq.ParquetWriter(target, table.schema, compression="zstd") as writer:
        for k in range(copies):
            by = k * span_seq
            columns = dict(zip(names, table.columns, strict=True))
            columns["t_s"] = pc.add(table["t_s"], k * span_t)
            columns["seq"] = pc.add(table["seq"], pa.scalar(by, table.schema.field("seq").type))
            columns["ack"] = pc.add(table["ack"], pa.scalar(by, table.schema.field("ack").type))
            dictionary = pa.array([shifted(v, by) for v in sack.dictionary.to_pylist()])
            columns["sack"] = pa.DictionaryArray.from_arrays(sack.indices, dictionary)
            writer.write_table(pa.table(columns, schema=table.schema), ROW_GROUP_SIZE)
    return table.num_rows * copies, span_t * copies


def report_peak_rss_mb(bundle: Path) -> float:
    """Write the report of ``bundle`` in a child process; its peak resident memory in MB."""
    code = (
        "import resource, sys\n"
        "from l4slab.report import write_report\n"
        "write_report(sys.argv[1])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(bundle)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1]) / 1024  # ru_maxrss is in kB on Linux


@pytest.mark.slow
def test_report_memory_stays_bounded_on_a_huge_trace(native, tmp_path):
    """A trace 40 times longer costs the report (almost) no more memory: it is streamed.

    The bundle is a real 10 s trace of a 20 Mbit/s Reno flow, tiled 40 times in time
    and sequence (2 M rows, 400 s). Reading it whole, as the report once did, took
    about 400 bytes a row (measured: 186 MB for the 10 s trace, 1,038 MB for this one);
    streamed, it takes 205 MB. Memory is measured, not time.
    """
    small = tmp_path / "small"
    scenario = Path(__file__).resolve().parent.parent / "scenarios/examples/reno-20mbit.toml"
    api.run(scenario, out=small, overrides=["duration=10s", "packet_trace=true"], command=["t"])
    large = tmp_path / "large"
    large.mkdir()
    rows, duration = tile_trace(small / "packets.parquet", large / "packets.parquet", 40)
    summary = json.loads((small / "summary.json").read_text(encoding="utf-8"))
    summary["duration_s"] = duration
    summary["scenario"]["duration"] = int(duration * 1e9)
    (large / "summary.json").write_text(json.dumps(summary, sort_keys=True), encoding="utf-8")
    shutil.copy(small / "series.parquet", large / "series.parquet")
    assert rows > 2_000_000

    small_mb = report_peak_rss_mb(small)
    large_mb = report_peak_rss_mb(large)

    assert large_mb - small_mb < 60, (small_mb, large_mb)
    assert large_mb < 400, large_mb
    page = (large / REPORT_FILE).read_text(encoding="utf-8")
    assert "Time-sequence graph of download" in page


# --------------------------------------------------------------------------- CLI


def test_report_without_a_trace_has_no_time_sequence_graph(small_runs):
    res = load(small_runs["codel"])

    specs = report_figures(res)

    slugs = [spec.slug for spec in specs]
    assert "tsg" not in slugs and "tsg-zoom" not in slugs
    assert {"rtt-cdf", "queue-delay", "codel-count"} <= set(slugs)
    assert "probability" not in slugs, "CoDel has no probability"
    assert "packet_trace = true" in specs[0].caption


def test_cli_report(bundle_copy, capsys, one_figure):
    bundle = bundle_copy("codel")

    code = main(["report", str(bundle)])

    out = capsys.readouterr().out
    assert code == 0
    assert f"report: {bundle / REPORT_FILE}" in out
    page = (bundle / REPORT_FILE).read_text(encoding="utf-8")
    assert len(embedded_pngs(page)) == 1
    assert sorted(p.name for p in (bundle / FIGURES_DIR).iterdir()) == [
        "rtt-cdf.png",
        "rtt-cdf.svg",
    ]


def test_cli_report_errors_exit_2(bundle_copy, tmp_path, capsys):
    code = main(["report", str(tmp_path)])
    assert code == 2
    assert "not an l4slab results directory" in capsys.readouterr().err

    code = main(["report", str(bundle_copy("fifo")), "--flow", "nope"])
    err = capsys.readouterr().err
    assert code == 2
    assert "nope" in err and "reno.0" in err


def test_cli_report_tsg_window(bundle_copy, capsys):
    bundle = bundle_copy("file")

    assert main(["report", str(bundle), "--tsg-window", "0.5:0.75"]) == 0

    page = (bundle / REPORT_FILE).read_text(encoding="utf-8")
    assert "0.500 s to 0.750 s: the range asked for (--tsg-window)" in page
    for bad in ("0.75", "1:0.5", "a:b", "-1:2"):
        capsys.readouterr()
        assert main(["report", str(bundle), "--tsg-window", bad]) == 2
        assert "--tsg-window" in capsys.readouterr().err


def test_cli_run_with_report_and_run_again(native, golden_scenario, tmp_path, capsys, one_figure):
    out = tmp_path / "res"
    args = ["run", str(golden_scenario), "-o", str(out), "--set", "duration=2s", "-q", "--report"]

    assert main(args) == 0
    assert f"report: {out / REPORT_FILE}" in capsys.readouterr().out
    assert (out / REPORT_FILE).is_file() and (out / FIGURES_DIR / "rtt-cdf.png").is_file()
    # A bundle with its report is still a bundle: running again replaces both.
    assert main([a for a in args if a != "--report"]) == 0
    assert not (out / REPORT_FILE).exists(), "the old report went with the old bundle"


def test_cli_help_lists_report_and_compare(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\breport\b", out) and re.search(r"\bcompare\b", out)
    assert main(["report", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Example: l4slab report" in text and "packet_trace" in text and "--open" in text


# --------------------------------------------------------------------------- in a browser


@pytest.mark.skipif(
    chromium() is None,
    reason="Chromium is not installed (apt-get install chromium); docs/report.md describes "
    "the same check by hand",
)
def test_report_renders_in_headless_chromium(dualpi2_report, tmp_path):
    """Chromium loads the page and its embedded figures: the screenshot is not blank."""
    from PIL import Image

    shot = tmp_path / "report.png"
    done = chromium_screenshot(dualpi2_report, shot, (1280, 2400))
    assert shot.is_file(), done.stderr[-2_000:]
    with Image.open(shot) as image:
        assert image.size == (1280, 2400)
        pixels = np.asarray(image.convert("RGB"), dtype=np.int16)
    assert shot.stat().st_size > 50_000
    # Not one colour: text, tables and plots drew; many distinct colours means the
    # embedded PNG figures decoded (the page's own CSS has a handful).
    colours = np.unique(pixels.reshape(-1, 3)[::7], axis=0)
    assert len(colours) > 200
    # The figures' lines are there: Okabe-Ito blue (#0072B2) pixels in the lower half,
    # where the first row of figures sits.
    blue = np.all(np.abs(pixels[1200:] - np.array([0, 114, 178])) < 30, axis=-1)
    assert blue.sum() > 500
