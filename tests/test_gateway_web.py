"""The gateway's live page (``l4slab.gateway_web``) in a real headless browser: it loads,
it draws the charts and tables from the data, and it updates while samples arrive."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.headless import chromium

from l4slab.gateway_web import KEEP, LiveView, parse_web, rows


def _sample(t: float, name_bytes: int = 0) -> dict[str, Any]:
    """A live sample at ``t`` s: 1 MB/s each way so far, one device sending ECT(1)."""
    n = int(t * 1e6)
    f = {"packets_in": n // 1000, "bytes_in": n, "packets_out": n // 1000, "bytes_out": n}
    up = {
        "packets_in": 10,
        "bytes_in": n,
        "packets_out": 10,
        "bytes_out": n,
        "ecn_in": {"not_ect": 0, "ect1": 10, "ect0": 0, "ce": 0},
        "marked_out": int(t),
    }
    down = {"packets_in": 5, "bytes_in": 100, "packets_out": 5, "bytes_out": 100,
            "ecn_in": {"not_ect": 5, "ect1": 0, "ect0": 0, "ce": 0}, "marked_out": 0}  # fmt: skip
    queue = {"sojourn_ms": 1.5, "sojourn_ms.l": 0.8, "sojourn_ms.c": 12.0, "backlog_pkts": 3,
             "drops": 0, "marks": 4}  # fmt: skip
    return {
        "t_s": t,
        "queues": {"bottleneck.up": queue},
        "forwarder": {"bottleneck.up": f, "bottleneck.down": f},
        "hosts": [{"address": "192.168.77.100", "up": up, "down": down}],
    }


def test_rows_are_per_interval_rates_and_the_history_is_bounded() -> None:
    r = rows(_sample(1.0), _sample(3.0))
    # 2 MB over 2 s each way: 8 Mbit/s.
    assert r["up"]["out_mbit"] == 8.0 and r["down"]["in_mbit"] == 8.0
    assert r["up"]["delay_l_ms"] == 0.8 and r["up"]["delay_c_ms"] == 12.0
    assert r["down"]["delay_ms"] is None
    (host,) = r["hosts"]
    assert host["up"]["out_mbit"] == 8.0 and host["up"]["ecn"]["ect1"] == 10
    view = LiveView("127.0.0.1", 0, "t")
    try:
        for i in range(KEEP + 5):
            view.add(_sample(float(i + 1)), [])
        assert len(json.loads(view.data())["samples"]) == KEEP
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(view.url + "nothing")
    finally:
        view.close()


def test_web_option_parsing() -> None:
    assert parse_web("127.0.0.1:8077") == ("127.0.0.1", 8077)
    assert parse_web("[::1]:0") == ("::1", 0)
    assert parse_web("off") is None
    for bad in ("8077", "localhost:http", "1.2.3.4:70000"):
        with pytest.raises(ValueError, match="ADDR:PORT"):
            parse_web(bad)


@pytest.mark.skipif(chromium() is None, reason="needs chromium (apt-get install -y chromium)")
def test_the_page_loads_draws_and_updates_in_headless_chromium() -> None:
    view = LiveView("127.0.0.1", 0, "LAN a <-> WAN b")
    devices = [{"mac": "aa:bb:cc:dd:ee:ff", "address": "192.168.77.100",
                "name": "<img src=x onerror=alert(1)>"}]  # fmt: skip
    stop = threading.Event()

    def feed() -> None:
        t = 1.0
        while not stop.is_set():
            view.add(_sample(t), devices)
            t += 1.0
            time.sleep(0.25)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    time.sleep(0.5)
    try:
        with tempfile.TemporaryDirectory() as profile:
            # Virtual time lets the page's 1 s polling run several times in a few seconds.
            out = subprocess.run(
                [str(chromium()), "--headless", "--no-sandbox", "--disable-gpu",
                 f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom",
                 view.url],
                capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
    finally:
        stop.set()
        feeder.join()
        view.close()
    dom = out.stdout
    status = re.search(r'id="status">t = (\d+) s · update (\d+)<', dom)
    assert status, dom[:2000] + out.stderr[-2000:]
    assert int(status.group(2)) >= 2, status.group(0)
    # Charts: a line per direction of throughput, L and C delay lines.
    assert dom.count('<polyline class="line"') >= 4
    host = re.search(r'<tr class="host">(.*?)</tr>', dom)
    assert host, dom[-3000:]
    assert "192.168.77.100" in host.group(1) and "aa:bb:cc:dd:ee:ff" in host.group(1)
    assert "ECT(1) 100 %" in host.group(1)
    # A device's own name (DHCP) is shown as text, never run as markup.
    assert "&lt;img src=x onerror=alert(1)&gt;" in host.group(1)
    assert "<img" not in host.group(1)
    assert "LAN a &lt;-&gt; WAN b" in dom


def test_the_gateway_bundle_is_one_that_report_reads(tmp_path: Path) -> None:
    """``gateway -o DIR``: the live samples as series rows, the queues' results and the
    check in summary.json, written with the results contract; l4slab report reads it."""
    from l4slab import Results
    from l4slab.cli import main
    from l4slab.gateway_bundle import SeriesRecorder, save

    recorder = SeriesRecorder()
    for t in (1.0, 2.0, 3.0):
        recorder.add(_sample(t))
    emulator = {"queues": {"bottleneck.up": {"kind": "dualpi2", "drops": 0}},
                "scenario": {"bottleneck": {}}, "forwarder": {"wall_s": 3.0}}  # fmt: skip
    gateway = {"lan": "eth1", "wan": "eth0", "duration_s": 3.0, "devices": []}
    check = [{"device": "192.168.77.100", "verdict": "L4S"}]
    where = save(tmp_path / "gw", recorder, emulator, gateway, check)
    res = Results.load(where)
    assert res.summary["backend"] == "gateway" and res.summary["check"] == check
    assert res.summary["gateway"]["samples_kept"] == 3
    assert "device/192.168.77.100" in res.series_names()
    t, v = res.series("device/192.168.77.100", "up.bytes_out")
    assert list(t) == [1.0, 2.0, 3.0] and list(v) == [1e6, 2e6, 3e6]
    t, v = res.series("queue/bottleneck.up", "sojourn_ms.l")
    assert list(v) == [0.8, 0.8, 0.8]
    assert main(["report", str(where)]) == 0
    assert (where / "report.html").is_file()
