"""Plots, checked by what they draw (lines, labels, data, units), not by pixels."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from l4slab import load, plots
from l4slab.plots._style import recorded_keys
from l4slab.results import Results
from l4slab.tables import flow_order, flows_data, format_number


def labelled_lines(ax: Axes) -> dict[str, Any]:
    """The Axes' lines that have a legend label, by label."""
    return {
        line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")
    }


def collection(ax: Axes, label: str) -> LineCollection:
    found = [c for c in ax.collections if c.get_label() == label]
    assert len(found) == 1, [c.get_label() for c in ax.collections]
    return found[0]


def bars(c: LineCollection) -> list[tuple[float, float, float]]:
    """``(t, lo, hi)`` of each vertical bar of a collection."""
    return [(float(s[0][0]), float(s[0][1]), float(s[1][1])) for s in c.get_segments()]


# --------------------------------------------------------------------------- a hand-made trace

# A download (flow 0): SYN-ACK at seq 0, so payload byte 0 is seq 1. Three segments of 1000
# bytes; the second is dropped and retransmitted with CWR; the first arrives CE-marked; the
# ACKs carry ECE, and one SACKs the third segment.
TRACE = [
    # t_s, event, side, seq, len, ack, ecn, retransmission, wnd, sack, flags
    (0.000, "send", "data", 0, 0, 1, "not_ect", False, 10_000, "", "S."),
    (0.010, "send", "data", 1, 1000, 1, "ect0", False, 10_000, "", "."),
    (0.011, "send", "data", 1001, 1000, 1, "ect0", False, 10_000, "", "."),
    (0.012, "send", "data", 2001, 1000, 1, "ect0", False, 10_000, "", "."),
    (0.015, "drop:overlimit", "data", 1001, 1000, 1, "ect0", False, 10_000, "", "."),
    (0.020, "deliver", "data", 1, 1000, 1, "ce", False, 10_000, "", "."),
    (0.022, "deliver", "data", 2001, 1000, 1, "ect0", False, 10_000, "", "."),
    (0.030, "deliver", "ack", 1, 0, 1001, "not_ect", False, 10_000, "", ".E"),
    (0.032, "deliver", "ack", 1, 0, 1001, "not_ect", False, 10_000, "2001-3001", ".E"),
    (0.040, "send", "data", 1001, 1000, 1, "ect0", True, 10_000, "", ".W"),
    (0.050, "deliver", "data", 1001, 1000, 1, "ect0", True, 10_000, "", "."),
    (0.060, "deliver", "ack", 1, 0, 3001, "not_ect", False, 10_000, "", "."),
]
COLUMNS = ("t_s", "event", "side", "seq", "len", "ack", "ecn", "retransmission", "wnd", "sack")


@pytest.fixture
def traced(make_native_result) -> Results:
    native = make_native_result()
    packets: dict[str, list[Any]] = {name: [] for name in (*COLUMNS, "flags")}
    packets["flow"] = []
    for row in TRACE:
        for name, value in zip((*COLUMNS, "flags"), row, strict=True):
            packets[name].append(value)
        packets["flow"].append(0)
    native["packets"] = packets
    return Results.from_native(native)


def test_time_sequence_of_a_hand_made_trace(traced):
    ax = plots.time_sequence(traced, "download")

    assert bars(collection(ax, "data sent")) == [
        (0.010, 0.0, 1000.0),
        (0.011, 1000.0, 2000.0),
        (0.012, 2000.0, 3000.0),
    ]
    assert bars(collection(ax, "_retransmission ticks")) == [(0.040, 1000.0, 2000.0)]
    # The CE mark is seen at delivery (0.020) and drawn on the tick of the copy sent at 0.010.
    assert bars(collection(ax, "CE-marked (tick of the marked copy)")) == [(0.010, 0.0, 1000.0)]
    assert bars(collection(ax, "SACK block")) == [(0.032, 2000.0, 3000.0)]
    lines = labelled_lines(ax)
    ack = lines["cumulative ACK"]
    assert list(ack.get_xdata()) == [0.030, 0.032, 0.060]
    assert list(ack.get_ydata()) == [1000, 1000, 3000]
    window = next(line for label, line in lines.items() if label.startswith("receive window"))
    assert list(window.get_ydata()) == [11_000, 11_000, 13_000]
    assert "above the view" in window.get_label()
    drop = lines["dropped in the network"]
    assert (list(drop.get_xdata()), list(drop.get_ydata())) == ([0.015], [1500.0])
    assert list(lines["retransmission"].get_xdata()) == [0.040]
    assert list(lines["CWR flag (sender reduced)"].get_xdata()) == [0.040]
    assert list(lines["ECE flag on ACK"].get_xdata()) == [0.030, 0.032]
    assert ax.get_xlabel() == "time at the sender (s)"
    assert "bytes" in ax.get_ylabel()
    assert "download" in ax.get_title()


def test_segment_rtts_skip_retransmitted_segments_and_count_sacks(traced):
    sent, rtt = plots.segment_rtts(traced, "download")

    # Segment 0 is covered by the cumulative ACK at 0.030, segment 2 by the SACK at 0.032;
    # segment 1 was retransmitted, so it has no sample (Karn).
    assert list(sent) == [0.010, 0.012]
    assert list(rtt) == pytest.approx([20.0, 20.0])


def test_time_sequence_zoom_keeps_the_ack_in_force(traced):
    ax = plots.time_sequence(traced, 0, t_range=(0.035, 0.065))

    assert ax.get_xlim() == (0.035, 0.065)
    assert bars(collection(ax, "_retransmission ticks")) == [(0.040, 1000.0, 2000.0)]
    assert not [c for c in ax.collections if c.get_label() == "data sent"]
    # The line starts from the last ACK before the range (1000) and steps to 3000.
    assert list(labelled_lines(ax)["cumulative ACK"].get_ydata()) == [1000, 3000]


def test_time_sequence_without_a_trace_says_how_to_get_one(make_native_result):
    results = Results.from_native(make_native_result())

    with pytest.raises(plots.NoPacketTraceError, match="packet_trace = true"):
        plots.time_sequence(results, "download")


def test_unknown_flow_names_the_flows(traced):
    with pytest.raises(KeyError, match="'download'"):
        plots.time_sequence(traced, "nope")


# --------------------------------------------------------------------------- real runs


def test_time_sequence_of_a_file_transfer(small_runs):
    res = load(small_runs["file"])
    flow = res.flow("file")

    ax = plots.time_sequence(res, "file")

    ack = labelled_lines(ax)["cumulative ACK"].get_ydata()
    assert np.all(np.diff(ack) >= 0), "the ACK line never goes down"
    assert ack.max() == flow["bytes_delivered"] == 1_000_000
    retransmissions = labelled_lines(ax)["retransmission"].get_xdata()
    assert len(retransmissions) == flow["retransmits"] > 0
    drops = labelled_lines(ax)["dropped in the network"].get_xdata()
    assert len(drops) == flow["lost_packets"] > 0
    sent = len(collection(ax, "data sent").get_segments()) + len(retransmissions)
    assert sent == flow["data_segments_sent"]
    assert collection(ax, "SACK block").get_segments(), "losses are SACKed"


def test_reading_in_small_batches_gives_the_same_trace(small_runs, traced, monkeypatch):
    """The trace is read as a stream: where batches end changes nothing (the SYN before the
    first batch with data, SACKs and retransmissions across batches, CE marks whose copy
    was sent in an earlier batch)."""
    from l4slab.plots import _trace_read

    res = load(small_runs["file"])
    whole = {
        "file": (plots.flow_trace(res, "file"), plots.segment_rtts(res, "file")),
        "traced": (plots.flow_trace(traced, 0), plots.segment_rtts(traced, 0)),
    }
    whole_dist = plots.segment_rtt_distributions(res)["file"]
    assert len(whole["traced"][0].ce_t) == 1 and len(whole["file"][0].sack_t) > 100

    # The hand-made trace (12 rows) in batches of 1, 2 or 5 rows; the file transfer (2,500
    # rows; its first 2 are the SYN, before the data side sent anything).
    for small, rows in ((1, 2), (2, 97), (5, 1000)):
        for results, key, flow, size in ((res, "file", "file", rows), (traced, "traced", 0, small)):
            monkeypatch.setattr(_trace_read, "BATCH_ROWS", size)
            trace, (sent, rtt) = plots.flow_trace(results, flow), plots.segment_rtts(results, flow)
            for field in dataclasses.fields(trace):
                a, b = getattr(trace, field.name), getattr(whole[key][0], field.name)
                assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, field.name
            assert np.array_equal(sent, whole[key][1][0]) and np.array_equal(rtt, whole[key][1][1])
        monkeypatch.setattr(_trace_read, "BATCH_ROWS", rows)
        dist = plots.segment_rtt_distributions(res)["file"]
        assert np.array_equal(dist.counts, whole_dist.counts) and dist.max == whole_dist.max


def test_a_flow_of_datagrams_is_not_held_in_memory(make_native_result, monkeypatch):
    """Rows wait for the data side's SYN (to make sequence numbers relative), but a flow of
    datagrams never sends one: past a few thousand rows they go on, numbers absolute."""
    from l4slab.plots import _trace, _trace_read

    native = make_native_result()
    rows = 60
    native["packets"] = {
        "t_s": [0.001 * i for i in range(rows)],
        "event": ["send", "deliver"] * (rows // 2),
        "flow": [0] * rows,
        "side": ["dgram"] * rows,
        "seq": [i // 2 for i in range(rows)],
        "len": [100] * rows,
        "retransmission": [False] * rows,
    }
    res = Results.from_native(native)
    monkeypatch.setattr(_trace_read, "BATCH_ROWS", 4)
    monkeypatch.setattr(_trace_read, "_HOLD_ROWS", 8)

    streamed = list(_trace._stream(res, [0], _trace._RTT_COLUMNS, need_ce=False))

    assert len(streamed) == rows // 4 - 2, "events come out as the rows are read"
    assert streamed[0][2].base == 0
    assert plots.segment_rtts(res, 0)[0].size == 0 and plots.flow_trace(res, 0).base == 0


def test_a_long_flow_is_drawn_decimated_with_its_rare_events_exact(small_runs):
    res = load(small_runs["file"])
    exact = plots.tsg_data(res, "file")
    trace = plots.flow_trace(res, "file")
    assert not exact.decimated

    data = plots.tsg_data(res, "file", max_events=200, bins=50)

    assert set(data.decimated) == {"data", "acks", "sacks"}
    # Data: one tick per bin, from the lowest to the highest byte sent in that bin.
    width = data.data.bin_s
    assert width == pytest.approx(res.summary["duration_s"] / 50)
    original = ~trace.data_retx
    bins = np.floor(trace.data_t[original] / width).astype(int)
    for t, lo, hi in zip(data.data.t, data.data.lo, data.data.hi, strict=True):
        mine = bins == int(t // width)
        assert lo == trace.data_seq[original][mine].min()
        assert hi == (trace.data_seq + trace.data_len)[original][mine].max()
    assert len(data.data.t) == len(set(bins)) <= 50
    assert data.data.total == original.sum()
    # The ACK line: each bin's first and last ACK, so it still starts and ends right.
    line = list(zip(trace.ack_t, trace.acked, strict=True))
    points = list(zip(data.acks.t, data.acks.acked, strict=True))
    assert set(points) <= set(line) and points[0] == line[0] and points[-1] == line[-1]
    # Rare events stay exact.
    assert np.array_equal(data.retransmissions.t, exact.retransmissions.t)
    assert np.array_equal(data.drops.t, trace.drop_t)

    ax = plots.draw_time_sequence(data)
    labels = [c.get_label() for c in ax.collections] + list(labelled_lines(ax))
    assert "data sent (range per 60 ms bin, 691 in all)" in labels
    assert "retransmission" in labels and "dropped in the network" in labels
    assert ax.get_title().endswith("(decimated)")
    note = " ".join(text.get_text() for text in ax.texts)
    assert "decimated" in note and "--tsg-window" in note


def test_distribution_quantiles_are_within_a_bin(small_runs):
    values = np.random.default_rng(1).lognormal(3.0, 1.0, 100_000)

    dist = plots.Distribution.of(values)

    assert dist.n == len(values) and dist.max == values.max() and dist.min == values.min()
    for q in (0.01, 0.5, 0.9, 0.99, 0.999):
        exact = np.quantile(values, q, method="inverted_cdf")
        assert exact <= dist.quantile(q) <= exact * 1.001
    assert dist.counts.nbytes < 200_000


def test_interesting_window_is_around_the_first_loss(small_runs):
    res = load(small_runs["file"])
    first_drop = plots.flow_trace(res, "file").drop_t.min()

    t0, t1 = plots.interesting_window(res, "file")

    assert t0 < first_drop < t1


def test_rtt_cdf_from_the_trace_has_one_line_per_flow(small_runs):
    res = load(small_runs["dualpi2"])
    scenario = res.scenario["bottleneck"]
    base_rtt_ms = (scenario["down"]["delay"] + scenario["up"]["delay"]) / 1e6

    ax = plots.rtt_cdf(res)

    lines = {k: v for k, v in labelled_lines(ax).items() if not k.startswith("dots")}
    assert list(lines) == flow_order(res.summary) == ["reno.0", "reno.1"]
    for name, line in lines.items():
        x, y = line.get_xdata(), line.get_ydata()
        samples = plots.segment_rtts(res, name)[1]
        assert len(samples) > 1000
        assert np.all(np.diff(x) >= 0), "sorted RTTs"
        assert x[-1] == samples.max() and x[0] >= samples.min() >= base_rtt_ms
        assert y[-1] == 1.0 and np.all(np.diff(y) > 0)
        # A histogram of 0.1 % bins: a step at x with fraction y has the y·n smallest
        # samples at or below x, and the largest of them within 0.1 % of x.
        largest = np.sort(samples)[np.rint(y * len(samples)).astype(int) - 1]
        assert np.all((largest <= x) & (x <= largest * 1.001))
        # The per-segment median is close to the simulator's own RTT median.
        assert np.median(samples) == pytest.approx(res.flow(name)["rtt_ms"]["p50"], rel=0.15)
    assert ax.get_xlabel().startswith("per-segment RTT")
    assert ax.get_ylabel() == "fraction of segments"
    assert "per segment (packet trace)" in ax.get_title()


def test_rtt_cdf_without_a_trace_uses_the_interval_means(small_runs):
    res = load(small_runs["codel"])

    ax = plots.rtt_cdf(res)

    lines = {k: v for k, v in labelled_lines(ax).items() if not k.startswith("dots")}
    assert list(lines) == flow_order(res.summary)
    for name, line in lines.items():
        _, means = res.series(f"flow/{name}", "rtt_ms")
        assert list(line.get_xdata()) == sorted(means)
        assert line.get_xdata()[-1] == means.max()
    assert "no packet trace" in ax.get_title()
    assert ax.get_xlabel() == "per-ACK RTT, mean per 100 ms (ms)"


def test_rtt_cdf_both_sources(small_runs):
    res = load(small_runs["fifo"])

    ax = plots.rtt_cdf(res, source="both", flows=["reno.1"])

    assert list(labelled_lines(ax)) == [
        "reno.1",
        "reno.1 (per-ACK, 100 ms means)",
        "dots: per-ACK p50, p90, p99, p99.9",
    ]
    assert labelled_lines(ax)["reno.1 (per-ACK, 100 ms means)"].get_linestyle() == "--"


def test_rtt_cdf_names_the_two_rtts_apart_and_shows_the_tables_percentiles(small_runs):
    """One metric, one name: the CDF's line is the per-segment RTT of the trace, its dots
    the per-ACK percentiles the flow table shows (summary.json rtt_ms), each said so."""
    res = load(small_runs["dualpi2"])
    table = flows_data(res.summary)

    ax = plots.rtt_cdf(res, source="both")

    for name in flow_order(res.summary):
        rtt = res.flow(name)["rtt_ms"]
        (dots,) = [line for line in ax.get_lines() if line.get_label().endswith(f"of {name}")]
        assert dots.get_label() == f"_per-ACK percentiles of {name}"
        assert list(dots.get_xdata()) == [rtt["p50"], rtt["p90"], rtt["p99"], rtt["p999"]]
        assert list(dots.get_ydata()) == [0.5, 0.9, 0.99, 0.999]
        row = next(row for row in table.rows if row.cells[0] == name)
        assert format_number(dots.get_xdata()[2], digits=1) in row.cells
    assert "dots: per-ACK p50, p90, p99, p99.9" in labelled_lines(ax)
    assert "per segment (solid) and per-ACK (dashed, dots)" in ax.get_title()
    headers = [column.header for column in table.columns]
    assert [h for h in headers if "RTT" in h] == [
        "per-ACK\nRTT ms\nmin",
        "per-ACK\nRTT ms\np50",
        "per-ACK\nRTT ms\np99",
    ]


def test_the_per_ack_rtt_is_one_sample_per_ack_of_new_data(small_runs):
    """What summary.json's rtt_ms measures, checked against the trace: for each ACK that
    acknowledges new data, the time since the send of the segment it was waiting for
    (the timestamp the receiver echoes). ACKs that only SACK give no sample — which is
    why the per-segment tail of the trace can be longer."""
    res = load(small_runs["dualpi2"])

    for name in flow_order(res.summary):
        trace = plots.flow_trace(res, name)
        line = np.maximum.accumulate(trace.ack)
        before = np.concatenate([[-1], line[:-1]])
        new = line > before
        waited_for = before[new].clip(0)
        # The last send of that segment before the ACK came back.
        sent = np.array(
            [
                trace.data_t[(trace.data_seq == seq) & (trace.data_t <= at)].max()
                for seq, at in zip(waited_for, trace.ack_t[new], strict=True)
            ]
        )
        per_ack = (trace.ack_t[new] - sent) * 1e3
        rtt = res.flow(name)["rtt_ms"]
        for key, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
            assert np.quantile(per_ack, q, method="inverted_cdf") == pytest.approx(
                rtt[key], rel=0.01
            )
        assert per_ack.max() == pytest.approx(rtt["max"], rel=1e-3)


def test_timeseries_converts_units(small_runs):
    res = load(small_runs["fifo"])

    goodput = plots.timeseries(res, "goodput_bps")
    cwnd = plots.timeseries(res, "cwnd_bytes", series=["flow/reno.0"])

    assert list(labelled_lines(goodput)) == ["reno.0", "reno.1"]
    t, bps = res.series("flow/reno.1", "goodput_bps")
    line = labelled_lines(goodput)["reno.1"]
    assert list(line.get_xdata()) == list(t)
    assert np.allclose(line.get_ydata(), bps / 1e6)
    assert goodput.get_ylabel() == "goodput (Mbit/s)"
    assert goodput.get_xlabel() == "time (s)"
    assert list(labelled_lines(cwnd)) == ["reno.0"]
    assert cwnd.get_ylabel() == "congestion window (kB)"
    assert np.allclose(
        labelled_lines(cwnd)["reno.0"].get_ydata(), res.series("flow/reno.0", "cwnd_bytes")[1] / 1e3
    )


def test_queue_delay_shows_dualpi2_sub_queues(small_runs):
    res = load(small_runs["dualpi2"])

    ax = plots.queue_delay(res)

    lines = labelled_lines(ax)
    # Reno is classic traffic: only the C queues saw packets; the legend says L had none.
    assert list(lines) == ["bottleneck.down C", "bottleneck.up C"]
    assert list(lines["bottleneck.down C"].get_ydata()) == list(
        res.series("queue/bottleneck.down", "sojourn_ms.c")[1]
    )
    assert "bottleneck.down L: no packets" in ax.get_legend().get_title().get_text()
    assert "(ms)" in ax.get_ylabel()


def test_queue_delay_of_a_fifo(small_runs):
    res = load(small_runs["fifo"])

    ax = plots.queue_delay(res)

    assert list(labelled_lines(ax)) == ["bottleneck.down", "bottleneck.up"]


def test_recorded_keys_are_none_for_a_series_never_recorded(small_runs):
    res = load(small_runs["fifo"])

    assert "sojourn_ms" in recorded_keys(res, "queue/bottleneck.down")
    assert recorded_keys(res, "queue/no-such-queue") == []
    with pytest.raises(KeyError):
        res.series_keys("queue/no-such-queue")


def test_aqm_probability(small_runs):
    dual = plots.aqm_probability(load(small_runs["dualpi2"]))
    fifo = plots.aqm_probability(load(small_runs["fifo"]))

    lines = labelled_lines(dual)
    assert list(lines) == ["bottleneck.down p_C", "bottleneck.down p_CL"]
    for line in lines.values():
        assert line.get_ydata().min() >= 0 and line.get_ydata().max() <= 1
    # The ACK direction never drops: its lines are left out and named in the legend.
    assert "bottleneck.up p_C" in dual.get_legend().get_title().get_text()
    assert not fifo.get_lines()
    assert any("no queue here" in text.get_text() for text in fifo.texts)


def test_drops_per_second_add_up_to_the_summary(small_runs):
    res = load(small_runs["fifo"])
    interval_s = res.scenario["sample_interval"] / 1e9

    ax = plots.drops_marks(res)

    lines = labelled_lines(ax)
    assert list(lines) == ["bottleneck.down drops"]
    total = lines["bottleneck.down drops"].get_ydata().sum() * interval_s
    assert total == pytest.approx(res.queue("bottleneck.down")["drops"]["total"])
    assert ax.get_ylabel() == "packets per second"


def test_queue_delay_cdf_marks_the_summary_percentiles(small_runs):
    res = load(small_runs["fifo"])
    p99 = res.queue("bottleneck.down")["sojourn_ms"]["p99"]

    ax = plots.queue_delay_cdf(res, queues=["bottleneck.down"])

    assert list(labelled_lines(ax)) == ["bottleneck.down"]
    markers = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(markers) == 1
    assert p99 in list(markers[0].get_xdata())
    assert 0.99 in list(markers[0].get_ydata())


def test_plots_draw_into_the_given_axes_and_return_it(small_runs):
    res = load(small_runs["dualpi2"])
    figure = Figure()
    axes = figure.subplots(2, 3).ravel()

    returned = [
        plots.rtt_cdf(res, ax=axes[0]),
        plots.timeseries(res, "srtt_ms", ax=axes[1]),
        plots.queue_delay(res, ax=axes[2]),
        plots.aqm_probability(res, ax=axes[3]),
        plots.drops_marks(res, ax=axes[4]),
        plots.time_sequence(res, "reno.0", ax=axes[5]),
    ]

    assert returned == list(axes)
    assert all(ax.figure is figure for ax in returned)


def test_no_axes_gives_a_new_agg_figure(small_runs):
    ax = plots.timeseries(load(small_runs["fifo"]), "rtt_ms")

    assert isinstance(ax.figure, Figure)
    assert type(ax.figure.canvas).__name__ in {"FigureCanvasBase", "FigureCanvasAgg"}


def test_the_library_never_imports_pyplot():
    code = (
        "import sys, l4slab.plots, l4slab.report, l4slab.compare; "
        "sys.exit('matplotlib.pyplot' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, f"pyplot was imported (so plt.show() could be called): {done}"
