"""The Scenario section of the run report: the run in one line, the topology (hosts,
bottleneck, Wi-Fi cell), the queue disciplines with their parameters, the flows,
and the resolved scenario as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from l4slab.report._format import _flatten, _ms, _rate, _seconds, _value
from l4slab.report.page import _e, html_table
from l4slab.results import Results
from l4slab.tables import TableData, format_bytes, format_count, format_number, phy_text, seed_text


def _scenario_html(results: Results) -> str:
    scenario = results.scenario
    line = " · ".join(
        [
            f"{_seconds(scenario.get('duration'))} simulated",
            seed_text(results.summary),
            f"a sample every {_ms(scenario.get('sample_interval'))}",
            "packet trace: " + ("yes" if scenario.get("packet_trace") else "no"),
        ]
    )
    parts = [f"<p>{_e(line)}</p>"]
    parts.append("<h3>Topology</h3>")
    parts.append(f'<div class="topology">{_e(topology_text(scenario))}</div>')
    parts.append(_qdisc_html(scenario))
    parts.append("<h3>Flows</h3>")
    parts.append(html_table(_scenario_flows(scenario), caption=False))
    parts.append(
        "<details><summary>Resolved scenario (JSON: times in ns, rates in bit/s, sizes in "
        f'bytes)</summary><pre class="json">{_e(json.dumps(scenario, indent=2))}</pre>'
        "</details>"
    )
    return "\n".join(parts)


def topology_text(scenario: Mapping[str, Any]) -> str:
    """E.g. ``client — 20 Mbit/s, 10 ms — server``; one line per direction if they differ.

    With a Wi-Fi cell the clients reach the bottleneck through its AP
    (``laptop ~ Wi-Fi ~ AP — 100 Mbit/s, ...``), and :func:`wifi_text` follows.
    """
    hosts = [h for h in scenario.get("hosts") or [] if isinstance(h, Mapping)]

    def side(which: str) -> str:
        names = [_host_text(h) for h in hosts if h.get("side") == which]
        return ", ".join(names) or which

    bottleneck = scenario.get("bottleneck") or {}
    down, up = bottleneck.get("down") or {}, bottleneck.get("up") or {}
    clients, servers = side("client"), side("server")
    cell = wifi_text(scenario)
    if cell:
        clients += " ~ Wi-Fi ~ AP"
    if _link_text(down) == _link_text(up):
        text = f"{clients} — {_link_text(down)} — {servers}"
    else:
        text = (
            f"{clients} ⇄ bottleneck ⇄ {servers}\n"
            f"  down (server → client): {_link_text(down)}\n"
            f"  up   (client → server): {_link_text(up)}"
        )
    return f"{text}\n{cell}" if cell else text


def wifi_text(scenario: Mapping[str, Any]) -> str:
    """The Wi-Fi cell of a resolved scenario in a few lines: its stations, the PHY of each
    link, the queues, and each station's SNR, MCS and scans; ``""`` without a cell."""
    wifi = scenario.get("wifi")
    if not isinstance(wifi, Mapping):
        return ""
    hosts = [h for h in scenario.get("hosts") or [] if isinstance(h, Mapping)]
    stations = [s for s in wifi.get("stations") or [] if isinstance(s, Mapping)]

    def name(station: Mapping[str, Any]) -> str:
        index = station.get("host")
        if isinstance(index, int) and 0 <= index < len(hosts):
            return str(hosts[index].get("name"))
        return f"host {index}"

    links = list(wifi.get("links") or [])
    lines = [
        "Wi-Fi cell: an AP at the bottleneck's client end; stations "
        + (", ".join(name(s) for s in stations) or "none")
    ]
    lines += [f"  link {i}: {phy_text(phy)}" for i, phy in enumerate(links)]
    queues = (
        f"  queues: AP {_qdisc_kind(wifi.get('ap_qdisc'))} (one per station and AC), "
        f"stations {_qdisc_kind(wifi.get('station_qdisc'))} (one per AC)"
    )
    if wifi.get("retry_limit") is not None:
        queues += f"; retry limit {wifi.get('retry_limit')}"
    lines.append(queues)
    for station in stations:
        own = [link for link in station.get("links") or [] if isinstance(link, Mapping)]
        radio = [
            ("" if len(links) < 2 else f"link {link.get('link')} ")
            + f"SNR {_value(link.get('snr_db'))} dB, MCS {_value(link.get('mcs'))}"
            for link in own
        ] or ["no link"]
        scan = station.get("scan")
        if isinstance(scan, Mapping):
            radio.append(
                f"scans for {_ms(scan.get('duration'))} every {_seconds(scan.get('every'))}"
                f" (first at {_seconds(scan.get('first'))})"
            )
        lines.append(f"  {name(station)}: {'; '.join(radio)}")
    return "\n".join(lines)


def _qdisc_kind(qdisc: Any) -> str:
    return str(qdisc.get("kind") or "?") if isinstance(qdisc, Mapping) else "?"


def _host_text(host: Mapping[str, Any]) -> str:
    """E.g. ``laptop (+2 ms; access down 50 Mbit/s, up 10 Mbit/s)``."""
    extras = [f"+{_ms(host.get('access_delay'))}"] if host.get("access_delay") else []
    access = host.get("access")
    links = access if isinstance(access, Mapping) else {}
    rates = [
        (d, _rate(link.get("rate")))
        for d in ("down", "up")
        if isinstance(link := links.get(d), Mapping)
    ]
    if len(rates) == 2 and rates[0][1] == rates[1][1]:
        extras.append(f"access {rates[0][1]}")
    elif rates:
        extras.append("access " + ", ".join(f"{d} {r}" for d, r in rates))
    return f"{host.get('name')}" + (f" ({'; '.join(extras)})" if extras else "")


def _link_text(link: Mapping[str, Any]) -> str:
    parts = [_rate(link.get("rate")), _ms(link.get("delay"))]
    loss = link.get("loss") or {}
    if isinstance(loss, Mapping) and loss.get("kind") not in (None, "none"):
        details = ", ".join(f"{k} {v}" for k, v in loss.items() if k != "kind")
        parts.append(f"{loss.get('kind')} loss ({details})" if details else f"{loss['kind']}")
    qdisc = link.get("qdisc") or {}
    if isinstance(qdisc, Mapping) and qdisc.get("kind"):
        parts.append(str(qdisc["kind"]))
    return ", ".join(parts)


def _qdisc_html(scenario: Mapping[str, Any]) -> str:
    bottleneck = scenario.get("bottleneck") or {}
    directions = [(d, (bottleneck.get(d) or {}).get("qdisc") or {}) for d in ("down", "up")]
    if directions[0][1] == directions[1][1]:
        directions = [("both directions", directions[0][1])]
    wifi = scenario.get("wifi")
    if isinstance(wifi, Mapping):
        directions += [
            ("Wi-Fi AP, a queue per station and AC", wifi.get("ap_qdisc") or {}),
            ("Wi-Fi stations, a queue per AC", wifi.get("station_qdisc") or {}),
        ]
    parts = []
    for where, qdisc in directions:
        if not isinstance(qdisc, Mapping):
            continue
        kinds = _param_kinds(str(qdisc.get("kind") or ""))
        rows = [(key, _param(key, value, kinds)) for key, value in _flatten(qdisc) if key != "kind"]
        items = "".join(
            f'<div><span class="mono">{_e(k)}</span> <strong>{_e(v)}</strong></div>'
            for k, v in rows
        )
        parts.append(
            f"<h3>Queue discipline: {_e(qdisc.get('kind') or '?')} ({_e(where)})</h3>"
            + (
                f'<div class="params">{items}</div>'
                if rows
                else '<p class="note">No parameters.</p>'
            )
        )
    return "\n".join(parts)


def _scenario_flows(scenario: Mapping[str, Any]) -> TableData:
    from l4slab.tables import Column, Row

    hosts = [h for h in scenario.get("hosts") or [] if isinstance(h, Mapping)]
    bottleneck = scenario.get("bottleneck") or {}
    one_way = sum(float((bottleneck.get(d) or {}).get("delay") or 0) for d in ("down", "up"))

    def host(index: Any) -> Mapping[str, Any]:
        return hosts[index] if isinstance(index, int) and 0 <= index < len(hosts) else {}

    wifi = isinstance(scenario.get("wifi"), Mapping)

    rows = []
    for flow in scenario.get("flows") or []:
        client, server = host(flow.get("client")), host(flow.get("server"))
        sender, receiver = (server, client) if flow.get("direction") == "down" else (client, server)
        access = float(client.get("access_delay") or 0) + float(server.get("access_delay") or 0)
        app = flow.get("app") or {}
        app_text = str(app.get("kind", "?"))
        if app.get("size") is not None:
            app_text += f" {format_bytes(app.get('size'))}"
        rows.append(
            Row(
                (
                    str(flow.get("name")),
                    f"{sender.get('name', '?')} → {receiver.get('name', '?')}",
                    str(flow.get("cc", "?")),
                    app_text,
                    format_number((flow.get("start") or 0) / 1e9, digits=3),
                    format_number((one_way + 2 * access) / 1e6, digits=1),
                    format_count((flow.get("transport") or {}).get("mss")),
                    *([str(flow.get("wifi_ac") or "be")] if wifi else []),
                )
            )
        )
    columns = (
        Column("flow", numeric=False),
        Column("sender → receiver", numeric=False),
        Column("cc", numeric=False),
        Column("app", numeric=False),
        Column("start\ns"),
        Column("base RTT\nms"),
        Column("MSS\nbytes"),
        *(
            [
                Column(
                    "Wi-Fi\nAC",
                    numeric=False,
                    tip="the access category its packets use in the Wi-Fi cell (wifi_ac): "
                    "vo voice, vi video, be best effort, bk background",
                )
            ]
            if wifi
            else []
        ),
    )
    return TableData("flows", columns, tuple(rows))


#: Keys of a resolved qdisc that are not tc parameters but hold durations in ns
#: (DualPI2's step threshold written as a time resolves to `{"time": ns}`).
_DURATION_LEAVES = frozenset({"time"})


def _param_kinds(qdisc: str) -> dict[str, str]:
    """The declared kind of each of a qdisc's parameters (``duration``, ``bytes``, ...):
    asked of the native module, which declares them once."""
    try:
        from l4slab import _native

        return {
            name: p["kind"]
            for p in _native.qdisc_params(qdisc)
            for name in (p["name"], *p["aliases"])
        }
    except (ImportError, ValueError):
        return {}


def _param(key: str, value: Any, kinds: Mapping[str, str]) -> str:
    leaf = key.rsplit(".", 1)[-1]
    number = isinstance(value, int | float) and not isinstance(value, bool)
    kind = kinds.get(leaf) or kinds.get(key.split(".", 1)[0])
    if number and (kind == "duration" or leaf in _DURATION_LEAVES):
        return _ms(value)
    if number and kind == "bytes":
        return f"{format_bytes(value)}"
    return _value(value)
