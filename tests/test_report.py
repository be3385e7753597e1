"""The HTML report: its content, its files, the CLI, and (with Chromium) how it renders."""

from __future__ import annotations

import base64
import html
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from l4slab import load
from l4slab.cli import main
from l4slab.report import FIGURES_DIR, REPORT_FILE, SECTIONS, report_figures, write_report
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
    assert "target" in page and "15 ms" in page
    assert f"{res.stats['events']:,}" in page


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


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    chromium() is None,
    reason="Chromium is not installed (apt-get install chromium); docs/report.md describes "
    "the same check by hand",
)
def test_report_renders_in_headless_chromium(dualpi2_report, tmp_path):
    """Chromium loads the page and its embedded figures: the screenshot is not blank."""
    from PIL import Image

    page = dualpi2_report
    shot = tmp_path / "report.png"
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [
                str(chromium()),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                f"--screenshot={shot}",
                "--window-size=1280,2400",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
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
