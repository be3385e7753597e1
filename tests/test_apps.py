"""Application metrics from a real run: in summary.json, the series, the tables and the report."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

import l4slab
from l4slab.report import report_figures
from l4slab.tables import apps_data, flows_data, rich_table

SCENARIO = """
format = 1
duration = "6s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100ms"
[[flows]]
name = "download"
cc = "cubic"
app = "bulk"
start = "1s"
[[flows]]
name = "ping"
app = { kind = "ping", interval = "50ms" }
[[flows]]
name = "share"
direction = "up"
app = { kind = "screen_share", frame_size = "20KB" }
"""


def render(data) -> str:
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(rich_table(data))
    return console.export_text()


def test_app_metrics_reach_summary_series_tables_and_report(native, tmp_path: Path):
    results = l4slab.run(SCENARIO, out=tmp_path / "run")
    flows = results.summary["flows"]
    ping = flows["ping"]
    assert ping["transport"] == "udp" and flows["download"]["transport"] == "tcp"
    # Probes every 50 ms for 6 s, the one at the very end still pending.
    assert ping["app_metrics"]["probes_sent"] == 121
    assert ping["app_metrics"]["rtt_ms"]["min"] >= 20.0
    share = flows["share"]["app_metrics"]
    assert share["frames_displayed"] > 0
    assert share["frame_latency_ms"]["p50"] > 10.0  # at least the one-way delay

    assert "ping_rtt_ms" in results.series_keys("flow/ping")
    assert {"frame_rate_fps", "frame_latency_ms"} <= set(results.series_keys("flow/share"))

    apps = apps_data(results.summary)
    assert apps is not None
    text = render(apps)
    assert "ping" in text and "screen_share" in text
    assert "bulk" not in text  # bulk reports no app metrics
    # The flow table says a datagram app has no congestion control.
    ping_row = next(r for r in flows_data(results.summary).rows if r.cells[0] == "ping")
    assert ping_row.cells[1] == "udp"

    ids = {spec.slug for spec in report_figures(results)}
    assert {"ping-rtt-ms", "frame-rate-fps", "frame-latency-ms"} <= ids


def test_no_apps_table_without_app_metrics(make_native_result):
    import json

    summary = json.loads(make_native_result()["summary_json"])
    assert apps_data(summary) is None


CALL_AND_PAGE = """
format = 1
duration = "4s"
[bottleneck]
rate = "10Mbit"
delay = "10ms"
buffer = "50ms"
[[flows]]
name = "call"
cc = "cubic"
app = { kind = "video_call" }
[[flows]]
name = "page"
cc = "cubic"
[flows.app]
kind = "web"
objects = [{ size = "30KB", at = "0s" }, { size = "5KB", at = "1s", connection = "new" }]
"""


def test_two_way_call_and_web_page_in_the_applications_table(native, tmp_path: Path):
    results = l4slab.run(CALL_AND_PAGE, out=tmp_path / "run")
    call = results.summary["flows"]["call"]["app_metrics"]
    assert {"up", "down"} <= set(call)
    assert call["down"]["frames_displayed"] > 0 and call["up"]["frames_displayed"] > 0
    page = results.summary["flows"]["page"]["app_metrics"]
    # The object on a new connection is listed with its page.
    assert len(page["objects"]) == 2
    assert all(o["completion_s"] is not None for o in page["objects"])

    rows = apps_data(results.summary).rows
    names = [(r.cells[0], r.sub) for r in rows]
    # One row per direction of the call under its flow row.
    i = names.index(("call", False))
    assert {names[i + 1], names[i + 2]} == {("down", True), ("up", True)}
    down = next(r for r in rows if r.sub and r.cells[0] == "down")
    assert float(down.cells[4]) > 20.0  # frames per second received
    # The page's latency column is its objects' completion time.
    page_row = next(r for r in rows if r.cells[0] == "page")
    assert page_row.cells[2] != "—"
    assert {"frame-rate-fps-down", "frame-rate-fps-up"} <= {
        spec.slug for spec in report_figures(results)
    }
