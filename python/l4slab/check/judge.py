"""The verdicts of ``l4slab check-l4s``: each requirement of RFC 9331 §4 (the
"Prague L4S requirements") and RFC 9000 §13.4.2 that the packets at the
bottleneck can show, judged from :class:`~l4slab.check.measure.PhaseMetrics`.

Verdicts: ``PASS``; ``FAIL`` (a MUST not met: exit code non-zero); ``WARN`` (a
SHOULD, or advice, not met); ``NOT OBSERVABLE`` (the packets cannot show it,
said why); ``NOT APPLICABLE`` (e.g. validation of ECT(1) for a sender that
never sends ECT(1)); ``INCONCLUSIVE`` (a phase it reads cannot be judged: it
was disturbed, or the client failed or delivered nothing; said why and what to
do). Every threshold is set from the requirement's own terms, stated beside it
and in docs/check-l4s.md; none was fitted to a run.

Each check is first judged from the numbers alone, then :func:`_usable`
applies the rules every check shares (:func:`phase_problems`): a check that
reads a disturbed phase is INCONCLUSIVE whatever the numbers said; one that
reads a phase where the client failed or delivered nothing is never PASS.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from l4slab.check.measure import PhaseMetrics
from l4slab.check.phases import BASE_RTT_MS, LONG_RTT_MS, MARK_LEVELS, STEP_THRESH_MS
from l4slab.check.runner import stopped_by_the_check

__all__ = [
    "CLASSIC_SLOPE",
    "CPU_WAIT_LIMIT_MS",
    "INCONCLUSIVE",
    "MIN_DELIVERED_PACKETS",
    "SCALABLE_SLOPE",
    "SLOPE_THRESHOLD",
    "TIMING_ERROR_LIMIT_US",
    "Check",
    "Verdict",
    "client_failed",
    "disturbances",
    "inconclusive_musts",
    "judge",
    "overall",
    "phase_problems",
]

PASS, FAIL, WARN, INCONCLUSIVE = "PASS", "FAIL", "WARN", "INCONCLUSIVE"
_NOT_RUN = "phase not run (the sender sent no ECN-capable data, or --only left it out)"
NOT_OBSERVABLE, NOT_APPLICABLE = "NOT OBSERVABLE", "NOT APPLICABLE"
Verdict = str

#: RFC 9331 §4.3 / RFC 8257: a scalable window W = 2/p (log-log slope -1);
#: a classic (Reno-friendly) one W = 1.22/sqrt(p) (slope -1/2, RFC 3649's
#: response function as in RFC 9331 §4.3's "Reno-friendly").
SCALABLE_SLOPE, CLASSIC_SLOPE = -1.0, -0.5
#: Halfway between the two laws: a slope closer to -1 than to -1/2 is scalable.
SLOPE_THRESHOLD = (SCALABLE_SLOPE + CLASSIC_SLOPE) / 2
#: ECT(1) on "data": at least this share (the rest: validation testing, the
#: Not-ECT packets RFC 9000 §13.4.2 allows while the state is "unknown").
ECT1_SHARE = 0.9
#: After validation has failed, essentially no ECT(1) (a re-test is a handful
#: of packets, RFC 9000 §13.4.2: "could mark only the first ten").
ECT1_AFTER_FAIL = 0.01
#: Reno-friendly on loss: a sender that backs off on loss at 20 Mbit/s, 20 ms
#: sees about (1.22/W)^2 = 0.1 % loss (W = 35 packets); 5 %, 35x more, is a
#: sender that does not back off.
LOSS_LIMIT = 0.05
#: Coexistence at a classic-ECN AQM: within a factor 2 of the Reno-friendly
#: flow (the tolerance of RTT and start-up differences in short phases).
SHARE_FACTOR = 2.0

# What makes a phase unusable (phase_problems). The principle: a verdict must
# be about the application, so every part of the measurement chain must keep
# the finest time any check judges at, DualPI2's 1 ms L-queue step (the L4S
# AQM's signal, to which the prompt and pacing checks hold the sender).
#: The emulator's release of packets: p99 of actual - intended time (us). Later
#: than the step, the emulated path is not the path the phase describes.
TIMING_ERROR_LIMIT_US = STEP_THRESH_MS * 1e3
#: An endpoint's (client, server) mean wait for a CPU each time it became
#: runnable (ms). Longer than the step, its pacing and its response to a mark
#: show the machine's scheduler, not its algorithm.
CPU_WAIT_LIMIT_MS = STEP_THRESH_MS
#: Data got through when more than an initial window of it (10 packets, RFC
#: 6928 / RFC 9002 §7.2) left the bottleneck and the receiver answered: a
#: handshake with its retransmissions is fewer packets (QUIC Initials are
#: padded to 1200 bytes, RFC 9000 §14.1, so they look like data here).
MIN_DELIVERED_PACKETS = 10
#: What to do about a disturbed phase.
_ADVICE_DISTURBED = (
    "run the check on a quieter machine (fewer busy processes), or with a longer "
    "--seconds so the disturbance weighs less"
)


@dataclass
class Check:
    """One requirement's verdict with its evidence."""

    id: str
    title: str
    rfc: str
    level: str
    verdict: Verdict
    evidence: str
    meaning: str
    phases: tuple[str, ...]
    numbers: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _fmt_cp(shares: dict[str, float]) -> str:
    return ", ".join(f"{k} {v * 100:.1f} %" for k, v in shares.items() if v > 0) or "no data"


def _l4s_sender(m: PhaseMetrics) -> bool:
    return m.codepoints.get("ect1", 0.0) + m.codepoints.get("ce", 0.0) >= ECT1_SHARE


def check_ect1(m: PhaseMetrics) -> Check:
    """RFC 9331 §4.1: an L4S sender sets ECT(1) on its packets."""
    cp = m.codepoints
    share = cp["ect1"] + cp["ce"]
    # RFC 9331 §4.1: "a data sender ... MUST set ... ECT(1)" to be L4S.
    if m.data_packets == 0:
        verdict, what = FAIL, "no data packets reached the bottleneck"
    elif share >= ECT1_SHARE:
        verdict, what = PASS, "data carries the L4S identifier"
    elif cp["ect0"] > cp["not_ect"]:
        verdict, what = FAIL, "classic ECN (ECT(0)): not L4S"
    else:
        verdict, what = FAIL, "no ECN (Not-ECT): not L4S"
    return Check(
        "ect1",
        "ECT(1) on data",
        "RFC 9331 §4.1",
        "MUST",
        verdict,
        f"{what}; codepoints the sender set on {m.data_packets} data packets: {_fmt_cp(cp)}",
        "ECT(1) is the L4S identifier: only with it does a DualQ AQM put the packets in "
        "its short L queue and mark them immediately (RFC 9331 §4.1, §5).",
        (m.name,),
        {"ect1_share": share, **{f"share_{k}": v for k, v in cp.items()}},
    )


def check_feedback(m: PhaseMetrics) -> Check:
    """RFC 9331 §4.2: feedback of every CE mark (AccECN for TCP, ACK_ECN for QUIC)."""
    rfc, title = "RFC 9331 §4.2", "Accurate ECN feedback"
    meaning = (
        "A scalable controller responds to the fraction of marked packets, so the receiver "
        "must feed back every CE mark, not one signal per round trip (RFC 3168's ECE)."
    )
    if m.transport == "tcp":
        if m.tcp_ecn_setup == "accecn":
            # RFC 9768 §3.1: AE, CWR and ECE all set on the SYN.
            verdict = NOT_OBSERVABLE
            ev = (
                "AccECN negotiated (SYN with AE, CWR, ECE); reading the ACE counter against "
                "the marks is not implemented in this checker"
            )
        elif m.tcp_ecn_setup == "classic":
            # RFC 3168 §6.1.1: ECE+CWR on the SYN is classic ECN, one ECE per RTT.
            verdict = FAIL
            ev = (
                f"classic RFC 3168 ECN negotiated (SYN with ECE, CWR, no AE); "
                f"{m.tcp_ece_acks or 0:.0%} of pure ACKs carry ECE, a latched flag that "
                "cannot say how many packets were marked"
            )
        else:
            verdict, ev = FAIL, "no ECN negotiated on the SYN"
    elif m.transport == "udp":
        verdict = NOT_OBSERVABLE
        ev = (
            "UDP: the feedback is inside the payload (QUIC ACK_ECN frames, RFC 9000 "
            "§19.3.2), which real QUIC encrypts (RFC 9001 §5) and the capture does not "
            "keep; the scalable-response check shows whether the sender acts on it"
        )
    else:
        verdict, ev = NOT_OBSERVABLE, "no data"
    return Check(
        "feedback", title, rfc, "MUST", verdict, ev, meaning, (m.name,), {"tcp": m.tcp_ecn_setup}
    )


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``log y = a + b log x``: ``(b, exp(a))``."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((x - mx) ** 2 for x in lx)
    b = sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / sxx
    return b, math.exp(my - b * mx)


def check_scalable(marks: list[PhaseMetrics], l4s: bool) -> Check:
    """RFC 9331 §4.3: a scalable congestion control (W proportional to 1/p)."""
    title, rfc = "Scalable response to CE (window against marking fraction)", "RFC 9331 §4.3"
    meaning = (
        "A scalable controller keeps about two marks per round trip at any rate: its "
        "window is W = 2/p packets (DCTCP, RFC 8257), a log-log slope of -1 against the "
        "marking fraction p. A classic one (Reno, Cubic) gives W = 1.22/sqrt(p), slope "
        "-1/2, and would starve beside L4S traffic in a DualQ's L queue."
    )
    names = tuple(m.name for m in marks)
    pts = [(m.ce_fraction, m.window_packets) for m in marks if m.ce_fraction > 0]
    pts = [(p, w) for p, w in pts if w > 0]
    numbers: dict[str, Any] = {
        "points": [
            {"phase": m.name, "p": m.ce_fraction, "window_packets": m.window_packets} for m in marks
        ]
    }
    if not marks:
        return Check("scalable", title, rfc, "MUST", NOT_APPLICABLE, _NOT_RUN, meaning, (), {})
    if all(m.codepoints["not_ect"] > 0.5 for m in marks):
        return Check(
            "scalable", title, rfc, "MUST", NOT_APPLICABLE,
            "the sender sends no ECN-capable data, so the marker could only drop",
            meaning, names, numbers,
        )  # fmt: skip
    if len(pts) < 2:
        return Check(
            "scalable", title, rfc, "MUST", NOT_OBSERVABLE,
            "fewer than two marking levels with delivered, marked data", meaning, names, numbers,
        )  # fmt: skip
    slope, c = _fit([p for p, _ in pts], [w for _, w in pts])
    numbers.update({"slope": slope, "constant": c, "threshold": SLOPE_THRESHOLD})
    # RFC 9331 §4.3: scalable = W ~ 1/p; we call a slope closer to -1 than to
    # -1/2 (at or below the midpoint, -0.75) scalable.
    scalable = slope <= SLOPE_THRESHOLD
    table = "; ".join(f"p {p * 100:.1f} %: W {w:.1f} (2/p = {2 / p:.0f})" for p, w in pts)
    ev = (
        f"fitted W = {c:.2f} x p^{slope:.2f} ({table}); scalable -1, classic -0.5, "
        f"threshold {SLOPE_THRESHOLD}"
    )
    verdict = PASS if scalable else FAIL
    if not scalable and not l4s:
        ev += " (a classic response: right for ECT(0), wrong for an L4S sender)"
    return Check("scalable", title, rfc, "MUST", verdict, ev, meaning, names, numbers)


def check_prompt(runs: list[PhaseMetrics]) -> Check:
    """RFC 9331 §4.4: respond within about a round trip (no extra smoothing)."""
    title = "Prompt response to CE (L queue stays short)"
    meaning = (
        "The L4S AQM marks on the instantaneous queue with no smoothing (RFC 9331 §5.2), "
        "expecting the sender to respond within about a round trip; a sender that smooths "
        "the signal over several round trips lets the L queue grow past the 1 ms step."
    )
    names = tuple(m.name for m in runs)
    bits, numbers, verdict = [], {}, PASS
    observed = False
    for m in runs:
        rtt = LONG_RTT_MS if m.name == "rtt" else BASE_RTT_MS
        q = m.qdelay_l_ms
        if q is None or q["samples"] < 100:
            bits.append(f"{m.name}: no L-queue packets")
            continue
        if m.ce_fraction == 0:
            # Never marked: the sender did not fill the link, nothing to respond to.
            bits.append(f"{m.name} ({rtt:g} ms RTT): no CE marks (link not filled), not exercised")
            continue
        observed = True
        # A sender that reacts within one RTT of the first mark overshoots the
        # step by what it adds in that RTT; a quarter RTT bounds that for any
        # additive increase and flags a response spread over several RTTs.
        bound = STEP_THRESH_MS + rtt / 4
        numbers[m.name] = {"p99_ms": q["p99"], "bound_ms": bound}
        bits.append(
            f"{m.name} ({rtt:g} ms RTT): L-queue delay p99 {q['p99']:.2f} ms (<= {bound:g})"
        )
        if q["p99"] > bound:
            verdict = FAIL
    if not observed:
        verdict = NOT_APPLICABLE
    return Check(
        "prompt", title, "RFC 9331 §4.4", "MUST", verdict, "; ".join(bits), meaning, names, numbers
    )


def check_validation(m: PhaseMetrics | None, what: str, l4s: bool) -> Check:
    """RFC 9000 §13.4.2 (and RFC 9331 §4.2): stop ECT(1) when the path fails validation."""
    cid = f"validation-{what}"
    title = {
        "bleach": "No ECT(1) after the path bleached ECN",
        "remark": "No ECT(1) after the path re-marked ECT(1) to ECT(0)",
    }[what]
    meaning = (
        "A path that clears or re-marks the ECN field makes CE feedback meaningless (no "
        'marks arrive, or ECT(1) lands in a classic queue). RFC 9000 §13.4.2: "If '
        'validation fails, then the endpoint MUST disable ECN"; TCP learns the same from '
        "AccECN's counters (RFC 9768)."
    )
    if m is None:
        return Check(cid, title, "RFC 9000 §13.4.2", "MUST", NOT_APPLICABLE,
                     _NOT_RUN, meaning, (), {})  # fmt: skip
    late = m.codepoints_late["ect1"] + m.codepoints_late["ce"]
    nums = {"ect1_share_second_half": late}
    if not l4s:
        verdict, ev = NOT_APPLICABLE, "the sender does not send ECT(1)"
    elif m.data_packets == 0:
        # Nothing to see the codepoints of: unknown, not a failure of this MUST.
        verdict, ev = INCONCLUSIVE, "no data packets reached the bottleneck: nothing to judge"
    else:
        # §13.4.2: after validation fails, no ECT at all.
        verdict = PASS if late <= ECT1_AFTER_FAIL else FAIL
        ev = f"second half of the phase: {_fmt_cp(m.codepoints_late)} of the data the sender set"
    return Check(cid, title, "RFC 9000 §13.4.2", "MUST", verdict, ev, meaning, (m.name,), nums)


def check_blackhole(m: PhaseMetrics | None) -> Check:
    """RFC 9000 §13.4.2: all ECT packets lost -> the endpoint "can" disable ECN."""
    title = "Keeps working through an ECN black hole"
    meaning = (
        "A path that drops ECT packets stalls an application that keeps marking. RFC 9000 "
        '§13.4.2: "If all packets marked with non-zero ECN codepoints are subsequently '
        'lost, it can disable marking" (a permission, so a SHOULD here, not a MUST); the '
        "data then gets through as Not-ECT. "
    )
    if m is not None and m.transport == "tcp":
        # RFC 3168 §6.1.1: "A host MUST NOT set ECT on SYN or SYN-ACK packets."
        meaning += (
            "TCP sends its SYN Not-ECT (RFC 3168 §6.1.1), so the connection opens; the data "
            "must then stop being sent ECT."
        )
    else:
        meaning += (
            "Marking the QUIC Initial packets too (and leaving the testing state only after "
            "ten marked packets) can make the connection itself fail."
        )
    if m is None:
        return Check("blackhole", title, "RFC 9000 §13.4.2", "SHOULD", NOT_APPLICABLE,
                     _NOT_RUN, meaning, (), {})  # fmt: skip
    ect = 1.0 - m.codepoints_late["not_ect"] if m.data_packets else 1.0
    nums = {"ect_share_second_half": ect, "goodput_second_half_mbit": m.goodput_late_mbit}
    if m.data_packets and m.codepoints["not_ect"] >= 1.0:
        verdict, ev = NOT_APPLICABLE, "the sender sends no ECT"
    else:
        # Fallen back: Not-ECT data (ECT1_AFTER_FAIL tolerance) and data delivered
        # (the shared rules, _usable, turn a PASS without delivery into WARN).
        ok = ect <= ECT1_AFTER_FAIL and m.goodput_late_mbit > 0
        verdict = PASS if ok else WARN
        ev = (
            f"second half: {ect:.1%} of the packets the sender sent still ECT (dropped by "
            f"the path), {m.goodput_late_mbit:.2f} Mbit/s delivered"
        )
    return Check("blackhole", title, "RFC 9000 §13.4.2", "SHOULD", verdict, ev, meaning,
                 (m.name,), nums)  # fmt: skip


def check_loss(m: PhaseMetrics | None) -> Check:
    """RFC 9331 §4.3: fall back to a Reno-friendly response on loss."""
    title = "Reno-friendly response to loss"
    meaning = (
        "Where ECN does not get through, congestion shows only as loss; an L4S sender MUST "
        "then respond as classic TCP does (RFC 9331 §4.3), or it overruns the queue."
    )
    if m is None:
        return Check("loss", title, "RFC 9331 §4.3", "MUST", NOT_APPLICABLE,
                     _NOT_RUN, meaning, (), {})  # fmt: skip
    nums = {"drop_fraction_second_half": m.drop_fraction_late}
    # See LOSS_LIMIT: 35x the loss a backing-off sender sees on this path.
    verdict = PASS if m.drop_fraction_late <= LOSS_LIMIT else FAIL
    ev = (
        f"bleached path (every packet Not-ECT, DualPI2's classic queue drops): "
        f"{m.drop_fraction_late:.2%} of data dropped in the second half (limit "
        f"{LOSS_LIMIT:.0%}), {m.goodput_late_mbit:.2f} Mbit/s delivered"
    )
    return Check("loss", title, "RFC 9331 §4.3", "MUST", verdict, ev, meaning, (m.name,), nums)


def check_classic_ecn(m: PhaseMetrics | None, l4s: bool) -> Check:
    """RFC 9331 §4.3: SHOULD detect a classic-ECN bottleneck and fall back."""
    title = "Coexists with classic ECN in a single-queue classic AQM"
    meaning = (
        "A classic RFC 3168 AQM marks L4S and classic packets alike; a scalable sender takes "
        "far more than its share there unless it detects the classic bottleneck and falls "
        "back to a Reno-friendly response (RFC 9331 §4.3, a SHOULD; Linux Prague's "
        "prague_ecn_fallback is off by default)."
    )
    if m is None or m.competitor_mbit is None:
        return Check("classic-ecn", title, "RFC 9331 §4.3", "SHOULD", NOT_APPLICABLE,
                     _NOT_RUN, meaning, (), {})  # fmt: skip
    app, comp = m.goodput_mbit, m.competitor_mbit
    nums: dict[str, Any] = {"app_mbit": app, "competitor_mbit": comp}
    if comp <= 0 and app <= 0:
        verdict, ev = NOT_OBSERVABLE, "neither flow delivered data"
    elif comp <= 0:
        # No ratio (JSON has no infinity): the competitor got nothing at all.
        nums["ratio"] = None
        nums["ratio_null_reason"] = "the kernel Cubic flow delivered nothing"
        verdict = WARN
        ev = (
            f"application {app:.2f} Mbit/s beside kernel Cubic with classic ECN, which "
            f"delivered nothing: the application took the whole queue"
        )
    else:
        ratio = app / comp
        nums["ratio"] = ratio
        verdict = PASS if ratio <= SHARE_FACTOR else WARN
        ev = (
            f"application {app:.2f} Mbit/s beside kernel Cubic with classic ECN "
            f"{comp:.2f} Mbit/s: ratio {ratio:.2f} (within {SHARE_FACTOR:g}x passes)"
        )
        if not l4s:
            ev += "; the sender is not L4S, so there is nothing to fall back from"
    return Check("classic-ecn", title, "RFC 9331 §4.3", "SHOULD", verdict, ev, meaning,
                 (m.name,), nums)  # fmt: skip


def check_pacing(m: PhaseMetrics) -> Check:
    """Pacing: bursts at the bottleneck no larger than Linux's TSO quantum."""
    title = "Paced (small bursts at the bottleneck)"
    meaning = (
        "A 1 ms L queue absorbs little: a burst of N packets adds N-1 serialization times "
        "of delay for everyone in it. L4S senders pace (the Prague draft; Linux Prague "
        "keeps bursts near 250 us). Advice, not an RFC 9331 §4 MUST."
    )
    # Linux's own TSO sizing (tcp_tso_autosize): about 1 ms at the sending rate,
    # at least 2 segments; a run counts as a burst when its packets arrive
    # closer than half a serialization time at the bottleneck rate.
    rate_bps = m.goodput_mbit * 1e6
    quantum = max(2.0, rate_bps * 1e-3 / 8 / m.packet_bytes) if m.packet_bytes else 2.0
    verdict = PASS if m.burst_mean <= quantum else WARN
    ev = (
        f"packet-weighted mean burst {m.burst_mean:.2f} packets at {m.goodput_mbit:.1f} "
        f"Mbit/s (at most {quantum:.1f}: 1 ms at that rate, at least 2)"
    )
    return Check("pacing", title, "draft-briscoe-iccrg-prague-congestion-control", "ADVICE",
                 verdict, ev, meaning, (m.name,),
                 {"burst_mean": m.burst_mean, "bound": quantum})  # fmt: skip


def check_rtt_independence() -> Check:
    return Check(
        "rtt-independence",
        "Reduced RTT dependence",
        "RFC 9331 §4.3",
        "SHOULD",
        NOT_OBSERVABLE,
        "needs flows of different RTTs sharing a bottleneck for many round trips (Linux "
        "Prague starts its RTT-independence 500 rounds after slow start); the rtt phase "
        "checks the response at a 4x longer RTT instead (prompt)",
        "A short-RTT L4S flow would otherwise take most of a shared L queue.",
        ("rtt",),
        {},
    )


def client_failed(m: PhaseMetrics) -> bool:
    """The client exited non-zero on its own (not stopped at the phase's limit)."""
    return m.exit_code != 0 and not stopped_by_the_check(m.exit_code)


def _handshake(m: PhaseMetrics) -> str:
    """The handshake packet in the words of the protocol seen."""
    return "SYN" if m.transport == "tcp" else "Initial"


def _pct(x: float | None) -> str:
    return "unknown" if x is None else f"{x:.0%}"


def disturbances(m: PhaseMetrics) -> list[str]:
    """Why phase ``m`` was too disturbed to judge (empty: it was not)."""
    d = m.disturbance
    out = []
    p99 = d.get("timing_error_p99_us")
    if p99 is not None and p99 > TIMING_ERROR_LIMIT_US:
        out.append(
            f"the emulator released packets late (timing error p99 {p99 / 1e3:.1f} ms, "
            f"limit {TIMING_ERROR_LIMIT_US / 1e3:g} ms: the path was not the one described)"
        )
    for role in ("client", "server"):
        wait = d.get(f"{role}_wait_per_wakeup_ms")
        if wait is not None and wait > CPU_WAIT_LIMIT_MS:
            out.append(
                f"the {role} waited {wait:.1f} ms for a CPU per wake-up on average (limit "
                f"{CPU_WAIT_LIMIT_MS:g} ms; {_pct(d.get(f'{role}_wait_share'))} of its "
                "runnable time): its timing shows the machine, not its algorithm"
            )
    return out


def phase_problems(m: PhaseMetrics) -> tuple[str, list[str]] | None:
    """What makes phase ``m`` unusable: ``("disturbed", reasons)``,
    ``("failed", reasons)`` (the client failed or delivered nothing), or None."""
    d = disturbances(m)
    if d:
        return "disturbed", d
    why = []
    if client_failed(m):
        why.append(f"the client failed (exit code {m.exit_code})")
    if m.delivered_packets < MIN_DELIVERED_PACKETS or m.answers == 0:
        what = (
            f"{m.delivered_packets} data packets got past the bottleneck"
            if m.answers
            else "the receiver never answered"
        )
        why.append(
            f"nothing was delivered ({what}; fewer than {MIN_DELIVERED_PACKETS} or no answer is "
            f"at most a handshake ({_handshake(m)}) and its retransmissions, not data)"
        )
    return ("failed", why) if why else None


def _usable(check: Check, metrics: dict[str, PhaseMetrics]) -> Check:
    """The rules every check shares (module docs): INCONCLUSIVE for a disturbed
    phase; never PASS when the client failed or delivered nothing."""
    if check.verdict in (NOT_APPLICABLE, NOT_OBSERVABLE, INCONCLUSIVE):
        return check
    used = [metrics[p] for p in check.phases if p in metrics]
    problems = [(m.name, phase_problems(m)) for m in used]
    disturbed = [(n, p[1]) for n, p in problems if p and p[0] == "disturbed"]
    if disturbed:
        why = "; ".join(f"phase {n} was disturbed: {', '.join(r)}" for n, r in disturbed)
        return replace(
            check,
            verdict=INCONCLUSIVE,
            evidence=f"{why}; {_ADVICE_DISTURBED} (the numbers, not judged: {check.evidence})",
        )
    failed = [(n, p[1]) for n, p in problems if p and p[0] == "failed"]
    if not failed or check.verdict != PASS:
        return check
    why = "; ".join(f"phase {n}: {', '.join(r)}" for n, r in failed)
    if check.id == "blackhole":
        # The requirement is that the application keeps working: it did not.
        return replace(check, verdict=WARN, evidence=f"{why}; {check.evidence}")
    return replace(
        check,
        verdict=INCONCLUSIVE,
        evidence=f"{why}, so there is nothing to judge (the numbers: {check.evidence})",
    )


def judge(metrics: dict[str, PhaseMetrics]) -> list[Check]:
    """Every check from the phases that ran (``metrics`` by phase name)."""
    checks = _judge_numbers(metrics)
    first = phase_problems(metrics["l4s"])
    if first is not None:
        # The other phases are not run when the first cannot be judged: what
        # needs them is not "not applicable", it is unknown.
        why = "; ".join(first[1])
        if first[0] == "disturbed":
            reason = f"not run: phase l4s was disturbed ({why}); {_ADVICE_DISTURBED}"
        else:
            reason = f"not run: phase l4s could not be judged ({why})"
        checks = [
            replace(c, verdict=INCONCLUSIVE, evidence=reason) if c.evidence == _NOT_RUN else c
            for c in checks
        ]
    return [_usable(c, metrics) for c in checks]


def _judge_numbers(metrics: dict[str, PhaseMetrics]) -> list[Check]:
    first = metrics["l4s"]
    l4s = _l4s_sender(first)
    marks = [metrics[n] for n in (f"mark-{p * 100:g}%" for p in MARK_LEVELS) if n in metrics]
    prompt = [metrics[n] for n in ("l4s", "rtt") if n in metrics]
    return [
        check_ect1(first),
        check_feedback(first),
        check_scalable(marks, l4s),
        check_prompt(prompt),
        check_validation(metrics.get("bleach"), "bleach", l4s),
        check_validation(metrics.get("remark"), "remark", l4s),
        check_blackhole(metrics.get("blackhole")),
        check_loss(metrics.get("bleach")),
        check_classic_ecn(metrics.get("classic-ecn"), l4s),
        check_pacing(first),
        check_rtt_independence(),
    ]


def inconclusive_musts(checks: list[Check]) -> list[str]:
    """The MUST checks that could not be judged (they keep the exit code off 0)."""
    return [c.id for c in checks if c.verdict == INCONCLUSIVE and c.level == "MUST"]


def overall(checks: list[Check], metrics: dict[str, PhaseMetrics]) -> str:
    """One line: L4S or not, and whether every MUST that could be seen held."""
    l4s = _l4s_sender(metrics["l4s"])
    fails = [c.id for c in checks if c.verdict == FAIL]
    unsure = inconclusive_musts(checks)
    if not l4s and "ect1" in fails:
        return "not L4S: the data does not carry ECT(1)" + (
            f" (also FAIL: {', '.join(f for f in fails if f != 'ect1')})" if len(fails) > 1 else ""
        )
    if fails:
        return f"L4S sender with failures: {', '.join(fails)}" + (
            f" (INCONCLUSIVE: {', '.join(unsure)})" if unsure else ""
        )
    if unsure:
        return f"not judged: INCONCLUSIVE {', '.join(unsure)} (see each check's evidence)"
    return "L4S: every observable requirement met"
