"""What one phase's packets show: codepoints, rates, CE marks, queue delay, bursts.

Everything here is read from the bottleneck's capture (:mod:`l4slab.check.pcap`),
the application's own packets at the queue, both directions; nothing comes
from the application's own reports. *Data* packets are those carrying more
than :data:`DATA_PAYLOAD` bytes of transport payload in the data direction
(acknowledgements and handshakes are smaller); the data direction is the one
with more payload bytes in the first phase. Packets of the ``classic-ecn``
phase's competitor (its port, :data:`~l4slab.check.phases.COMPETITOR_PORT`)
are kept apart.

A phase's window opens at the client's first packet of the application's
flows (whatever its start-up took; :func:`_client_start`) and lasts the
phase's seconds; nothing before that packet counts. Beside
what the packets show, each phase records how disturbed it was
(:attr:`PhaseMetrics.disturbance`): the emulator's own timing error (from its
report), the mean burst at the queue, and how long the client, the server and
the emulator waited for a CPU (:mod:`l4slab.check.schedstat`) over the window
after :data:`SETTLE_S`. Whether that is too much is the judge's rule.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from l4slab.check.pcap import CE, ECN_NAMES, ECT1, Packets, read_direction
from l4slab.check.phases import COMPETITOR_PORT
from l4slab.check.runner import PhaseRun

__all__ = [
    "BIN_S",
    "DATA_PAYLOAD",
    "SETTLE_S",
    "PhaseMetrics",
    "data_direction",
    "measure",
]

#: Transport payload above which a packet counts as data (bytes).
DATA_PAYLOAD = 200
#: Start-up left out of steady-state numbers (slow start, ECN validation).
SETTLE_S = 1.0
#: Time-series bin for the figures.
BIN_S = 0.1

#: TCP flags (RFC 9293 §3.1; AE: RFC 9768 §3.1, the former NS bit).
SYN, ACK, ECE, CWR, AE = 0x02, 0x10, 0x40, 0x80, 0x100


def _app(p: Packets) -> npt.NDArray[np.bool_]:
    mask: npt.NDArray[np.bool_] = (p.sport != COMPETITOR_PORT) & (p.dport != COMPETITOR_PORT)
    return mask


def data_direction(run: PhaseRun) -> str:
    """``up`` or ``down``: where the application sent more payload."""
    sums = {d: int(read_direction(run.pcap_dir, d).payload.sum()) for d in ("up", "down")}
    return "up" if sums["up"] >= sums["down"] else "down"


def _shares(ecn: npt.NDArray[np.int8]) -> dict[str, float]:
    n = len(ecn)
    return {name: (float(np.mean(ecn == i)) if n else 0.0) for i, name in enumerate(ECN_NAMES)}


def _pcts(x: npt.NDArray[np.float64]) -> dict[str, float] | None:
    if len(x) == 0:
        return None
    q = np.percentile(x, [50, 90, 99])
    return {"p50": float(q[0]), "p90": float(q[1]), "p99": float(q[2]), "samples": len(x)}


@dataclass
class PhaseMetrics:
    """One phase's measurements (all from the capture)."""

    name: str
    seconds: float
    #: The client command's exit code (124: stopped at the end of the phase).
    exit_code: int
    data_dir: str
    #: Data packets at the queue's ingress, in the window.
    data_packets: int
    #: Of those, the ones that left the queue (got past the bottleneck).
    delivered_packets: int
    #: The receiver's packets of the data's transport protocol (acknowledgements)
    #: at the queue in the other direction, in the window.
    answers: int
    #: Share of each codepoint the sender set on data, whole phase and second half.
    codepoints: dict[str, float]
    codepoints_late: dict[str, float]
    #: Data delivered past the bottleneck (transport payload), after SETTLE_S.
    goodput_mbit: float
    goodput_late_mbit: float
    #: Data packets that reached the queue in the second half and never left.
    drop_fraction_late: float
    #: Delivered ECN-capable data packets the path marked CE, after SETTLE_S.
    ce_fraction: float
    #: Queue delay of data in the L queue (ECT(1)/CE at ingress) and the rest (ms).
    qdelay_l_ms: dict[str, float] | None
    qdelay_c_ms: dict[str, float] | None
    #: Mean data packet size (IP bytes) and the window rate x RTT / size
    #: (packets) over the second half (RTT: base + mean queue delay).
    packet_bytes: float
    window_packets: float
    #: Packet-weighted mean size of bursts at the queue's ingress (packets).
    burst_mean: float
    #: The kernel Cubic competitor's goodput (classic-ecn phase), Mbit/s.
    competitor_mbit: float | None
    #: TCP: ECN setup seen on the SYN ("accecn", "classic", "none"); None for UDP.
    tcp_ecn_setup: str | None
    #: TCP: share of pure ACKs carrying ECE, and of those after a CE mark.
    tcp_ece_acks: float | None
    transport: str
    #: How disturbed the phase was (None: not measured): the emulator's timing
    #: error ``timing_error_p99_us`` / ``_max_us`` (actual - intended release),
    #: ``burst_mean``, and per role (``client``, ``server``, ``emulator``) the
    #: mean wait for a CPU per time on one ``<role>_wait_per_wakeup_ms`` and
    #: the share of its runnable time it waited ``<role>_wait_share``, and the
    #: largest share of the window one of its threads was runnable
    #: ``<role>_busiest_thread_share``.
    disturbance: dict[str, float | None]
    #: Per BIN_S bin (None: no packet in the bin).
    series: dict[str, list[float | None]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _tcp_setup(up: Packets, down: Packets) -> str | None:
    """The ECN the client's SYN asked for (RFC 3168 §6.1.1, RFC 9768 §3.1.1)."""
    syn = (up.flags & SYN).astype(bool) & ~(up.flags & ACK).astype(bool) & (up.proto == 6)
    if not syn.any():
        syn = (down.flags & SYN).astype(bool) & ~(down.flags & ACK).astype(bool)
        syn &= down.proto == 6
        if not syn.any():
            return None
        f = int(down.flags[syn][0])
    else:
        f = int(up.flags[syn][0])
    if f & (AE | CWR | ECE) == AE | CWR | ECE:
        return "accecn"
    if f & (CWR | ECE) == CWR | ECE:
        return "classic"
    return "none"


def measure(
    run: PhaseRun, data_dir: str, packets: tuple[Packets, Packets] | None = None
) -> PhaseMetrics:
    """Measure phase ``run`` with the application's data going ``data_dir``; from
    ``packets`` (the data direction's, the other's) when given, else from its capture."""
    phase = run.phase
    rev = "down" if data_dir == "up" else "up"
    if packets is None:
        packets = read_direction(run.pcap_dir, data_dir), read_direction(run.pcap_dir, rev)
    fwd_all, rev_all = packets
    fwd, back = fwd_all.select(_app(fwd_all)), rev_all.select(_app(rev_all))
    up, down = (fwd, back) if data_dir == "up" else (back, fwd)
    t0 = _client_start(up, fwd.select(fwd.payload > DATA_PAYLOAD))
    data = fwd.select((fwd.payload > DATA_PAYLOAD) & (fwd.t_in >= t0))
    comp = fwd_all.select(~_app(fwd_all) & (fwd_all.payload > DATA_PAYLOAD))
    end = t0 + run.seconds
    steady = (data.t_in >= t0 + SETTLE_S) & (data.t_in < end)
    late = (data.t_in >= t0 + run.seconds / 2) & (data.t_in < end)
    delivered = ~np.isnan(data.t_out)
    span = max(1e-9, run.seconds - SETTLE_S)
    late_span = run.seconds / 2
    good = float(data.payload[steady & delivered].sum()) * 8 / span / 1e6
    good_late = float(data.payload[late & delivered].sum()) * 8 / late_span / 1e6
    # Not counted as dropped: what was still in flight when the capture ended.
    in_time = late & (data.t_in < end - 0.2)
    drop_late = float(np.mean(~delivered[in_time])) if in_time.any() else 0.0
    ect_del = steady & delivered & (data.ecn_in != 0)
    newly_ce = (data.ecn_out == CE) & (data.ecn_in != CE)
    ce_frac = float(np.mean(newly_ce[ect_del])) if ect_del.any() else 0.0
    # Queue delay: capture out - in, less the propagation delay and this
    # packet's own serialization at the bottleneck rate (pcap module docs).
    rate_bps = phase.rate_mbit * 1e6
    one_way_s = (phase.rtt_ms / 2 if phase.delay_ms is None else phase.delay_ms) / 1e3
    qd = (data.t_out - data.t_in - one_way_s - data.ip_len * 8 / rate_bps) * 1e3
    in_l = (data.ecn_in == ECT1) | (data.ecn_in == CE)
    ok = steady & delivered
    qd_l, qd_c = _pcts(qd[ok & in_l]), _pcts(qd[ok & ~in_l])
    size = float(data.ip_len[steady].mean()) if steady.any() else 0.0
    # The window over the second half: a scalable sender starting from a
    # halved window after its first mark needs about W/2 RTTs of additive
    # increase to reach W = 2/p (50 RTTs, 1 s, at 2 %).
    ip_rate = float(data.ip_len[late & delivered].sum()) * 8 / late_span
    ok_late = late & delivered
    rtt_s = phase.rtt_ms / 1e3 + (float(np.mean(qd[ok_late])) / 1e3 if ok_late.any() else 0.0)
    window = ip_rate * rtt_s / 8 / size if size else 0.0
    burst = _burst_mean(data.t_in[steady], 0.5 * size * 8 / rate_bps if size else 0.0)
    comp_mbit = None
    if phase.competitor:
        cs = (comp.t_in >= t0 + SETTLE_S) & (comp.t_in < end) & ~np.isnan(comp.t_out)
        comp_mbit = float(comp.payload[cs].sum()) * 8 / span / 1e6
    setup = _tcp_setup(up, down)
    ece = None
    if setup is not None:
        pure = back.select((back.proto == 6) & (back.payload == 0) & (back.flags & ACK > 0))
        ece = float(np.mean((pure.flags & ECE) > 0)) if len(pure) else 0.0
    seen = data if len(data) else up
    proto = 6 if (seen.proto == 6).any() else (17 if (seen.proto == 17).any() else -1)
    transport = {6: "tcp", 17: "udp"}.get(proto, "none")
    return PhaseMetrics(
        name=phase.name,
        seconds=run.seconds,
        exit_code=run.exit_code,
        data_dir=data_dir,
        data_packets=int((data.t_in < end).sum()),
        delivered_packets=int(((data.t_in < end) & delivered).sum()),
        answers=int(((back.t_in >= t0) & (back.t_in < end) & (back.proto == proto)).sum()),
        codepoints=_shares(data.ecn_in[data.t_in < end]),
        codepoints_late=_shares(data.ecn_in[late]),
        goodput_mbit=good,
        goodput_late_mbit=good_late,
        drop_fraction_late=drop_late,
        ce_fraction=ce_frac,
        qdelay_l_ms=qd_l,
        qdelay_c_ms=qd_c,
        packet_bytes=size,
        window_packets=window,
        burst_mean=burst,
        competitor_mbit=comp_mbit,
        tcp_ecn_setup=setup,
        tcp_ece_acks=ece,
        transport=transport,
        disturbance=_disturbance(run, t0 + SETTLE_S, end, burst),
        series=_series(data, comp, t0, run.seconds, qd, newly_ce),
    )


def _client_start(up: Packets, data: Packets) -> float:
    """When the client sent its first packet of the application's flows: the
    window opens there (its start-up is its own business, and nothing is
    expected before it asks). A flow is a pair of ports that carried data; the
    kernel's own packets (IPv6 neighbour discovery, MLD) at the namespace's
    start belong to none. Without data: the client's first TCP or UDP packet."""
    mine = np.isin(_flow_key(up), _flow_key(data))
    if not mine.any():
        mine = (up.proto == 6) | (up.proto == 17)
    return float(up.t_in[mine].min()) if mine.any() else 0.0


def _flow_key(p: Packets) -> npt.NDArray[np.int64]:
    """One number per packet for its pair of ports, whichever way it goes."""
    a, b = p.sport.astype(np.int64), p.dport.astype(np.int64)
    key: npt.NDArray[np.int64] = np.minimum(a, b) * 65536 + np.maximum(a, b)
    return key


def _disturbance(run: PhaseRun, start: float, end: float, burst: float) -> dict[str, float | None]:
    """How disturbed the phase was between ``start`` and ``end`` (capture times)."""
    timing = run.report.get("forwarder", {}).get("timing_error_us") or {}
    out: dict[str, float | None] = {
        "timing_error_p99_us": timing.get("p99"),
        "timing_error_max_us": timing.get("max"),
        "burst_mean": burst,
    }
    for role in ("client", "server", "emulator"):
        w = run.cpu.wait(role, start, end) if run.cpu else None
        runnable = (w.run_ms + w.wait_ms) if w else 0.0
        out[f"{role}_wait_per_wakeup_ms"] = w.wait_per_slice_ms if w else None
        out[f"{role}_wait_share"] = w.wait_ms / runnable if w and runnable > 0 else None
        out[f"{role}_busiest_thread_share"] = w.busiest_share if w else None
    return out


def _burst_mean(t: npt.NDArray[np.float64], gap_s: float) -> float:
    """Packet-weighted mean length of runs of packets less than ``gap_s`` apart."""
    if len(t) == 0:
        return 0.0
    t = np.sort(t)
    breaks = np.flatnonzero(np.diff(t) >= gap_s)
    sizes = np.diff(np.concatenate(([0], breaks + 1, [len(t)])))
    return float((sizes.astype(float) ** 2).sum() / sizes.sum())


def _series(
    data: Packets,
    comp: Packets,
    t0: float,
    seconds: float,
    qd: npt.NDArray[np.float64],
    newly_ce: npt.NDArray[np.bool_],
) -> dict[str, list[float | None]]:
    """Per BIN_S: delivered rate (Mbit/s), CE fraction, median queue delay (ms),
    ECT(1) share at ingress, and the competitor's rate."""
    n = int(np.ceil(seconds / BIN_S))
    edges = t0 + np.arange(n + 1) * BIN_S
    delivered = ~np.isnan(data.t_out)
    bins_out = np.digitize(data.t_out[delivered], edges) - 1
    bins_in = np.digitize(data.t_in, edges) - 1

    def per_bin(idx: npt.NDArray[Any], w: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
        keep = (idx >= 0) & (idx < n)
        counts = np.bincount(idx[keep], weights=w[keep].astype(float), minlength=n)[:n]
        return counts.astype(np.float64)

    rate = per_bin(bins_out, data.payload[delivered]) * 8 / BIN_S / 1e6
    cnt_in = per_bin(bins_in, np.ones(len(data)))
    ect_in = data.ecn_in != 0
    ce = per_bin(bins_in[delivered & ect_in], newly_ce[delivered & ect_in])
    ect_cnt = per_bin(bins_in[delivered & ect_in], np.ones(int((delivered & ect_in).sum())))
    ect1 = per_bin(bins_in, (data.ecn_in == ECT1) | (data.ecn_in == CE))
    qsum = per_bin(bins_in[delivered], qd[delivered])
    qcnt = per_bin(bins_in[delivered], np.ones(int(delivered.sum())))
    cdel = ~np.isnan(comp.t_out)
    crate = per_bin(np.digitize(comp.t_out[cdel], edges) - 1, comp.payload[cdel]) * 8 / BIN_S / 1e6
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "t_s": [_r(x) for x in (np.arange(n) + 0.5) * BIN_S],
            "rate_mbit": [_r(x) for x in rate],
            "ce_fraction": [_r(x) for x in ce / ect_cnt],
            "qdelay_ms": [_r(x) for x in qsum / qcnt],
            "ect1_share": [_r(x) for x in ect1 / cnt_in],
            "competitor_mbit": [_r(x) for x in crate],
        }


def _r(x: float) -> float | None:
    """Rounded; NaN (an empty bin) or infinity is None."""
    return None if not np.isfinite(x) else round(float(x), 4)
