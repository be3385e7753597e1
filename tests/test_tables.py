"""Summary tables, checked by their text."""

from __future__ import annotations

import io
import json

from rich.console import Console

from l4slab.results import Results
from l4slab.tables import (
    apps_data,
    flows_data,
    flows_table,
    queues_data,
    queues_table,
    rtt_name,
    run_line,
    seed_text,
    summary_view,
)


def render(renderable: object) -> str:
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_flow_row_has_units_converted(make_native_result):
    summary = json.loads(make_native_result()["summary_json"])
    text = render(flows_table(summary))

    assert "download" in text
    assert "reno" in text
    assert "18.91" in text  # goodput 18,912,345 bit/s in Mbit/s
    assert "11.82 MB" in text  # bytes delivered
    assert "50.1" in text and "70.2" in text and "95.5" in text  # RTT min / p50 / p99
    assert "42" in text and "40" in text  # retransmits, lost packets
    assert "seed 1" in text


def test_rtt_and_sojourn_columns_say_what_they_measure(make_native_result):
    summary = json.loads(make_native_result()["summary_json"])

    flows, queues = flows_data(summary), queues_data(summary)

    rtt = [column for column in flows.columns if "RTT" in column.header]
    assert [column.header for column in rtt] == [
        "per-ACK\nRTT ms\nmin",
        "per-ACK\nRTT ms\np50",
        "per-ACK\nRTT ms\np99",
    ]
    assert all("one per ACK that acknowledges new data" in column.tip for column in rtt)
    sojourn = [column for column in queues.columns if "sojourn" in column.header]
    assert len(sojourn) == 2
    assert all("every packet that left it" in column.tip for column in sojourn)
    assert "per-ACK" in render(flows_table(summary))


def test_the_emulators_rtt_is_named_srtt(make_native_result):
    summary = json.loads(make_native_result()["summary_json"])
    summary["flows"]["download"]["rtt_source"] = "tcp_info srtt every 10 ms"

    headers = [column.header for column in flows_data(summary).columns]

    assert rtt_name(summary) == "srtt"
    assert "srtt\nRTT ms\np99" in headers
    assert next(c for c in flows_data(summary).columns if "p99" in c.header).tip.startswith(
        "srtt: the kernel's smoothed RTT"
    )


def test_queue_row_lists_drop_reasons_without_zeros_or_total(make_native_result):
    summary = json.loads(make_native_result()["summary_json"])
    text = render(queues_table(summary))

    assert "bottleneck.down" in text
    assert "19.50" in text and "45.25" in text  # sojourn p50 / p99
    assert "overlimit 40" in text
    assert "head_drop" not in text
    assert "total" not in text
    assert "97.3" in text  # utilization %


def test_dualpi2_sub_queues_get_their_own_rows():
    summary = {
        "queues": {
            "bottleneck.down": {
                "kind": "dualpi2",
                "sojourn_ms": {"p50": 9.5, "p99": 30.25},
                "subqueues": {
                    "c": {"sojourn_ms": {"p50": 14.75, "p99": 31.5}},
                    "l": {"sojourn_ms": {"p50": 0.35, "p99": 1.85}},
                },
            }
        }
    }
    lines = render(queues_table(summary)).splitlines()
    c_row = next(line for line in lines if "c queue" in line)
    l_row = next(line for line in lines if "l queue" in line)
    assert "14.75" in c_row and "31.50" in c_row
    assert "0.35" in l_row and "1.85" in l_row


def test_a_flow_whose_app_metrics_fill_no_column_gets_no_app_row():
    # A bulk flow over QUIC reports its connections' counters, nothing the table shows.
    quic = {"app": "bulk", "app_metrics": {"transport": "quic", "client": {"srtt_ms": 20.0}}}
    ping = {"app": "ping", "app_metrics": {"rtt_ms": {"p50": 21.0, "p99": 25.0}, "loss_pct": 0}}
    data = apps_data({"flows": {"bulk": quic, "probe": ping}})
    assert data is not None
    assert [row.cells[0] for row in data.rows] == ["probe"]
    assert apps_data({"flows": {"bulk": quic}}) is None


def test_missing_values_show_a_dash():
    summary = {"seed": 3, "flows": {"f": {"cc": "reno", "completion_s": None}}}
    text = render(flows_table(summary))

    assert "f" in text and "—" in text


def test_run_line():
    line = run_line({"sim_s": 30.0, "wall_s": 1.5, "events": 1234567})

    assert line == "simulated 30.0 s in 1.50 s (20x real time), 1,234,567 events"
    assert run_line({}) == ""
    emu = run_line({"sim_s": 30.0, "wall_s": 31.2, "backend": "emu", "packets": 45678})
    assert emu == "emulated 30.0 s in real time (wall 31.20 s), 45,678 packets forwarded"


def test_summary_view_stacks_everything(make_native_result):
    text = render(summary_view(Results.from_native(make_native_result())))

    assert "flows — unit" in text
    assert "queues" in text
    assert "simulated 5.0 s" in text


def test_a_real_endpoints_run_says_so_not_simulated():
    summary = {"backend": "send", "seed": None}
    assert seed_text(summary) == "l4slab send, real network"
    line = run_line({"backend": "send", "sim_s": 5.0, "wall_s": 5.02})
    assert line == "ran 5.0 s on the network (wall 5.02 s)"
    assert "simulated" not in line
