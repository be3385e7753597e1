"""``l4slab gateway -o DIR``: a gateway run as the results bundle ``l4slab run`` writes.

While the gateway runs, :class:`SeriesRecorder` keeps each of the emulator's live samples
(once a second: every queue's series, the forwarder's counters, the per-device counters)
as rows of ``series.parquet`` (``t_s``, ``series``, ``key``, ``value``; docs/results.md):
``queue/bottleneck.up`` etc. with the queue's own keys (as ``l4slab emu`` and the
simulator name them), ``forwarder/bottleneck.up`` with the packets and bytes in and out
so far, and ``device/ADDRESS`` with ``up.bytes_out``, ``down.ecn_in.ect1`` and so on.
The rows are packed (24 bytes each), and at most :data:`MAX_SAMPLES` samples are kept
(a day at one a second; later ones are counted, not kept), so a gateway left running
cannot fill the memory. When it stops, :func:`save` writes ``summary.json`` (the
queues' results in the simulator's layout, the scenario the emulator ran, the gateway's
devices and the passive check, if any) and the series with :class:`l4slab.Results`, so
``l4slab report`` and ``compare`` read it.
"""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import Any

__all__ = ["MAX_SAMPLES", "SeriesRecorder", "save"]

#: Live samples kept for the bundle: a day at one a second.
MAX_SAMPLES = 86_400


class SeriesRecorder:
    """The live samples of one gateway run, as packed series rows."""

    def __init__(self) -> None:
        self.t = array("d")
        self.value = array("d")
        self.series = array("i")
        self.key = array("i")
        self.names: dict[str, int] = {}
        self.samples = 0
        self.dropped = 0

    def _row(self, t: float, series: str, key: str, value: Any) -> None:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return
        self.t.append(t)
        self.series.append(self.names.setdefault(series, len(self.names)))
        self.key.append(self.names.setdefault(key, len(self.names)))
        self.value.append(float(value))

    def add(self, sample: dict[str, Any]) -> None:
        """One live sample of the emulator (``Shell.live``)."""
        if self.samples >= MAX_SAMPLES:
            self.dropped += 1
            return
        self.samples += 1
        t = float(sample["t_s"])
        for queue, values in sample.get("queues", {}).items():
            for key, value in values.items():
                self._row(t, f"queue/{queue}", key, value)
        for queue, values in sample.get("forwarder", {}).items():
            for key, value in values.items():
                self._row(t, f"forwarder/{queue}", key, value)
        for host in sample.get("hosts", []):
            series = f"device/{host['address']}"
            for direction in ("up", "down"):
                d = host[direction]
                for key in ("packets_in", "bytes_in", "packets_out", "bytes_out", "marked_out"):
                    self._row(t, series, f"{direction}.{key}", d[key])
                for codepoint, count in d["ecn_in"].items():
                    self._row(t, series, f"{direction}.ecn_in.{codepoint}", count)

    def columns(self) -> dict[str, list[Any]]:
        """The rows as the four columns of series.parquet."""
        names = list(self.names)
        return {
            "t_s": list(self.t),
            "series": [names[i] for i in self.series],
            "key": [names[i] for i in self.key],
            "value": list(self.value),
        }


def save(
    out: Path,
    recorder: SeriesRecorder,
    emulator: dict[str, Any],
    gateway: dict[str, Any],
    check: list[dict[str, Any]] | None,
) -> Path:
    """Write the bundle at ``out`` (``FileExistsError`` if it holds files l4slab did not
    write); its path."""
    from l4slab import __version__
    from l4slab.results import Results, series_table

    duration = float(gateway["duration_s"])
    summary: dict[str, Any] = {
        "backend": "gateway",
        "duration_s": duration,
        "events": 0,
        "flows": {},
        "format_version": 1,
        "packets": {},
        "queues": emulator.get("queues", {}),
        "random_draws": 0,
        "scenario": emulator.get("scenario", {}),
        "seed": None,
        "tool_version": __version__,
        "window_s": [0.0, duration],
        "gateway": {**gateway, "samples_kept": recorder.samples,
                    "samples_dropped": recorder.dropped},
        "emulator": {k: emulator[k] for k in ("forwarder", "capture") if k in emulator},
    }  # fmt: skip
    if check is not None:
        summary["check"] = check
    results = Results(json.dumps(summary, sort_keys=True), series_table(recorder.columns()))
    return results.save(out)
