"""Comparing runs: tables with a column per run, overlaid CDFs, the page and the command."""

from __future__ import annotations

import base64
import html
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from l4slab import load, plots
from l4slab.cli import main
from l4slab.compare import (
    COMPARE_FILE,
    compare,
    comparison_tables,
    queue_delay_cdf_overlay,
    rtt_cdf_overlay,
    run_labels,
    shared_names,
)
from l4slab.report import FIGURES_DIR
from l4slab.tables import format_number

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def runs(small_runs):
    """FIFO and DualPI2 with the same two flows (reno.0, reno.1); CoDel with other flows."""
    return [load(small_runs[key]) for key in ("fifo", "dualpi2", "codel")]


@pytest.fixture(scope="module")
def page(small_runs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("compare") / "out"
    return compare([small_runs["fifo"], small_runs["dualpi2"], small_runs["codel"]], out)


def test_tables_have_one_column_per_run(runs):
    labels = run_labels(runs)

    tables = comparison_tables(runs, labels)

    assert labels == ["fifo-reno", "dualpi2-reno", "codel-reno"]
    titles = [t.title for t in tables]
    # reno.0 and reno.1 are in two runs; near/far only in codel's, so they are not compared.
    assert titles == [
        "runs",
        "flow reno.0",
        "flow reno.1",
        "queue bottleneck.down",
        "queue bottleneck.up",
    ]
    for table in tables:
        assert [c.header for c in table.columns] == ["", *labels]
        assert all(len(row.cells) == 1 + len(runs) for row in table.rows)


def test_flow_table_holds_each_runs_numbers(runs):
    table = next(t for t in comparison_tables(runs, run_labels(runs)) if t.title == "flow reno.0")
    rows = {row.cells[0]: row.cells[1:] for row in table.rows}

    for run, goodput, p99 in zip(
        runs[:2], rows["goodput Mbit/s"][:2], rows["RTT p99 ms"][:2], strict=True
    ):
        flow = run.flow("reno.0")
        assert goodput == format_number(flow["goodput_bps"], scale=1e-6, digits=2)
        assert p99 == format_number(flow["rtt_ms"]["p99"])
    assert rows["cc"][2] == "not in this run"
    assert rows["queue"][:2] == ("bottleneck.down (fifo)", "bottleneck.down (dualpi2)")
    for name in ("retransmits", "queue delay p50 ms", "queue delay p99 ms", "RTT p50 ms"):
        assert name in rows
    # The flow's own packets at its bottleneck, not the whole queue's.
    by_flow = runs[0].queue("bottleneck.down")["sojourn_ms_by_flow"]["reno.0"]
    assert rows["queue delay p99 ms"][0] == format_number(by_flow["p99"], digits=2)


def test_queue_table_has_dualpi2_sub_queue_rows(runs):
    table = next(
        t for t in comparison_tables(runs, run_labels(runs)) if t.title == "queue bottleneck.down"
    )
    rows = {row.cells[0]: row for row in table.rows}

    assert rows["kind"].cells[1:] == ("fifo", "dualpi2", "codel")
    assert rows["C queue delay p99 ms"].sub
    assert rows["C queue delay p99 ms"].cells[1:] == (
        "",
        format_number(
            runs[1].queue("bottleneck.down")["subqueues"]["c"]["sojourn_ms"]["p99"], digits=2
        ),
        "",
    )


def test_rtt_cdf_overlay_has_one_line_per_run(runs):
    ax = rtt_cdf_overlay(runs, "reno.1")

    lines = {line.get_label(): line for line in ax.get_lines()}
    # CoDel's run has no reno.1 and no packet trace: two lines, from the interval means.
    assert list(lines) == ["fifo-reno", "dualpi2-reno"]
    for run, line in zip(runs, lines.values(), strict=False):
        _, means = run.series("flow/reno.1", "rtt_ms")
        assert list(line.get_xdata()) == sorted(means)
    assert ax.get_xlabel() == "RTT, mean per interval (ms)"


def test_rtt_cdf_overlay_uses_the_traces_when_every_run_has_one(runs):
    ax = rtt_cdf_overlay(runs[:2], "reno.0", labels=["A", "B"])

    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["A", "B"]
    assert lines["B"].get_xdata()[-1] == plots.segment_rtts(runs[1], "reno.0")[1].max()
    assert ax.get_xlabel() == "RTT per segment (ms)"


def test_queue_delay_cdf_overlay(runs):
    ax = queue_delay_cdf_overlay(runs, "bottleneck.down")

    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert labels == ["fifo-reno", "dualpi2-reno C", "codel-reno"]
    fifo = next(line for line in ax.get_lines() if line.get_label() == "fifo-reno")
    assert np.all(np.diff(fifo.get_ydata()) > 0) and fifo.get_ydata()[-1] == 1.0


def test_compare_page_and_figures(page, runs):
    text = page.read_text(encoding="utf-8")

    assert page.name == COMPARE_FILE
    for section in ("Runs", "Flows", "Queues", "Figures"):
        assert f"<h2>{section}</h2>" in text
    for label in run_labels(runs):
        assert html.escape(label) in text
    assert "In one run only (not compared): near (codel-reno), far (codel-reno)" in text
    figures = sorted(p.name for p in (page.parent / FIGURES_DIR).iterdir())
    assert figures == [
        "queue-delay-cdf-bottleneck.down.png",
        "queue-delay-cdf-bottleneck.down.svg",
        "rtt-cdf-reno.0.png",
        "rtt-cdf-reno.0.svg",
        "rtt-cdf-reno.1.png",
        "rtt-cdf-reno.1.svg",
    ]
    # The ACK direction hardly queues in any run: said, not drawn.
    assert "No queue-delay CDF for bottleneck.up" in text
    pngs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(pngs) == 3
    assert all(base64.b64decode(png).startswith(PNG_MAGIC) for png in pngs)


def test_labels_fall_back_to_directory_names(small_runs, tmp_path):
    for name in ("seed1", "seed2"):
        shutil.copytree(small_runs["fifo"], tmp_path / name)
    same = [load(tmp_path / "seed1"), load(tmp_path / "seed2")]

    assert run_labels(same) == ["seed1", "seed2"]
    assert shared_names([["a", "b"], ["b", "c"], ["c"]]) == ["b", "c"]
    assert shared_names([["a"], ["b"]]) == ["a", "b"]


def test_compare_refuses_bad_input(small_runs, tmp_path):
    with pytest.raises(ValueError, match="at least two"):
        compare([small_runs["fifo"]], tmp_path / "x")
    with pytest.raises(ValueError, match="must differ"):
        compare([small_runs["fifo"], small_runs["codel"]], tmp_path / "x", labels=["a", "a"])
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match=r"notes\.txt"):
        compare([small_runs["fifo"], small_runs["codel"]], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


# --------------------------------------------------------------------------- CLI


def test_cli_compare(small_runs, tmp_path, capsys, monkeypatch):
    from l4slab import compare as compare_mod

    # The figures are checked above; here only the command's plumbing.
    monkeypatch.setattr(compare_mod, "_figures", lambda runs, labels: [])
    out = tmp_path / "cmp"

    code = main(
        [
            "compare",
            str(small_runs["fifo"]),
            str(small_runs["dualpi2"]),
            "-o",
            str(out),
            "--label",
            "FIFO",
            "--label",
            "DualPI2",
        ]
    )

    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "FIFO" in captured.out and "DualPI2" in captured.out and "flow reno.0" in captured.out
    assert f"comparison: {out / COMPARE_FILE}" in captured.out
    assert (out / COMPARE_FILE).is_file()


def test_cli_compare_bad_input_exits_2(small_runs, tmp_path, capsys):
    assert main(["compare", str(small_runs["fifo"])]) == 2
    assert "at least two" in capsys.readouterr().err
    assert main(["compare", str(small_runs["fifo"]), str(tmp_path)]) == 2
    assert "not an l4slab results directory" in capsys.readouterr().err
    (tmp_path / "mine.txt").write_text("x")
    code = main(["compare", str(small_runs["fifo"]), str(small_runs["codel"]), "-o", str(tmp_path)])
    assert code == 2
    assert "mine.txt" in capsys.readouterr().err
