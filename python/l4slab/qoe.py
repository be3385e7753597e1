"""What the users of the home-network apps judge them by (QoE), as tables: one per kind
of app the run has — video players (``video_stream``), browsing (``web_browse``),
downloads (``download``, per download, its connections together).

Every cell is a number of summary.json, unit-converted as the column says
(docs/apps.md#what-the-report-shows): a player's ``app_metrics``, a browsing flow's
``app_metrics``, the run's ``downloads``. ``l4slab run`` / ``show`` print these tables
under the flow table and the HTML report shows them in its Summary, from the same
:class:`~l4slab.tables.TableData`. Nothing is printed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from l4slab.tables import (
    Column,
    Row,
    TableData,
    flow_order,
    format_bytes,
    format_count,
    format_number,
)

__all__ = [
    "app_flows",
    "downloads_data",
    "qoe_tables",
    "scenario_flow",
    "video_data",
    "web_browse_data",
]


def qoe_tables(summary: Mapping[str, Any]) -> list[TableData]:
    """The QoE tables of the apps the run has, in the order video, browsing, downloads."""
    tables = (video_data(summary), web_browse_data(summary), downloads_data(summary))
    return [table for table in tables if table is not None]


def app_flows(summary: Mapping[str, Any], kind: str) -> list[str]:
    """The flows running app ``kind`` that reported ``app_metrics``, in scenario order."""
    flows: Mapping[str, Mapping[str, Any]] = summary.get("flows") or {}
    return [
        name
        for name in flow_order(summary)
        if flows[name].get("app") == kind and isinstance(flows[name].get("app_metrics"), Mapping)
    ]


def scenario_flow(summary: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A flow of the resolved scenario (``summary.scenario.flows``) by name; ``{}`` if none."""
    flows = (summary.get("scenario") or {}).get("flows") or []
    return next((f for f in flows if isinstance(f, Mapping) and f.get("name") == name), {})


def video_data(summary: Mapping[str, Any]) -> TableData | None:
    """One row per ``video_stream`` player; ``None`` without one."""
    names = app_flows(summary, "video_stream")
    if not names:
        return None
    columns = (
        Column("player", numeric=False, no_wrap=True),
        Column("ABR", numeric=False, tip="the ABR rule (app.abr)"),
        Column(
            "startup\ns",
            tip="from pressing play (the flow's start) to playback starting; startup_delay_s",
        ),
        Column(
            "rebuffer\nevents",
            tip="times the buffer ran empty before the video's end; rebuffer_events",
        ),
        Column("rebuffer\ns", tip="time spent stalled; rebuffer_s"),
        Column(
            "rebuffer\n%",
            tip="stalled time over stalled plus played time; rebuffer_ratio * 100",
        ),
        Column(
            "mean bitrate\nMbit/s",
            tip="mean of the fetched segments' bitrates; mean_bitrate_bps",
        ),
        Column(
            "mean rung\n/ top",
            tip="mean ladder rung of the fetched segments (0 = the lowest), over the top "
            "rung's index; mean_rung",
        ),
        Column("switches", tip="rung changes between consecutive segments; bitrate_switches"),
        Column("segments", tip="segments fetched whole; segments_fetched"),
        Column(
            "fetch s\np50",
            tip="segment fetch time, request to last byte; segment_fetch_ms.p50",
        ),
        Column("fetch s\np95", tip="segment_fetch_ms.p95"),
    )
    rows = []
    for name in names:
        metrics = summary["flows"][name]["app_metrics"]
        app = scenario_flow(summary, name).get("app") or {}
        ladder = app.get("ladder") if isinstance(app, Mapping) else None
        top = len(ladder) - 1 if isinstance(ladder, list) and ladder else None
        fetch = metrics.get("segment_fetch_ms") or {}
        rows.append(
            Row(
                (
                    name,
                    str(app.get("abr") or "?") if isinstance(app, Mapping) else "?",
                    format_number(metrics.get("startup_delay_s"), digits=2),
                    format_count(metrics.get("rebuffer_events")),
                    format_number(metrics.get("rebuffer_s"), digits=1),
                    format_number(metrics.get("rebuffer_ratio"), scale=100, digits=1),
                    format_number(metrics.get("mean_bitrate_bps"), scale=1e-6, digits=2),
                    f"{format_number(metrics.get('mean_rung'), digits=1)} / {format_count(top)}",
                    format_count(metrics.get("bitrate_switches")),
                    format_count(metrics.get("segments_fetched")),
                    format_number(fetch.get("p50"), scale=1e-3, digits=2),
                    format_number(fetch.get("p95"), scale=1e-3, digits=2),
                )
            )
        )
    return TableData("video players", columns, tuple(rows))


def web_browse_data(summary: Mapping[str, Any]) -> TableData | None:
    """One row per ``web_browse`` flow; ``None`` without one."""
    names = app_flows(summary, "web_browse")
    if not names:
        return None
    first_byte = "from the page's start to the HTML's first byte, over the pages that got one"
    load = "from the page's start to its last object's last byte, over the loaded pages"
    columns = (
        Column("browser", numeric=False, no_wrap=True),
        Column("pages\nstarted", tip="pages_started (one under way at the end counts)"),
        Column("pages\nloaded", tip="pages_loaded"),
        Column("first byte\nms p50", tip=f"{first_byte}; first_byte_ms.p50"),
        Column("first byte\nms p95", tip=f"{first_byte}; first_byte_ms.p95"),
        Column("page load\nms p50", tip=f"{load}; page_load_ms.p50"),
        Column("page load\nms p95", tip=f"{load}; page_load_ms.p95"),
        Column("page load\nms max", tip="page_load_ms.max"),
    )
    rows = []
    for name in names:
        metrics = summary["flows"][name]["app_metrics"]
        ttfb = metrics.get("first_byte_ms") or {}
        loads = metrics.get("page_load_ms") or {}
        rows.append(
            Row(
                (
                    name,
                    format_count(metrics.get("pages_started")),
                    format_count(metrics.get("pages_loaded")),
                    format_number(ttfb.get("p50"), digits=0),
                    format_number(ttfb.get("p95"), digits=0),
                    format_number(loads.get("p50"), digits=0),
                    format_number(loads.get("p95"), digits=0),
                    format_number(loads.get("max"), digits=0),
                )
            )
        )
    return TableData("web browsing (page loads)", columns, tuple(rows))


def downloads_data(summary: Mapping[str, Any]) -> TableData | None:
    """One row per download (summary.json ``downloads``); ``None`` without one."""
    downloads = summary.get("downloads")
    if not isinstance(downloads, Mapping) or not downloads:
        return None
    columns = (
        Column("download", numeric=False, no_wrap=True),
        Column("dir", numeric=False, tip="down: from the server (a download); up: an upload"),
        Column("conns", tip="parallel connections (flows <name>.0 ..); connections"),
        Column("size", tip="bytes of the whole download; size_bytes"),
        Column("start\ns", tip="start_s"),
        Column("delivered", tip="bytes its parts delivered in order; bytes_delivered"),
        Column(
            "parts\ndone",
            tip="parts complete (parts stopped by `stop`); parts_completed, parts_stopped",
        ),
        Column(
            "completion\ns",
            tip="from its start to the last part's last byte; completion_s (— while not done)",
        ),
        Column("goodput\nMbit/s", tip="size * 8 / completion; goodput_bps"),
    )
    rows = []
    for name, download in downloads.items():
        if not isinstance(download, Mapping):
            continue
        parts = download.get("flows") or []
        direction = scenario_flow(summary, parts[0]).get("direction") if parts else None
        stopped = download.get("parts_stopped")
        done = f"{format_count(download.get('parts_completed'))}" + (
            f" ({format_count(stopped)} stopped)" if stopped else ""
        )
        rows.append(
            Row(
                (
                    str(name),
                    str(direction or "?"),
                    format_count(download.get("connections")),
                    format_bytes(download.get("size_bytes")),
                    format_number(download.get("start_s"), digits=1),
                    format_bytes(download.get("bytes_delivered")),
                    done,
                    format_number(download.get("completion_s"), digits=2),
                    format_number(download.get("goodput_bps"), scale=1e-6, digits=2),
                )
            )
        )
    return TableData("downloads", columns, tuple(rows))
