"""``l4slab gateway``'s live view: a local web page of what passes the bottleneck.

A small HTTP server (the standard library's, in a thread of the gateway's
process) on ``--web ADDR:PORT`` (default ``127.0.0.1:8077``, localhost only;
port 0: any free one) serves one self-contained page (no script or style from
the network: the gateway may be the machine's only way out) and its data,
``/data.json``, which the page reads every second. The data are the
emulator's live samples (``Shell.live``: once a second, each queue's series
and the forwarder's counters, with per-device counters,
``crates/l4slab-emu/src/hosts.rs``), turned into per-interval figures here:
per direction the rate out of the bottleneck and into it, the queue's delay
(DualPI2's L and C apart), drops and CE marks; per device and direction its
rate, the ECN codepoints its packets carried and the marks they got. The last
:data:`KEEP` samples are kept (ten minutes), so memory does not grow with
the run.
"""

from __future__ import annotations

import html
import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["KEEP", "LiveView", "parse_web", "rows"]

#: Samples kept for the page's charts (one a second).
KEEP = 600
_DIRS = (("up", "bottleneck.up"), ("down", "bottleneck.down"))
_CODEPOINTS = ("not_ect", "ect1", "ect0", "ce")


def parse_web(text: str) -> tuple[str, int] | None:
    """``--web``'s ``ADDR:PORT`` (``None``: ``off``). Raises ``ValueError``."""
    if text == "off":
        return None
    addr, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--web {text}: write ADDR:PORT (e.g. 127.0.0.1:8077) or off")
    return addr.strip("[]") or "127.0.0.1", int(port)


def _mbit(nbytes: float, seconds: float) -> float:
    return round(nbytes * 8 / seconds / 1e6, 3) if seconds > 0 else 0.0


def rows(prev: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
    """The page's figures for the interval between two live samples (``prev`` ``None``:
    since the start)."""
    seconds = now["t_s"] - (prev["t_s"] if prev else 0.0)
    out: dict[str, Any] = {"t_s": now["t_s"]}
    for name, queue in _DIRS:
        f, q = now["forwarder"][queue], now["queues"].get(queue, {})
        p = prev["forwarder"][queue] if prev else {"bytes_in": 0, "bytes_out": 0}
        out[name] = {
            "out_mbit": _mbit(f["bytes_out"] - p["bytes_out"], seconds),
            "in_mbit": _mbit(f["bytes_in"] - p["bytes_in"], seconds),
            "delay_ms": q.get("sojourn_ms"),
            "delay_l_ms": q.get("sojourn_ms.l"),
            "delay_c_ms": q.get("sojourn_ms.c"),
            "backlog_pkts": q.get("backlog_pkts"),
            "drops": q.get("drops", 0),
            "marks": q.get("marks", 0),
        }
    before = {h["address"]: h for h in (prev or {}).get("hosts", [])}
    hosts = []
    for h in now.get("hosts", []):
        b = before.get(h["address"])
        row: dict[str, Any] = {"address": h["address"]}
        for name, _ in _DIRS:
            d, e = h[name], (b[name] if b else None)
            row[name] = {
                "out_mbit": _mbit(d["bytes_out"] - (e["bytes_out"] if e else 0), seconds),
                "packets": d["packets_in"],
                "ecn": {k: d["ecn_in"][k] for k in _CODEPOINTS},
                "marked": d["marked_out"],
            }
        hosts.append(row)
    out["hosts"] = hosts
    return out


class LiveView:
    """The page's server and the samples it shows (:meth:`add` each interval)."""

    def __init__(self, addr: str, port: int, title: str) -> None:
        self.title = title
        self.lock = threading.Lock()
        self.samples: deque[dict[str, Any]] = deque(maxlen=KEEP)
        self.devices: list[dict[str, str]] = []
        self.prev: dict[str, Any] | None = None
        view = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/data.json":
                    body, kind = view.data().encode(), "application/json"
                elif self.path in ("/", "/index.html"):
                    body, kind = view.page().encode(), "text/html; charset=utf-8"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return  # the gateway's terminal has its own lines

        self.server = ThreadingHTTPServer((addr, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def add(self, sample: dict[str, Any], devices: list[dict[str, str]]) -> None:
        """One live sample of the emulator, and the devices seen now."""
        with self.lock:
            self.samples.append(rows(self.prev, sample))
            self.prev = sample
            self.devices = devices

    def data(self) -> str:
        with self.lock:
            return json.dumps(
                {"title": self.title, "samples": list(self.samples), "devices": self.devices}
            )

    def page(self) -> str:
        text = (Path(__file__).parent / "templates" / "gateway.html").read_text(encoding="utf-8")
        return text.replace("$TITLE", html.escape(self.title))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
