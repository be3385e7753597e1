"""Prague through DualPI2: what sets the shares (issue 28; docs/models/prague.md,
"RTT dependence without RTT independence: what adds the bias", and
"Against Reno at 100 ms: the coupling's window ratio").

The bands are around the model's measurements (seed 1), wide enough for a
change of seed, narrow enough that the mechanism they pin cannot change
unnoticed: with the L queue's step, two Prague flows at 5 and 25 ms RTT do
not get equal windows; without it (the coupled, random marks only) they do,
which is what a window-based AIMD with per-RTT growth predicts for one
marking probability. Against Reno at 100 ms Prague sees about 3.5 marks per
RTT and Reno's window is about half of Prague's, not RFC 9332's 1.22.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import l4slab
from l4slab.api import run_text

MSS = 1448

NEAR_FAR = """
format = 1
duration = "30s"
warmup = "10s"
[bottleneck]
rate = "40Mbit"
delay = "1ms"
buffer = "250ms"
qdisc = "dualpi2"
[hosts.near]
side = "client"
access_delay = "1.5ms"
[hosts.far]
side = "client"
access_delay = "11.5ms"
[[flows]]
name = "near"
client = "near"
cc = { kind = "prague", rtt_scaling = "none" }
[[flows]]
name = "far"
client = "far"
cc = { kind = "prague", rtt_scaling = "none" }
"""

RENO_PRAGUE = """
format = 1
duration = "80s"
warmup = "20s"
[bottleneck]
rate = "40Mbit"
delay = "50ms"
buffer = "250ms"
qdisc = "dualpi2"
[[flows]]
name = "prague"
cc = "prague"
[[flows]]
name = "reno"
cc = "reno"
"""


def window_segments(flow: dict[str, Any]) -> float:
    """Mean window over the summary's window: goodput x mean RTT, in segments."""
    return float(flow["goodput_bps"]) * float(flow["rtt_ms"]["mean"]) / 1e3 / 8 / MSS


def run(text: str, *overrides: str) -> dict[str, Any]:
    summary: dict[str, Any] = run_text(text, "<string>", overrides=overrides).summary
    return summary


@pytest.mark.usefixtures("native")
@pytest.mark.parametrize(
    ("step", "band"),
    [
        # Linux's 1 ms step: the near flow's window is 2.8x the far one's
        # (measured 2.79), rate ratio 13 against an RTT ratio of 4.7.
        ("1ms", (2.2, 3.4)),
        # Step out of reach: only the coupled (random) marks, equal windows
        # (measured 1.04), so the rate ratio is the RTT ratio.
        ("1s", (0.85, 1.2)),
    ],
)
def test_near_far_windows_are_equal_only_without_the_step(
    step: str, band: tuple[float, float]
) -> None:
    s = run(NEAR_FAR, f'bottleneck.qdisc={{kind="dualpi2",step_thresh="{step}"}}')
    near, far = s["flows"]["near"], s["flows"]["far"]
    ratio = window_segments(near) / window_segments(far)
    assert band[0] <= ratio <= band[1], ratio
    marks = s["queues"]["bottleneck.down"]["marks"]
    if step == "1s":
        assert marks["step"] == 0 and marks["coupled"] > 1000, marks
    else:
        assert marks["step"] > 50 * marks["coupled"], marks


@pytest.mark.usefixtures("native")
def test_reno_against_prague_at_100ms_window_ratio_and_marks_per_rtt() -> None:
    s = run(RENO_PRAGUE)
    prague, reno = s["flows"]["prague"], s["flows"]["reno"]
    w_prague, w_reno = window_segments(prague), window_segments(reno)
    # RFC 9332's design value is 1.22; the model gives 0.43 here (0.45-0.51
    # over seeds 1-3 in 120 s): PI2's p' swings with Reno's 5 s sawtooth
    # (cv 1.3-1.5), so Reno meets E[p'^2] = 3 mean(p')^2 and Prague needs
    # 3.4-3.7 marks per RTT (3.66 here).
    assert 0.38 <= w_reno / w_prague <= 0.62, (w_reno, w_prague)
    q = s["queues"]["bottleneck.down"]["marks"]
    assert q["step"] < q["coupled"] / 10, q
    window_s = 60.0
    rtt_s = float(prague["rtt_ms"]["mean"]) / 1e3
    marks_per_rtt = (q["coupled"] + q["step"]) / (window_s / rtt_s)
    assert 2.8 <= marks_per_rtt <= 4.3, marks_per_rtt


def test_ten_cubic_flows_in_a_fifo_split_and_lose_as_the_kernel_does() -> None:
    """Issue 28, fairness: ten Cubic flows, a 1000-packet FIFO, 100 Mbit/s, 20 ms, 30 s.
    The kernel through the emulator (docs/models/transport.md, "Checked against
    Linux"): Jain index 0.976 and 0.931 in two runs, 160-161 losses, slow start left by
    HyStart's delay test at 0.2 s. The model with Linux's HyStart (the default) leaves
    it there too: Jain 0.995, 122 drops; with HyStart++ it overshoots (0.957, 417)."""
    path = Path(__file__).resolve().parent.parent / "scenarios/emu/cubic10-fifo-fairness.toml"

    def jain_and_drops(overrides: list[str]) -> tuple[float, int]:
        r = l4slab.run(path, overrides=overrides)
        g = [f["goodput_bps"] for f in r.summary["flows"].values()]
        jain = sum(g) ** 2 / (len(g) * sum(x * x for x in g))
        return jain, r.summary["queues"]["bottleneck.down"]["drops"]["total"]

    jain, drops = jain_and_drops([])
    assert jain >= 0.975 and 60 <= drops <= 240, (jain, drops)
    pp_jain, pp_drops = jain_and_drops(
        ['flows[0].cc={ kind = "cubic", hystart_kind = "hystart++" }']
    )
    assert pp_drops > 2 * drops and pp_jain < jain, (pp_jain, pp_drops)
