"""Shared fixtures.

Tests that run the simulator take the ``native`` fixture: it skips them when the
compiled module ``l4slab._native`` is not built, and fails them instead when
``L4SLAB_REQUIRE_NATIVE=1`` (test.sh and CI set it), so CI never passes by skipping.
Everything else runs on hand-made data shaped like the native module's output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_SCENARIO = REPO / "scenarios" / "examples" / "reno-20mbit.toml"
GOLDEN_SCENARIO = REPO / "scenarios" / "golden" / "fifo-reno.toml"

NativeResultFactory = Callable[..., dict[str, Any]]


@pytest.fixture(scope="session")
def native() -> ModuleType:
    """``l4slab._native``; skips the test when it is not built (fails if it must be)."""
    try:
        from l4slab import _native
    except ImportError as exc:
        if os.environ.get("L4SLAB_REQUIRE_NATIVE") == "1":
            pytest.fail(f"L4SLAB_REQUIRE_NATIVE=1 but l4slab._native does not import: {exc}")
        pytest.skip(f"l4slab._native is not built ({exc}); run ./test.sh or pip install -e .")
    return _native


@pytest.fixture(scope="session")
def example_scenario() -> Path:
    """The default scenario (what ./run.sh runs)."""
    assert EXAMPLE_SCENARIO.is_file(), f"missing {EXAMPLE_SCENARIO}"
    return EXAMPLE_SCENARIO


@pytest.fixture(scope="session")
def golden_scenario() -> Path:
    """The golden FIFO + Reno scenario used for the determinism test."""
    assert GOLDEN_SCENARIO.is_file(), f"missing {GOLDEN_SCENARIO}"
    return GOLDEN_SCENARIO


@pytest.fixture
def make_native_result() -> NativeResultFactory:
    """A factory of dicts shaped like what ``l4slab._native.run`` returns."""
    return native_result


def native_result(
    *,
    seed: int = 1,
    samples: int = 50,
    packets: bool = False,
    name: str = "unit",
) -> dict[str, Any]:
    """A small, deterministic result: one flow and one queue, ``samples`` samples each."""
    summary = {
        "format_version": 1,
        "tool_version": "0.1.0",
        "backend": "sim",
        "seed": seed,
        "duration_s": samples * 0.1,
        "scenario": {"name": name, "duration": int(samples * 0.1 * 1e9), "seed": seed},
        "flows": {
            "download": {
                "cc": "reno",
                "goodput_bps": 18_912_345.0,
                "bytes_delivered": 11_820_000,
                "completion_s": None,
                "rtt_ms": {
                    "min": 50.1,
                    "mean": 71.3,
                    "p50": 70.2,
                    "p90": 88.0,
                    "p99": 95.5,
                    "p999": 96.0,
                    "max": 97.2,
                },
                "retransmits": 42,
                "lost_packets": 40,
                "ce_marks_received": 0,
                "ecn": "off",
            }
        },
        "queues": {
            "bottleneck.down": {
                "kind": "fifo",
                "sojourn_ms": {
                    "min": 0.0,
                    "mean": 20.0,
                    "p50": 19.5,
                    "p90": 40.0,
                    "p99": 45.25,
                    "p999": 46.0,
                    "max": 47.0,
                },
                "drops": {"overlimit": 40, "head_drop": 0, "link_loss": 0, "total": 40},
                "marks": {"total": 0},
                "utilization": 0.9731,
            }
        },
    }
    t: list[float] = []
    series: list[str] = []
    key: list[str] = []
    value: list[float] = []
    for i in range(samples):
        ts = round((i + 1) * 0.1, 6)
        for s, k, v in (
            ("flow/download", "goodput_bps", 1e6 * (i % 20) + seed),
            ("flow/download", "cwnd_bytes", 14480.0 + 1448 * i),
            ("queue/bottleneck.down", "sojourn_ms", 0.5 * i),
        ):
            t.append(ts)
            series.append(s)
            key.append(k)
            value.append(float(v))
    trace = None
    if packets:
        trace = {
            "t_s": [0.001 * i for i in range(samples)],
            "event": ["send" if i % 2 == 0 else "deliver" for i in range(samples)],
            "flow": [0] * samples,
            "seq": list(range(samples)),
            "retransmission": [False] * samples,
        }
    return {
        "summary_json": json.dumps(summary, sort_keys=True, indent=2),
        "series": {"t_s": t, "series": series, "key": key, "value": value},
        "packets": trace,
        "stats": {"wall_s": 0.25, "events": 12345, "packets": 6789, "sim_s": samples * 0.1},
    }


# --------------------------------------------------------------------------- small real runs

#: Short real runs for the plot, report and compare tests: (scenario, overrides). Each takes
#: milliseconds to simulate.
SMALL_RUNS: dict[str, tuple[Path, list[str]]] = {
    "dualpi2": (
        REPO / "scenarios" / "golden" / "dualpi2-reno.toml",
        ["duration=3s", "packet_trace=true"],
    ),
    "fifo": (
        REPO / "scenarios" / "golden" / "fifo-reno.toml",
        ["duration=3s", "packet_trace=true"],
    ),
    # No packet trace: the plots fall back to the series, the report has no time-sequence graph.
    "codel": (REPO / "scenarios" / "golden" / "codel-reno.toml", ["duration=3s"]),
    # A 1 MB file under 1 % random loss: finishes in about 1.2 s, with drops, SACKs and
    # retransmissions in the trace.
    "file": (
        REPO / "scenarios" / "examples" / "file-under-loss.toml",
        ["duration=3s", "packet_trace=true", "flows[0].app.size=1MB"],
    ),
    # A web page: a 10 MB object that does not finish in 4 s on the page's connection and a
    # 20 KB one asked for at 3 s on a connection of its own (flow page.obj1).
    "web": (REPO / "scenarios" / "examples" / "web-small-behind-large.toml", ["duration=4s"]),
}


@pytest.fixture(scope="session")
def small_runs(native: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Results bundles of SMALL_RUNS, by key, written once per test session.

    Tests that write a report into a bundle copy it first (see ``bundle_copy``).
    """
    from l4slab import api

    root = tmp_path_factory.mktemp("small-runs")
    paths = {}
    for key, (scenario, overrides) in SMALL_RUNS.items():
        paths[key] = root / key
        api.run(scenario, out=paths[key], overrides=overrides, command=["test"])
    return paths


@pytest.fixture
def bundle_copy(small_runs: dict[str, Path], tmp_path: Path) -> Callable[[str], Path]:
    """``bundle_copy("fifo")``: a private copy of a small run's bundle, to write into."""
    import shutil

    def copy(key: str) -> Path:
        target = tmp_path / key
        shutil.copytree(small_runs[key], target)
        return target

    return copy


def emulator_or_skip() -> None:
    """Skip the calling test unless it can run the emulator: root (network namespaces,
    TUN devices) and an emulator in the native module (or ``$L4SLAB_EMU_BIN``)."""
    from l4slab import emu

    if not emu.is_root():
        pytest.skip("needs root to create network namespaces and TUN devices")
    try:
        emu.emulator_command()
    except emu.EmuError as exc:
        pytest.skip(str(exc))
