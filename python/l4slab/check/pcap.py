"""Read the emulator's bottleneck captures (``pcap/bottleneck.{up,down}.{in,out}.pcap``).

The files are classic pcap, nanosecond timestamps, link type RAW, headers only
(IP + TCP with options, or IP + UDP; docs/results.md "pcap"). This module turns
one direction's ``in`` and ``out`` files into one :class:`Packets` table: every
packet as it reached the queue (time, the sender's ECN codepoint, sizes, ports,
TCP flags) and, if it left, when and with which codepoint (the queue's CE marks
and the path's rewrites). A packet is matched between the two files by its
captured bytes with the ECN bits and the IPv4 header checksum masked (the only
bytes the path changes; UDP and TCP checksums and IP IDs make the rest unique);
a packet with no match in ``out`` was dropped (queue, loss model, ``drop_ect``).
"""

from __future__ import annotations

import struct
from collections import defaultdict, deque
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = ["ECN_NAMES", "Packets", "PcapError", "read_direction", "read_records"]

#: IP-ECN codepoints by value (RFC 3168 §5).
ECN_NAMES = ("not_ect", "ect1", "ect0", "ce")
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3

_MAGIC_NS = 0xA1B23C4D
_MAGIC_US = 0xA1B2C3D4
_LINKTYPE_RAW = 101


class PcapError(Exception):
    """A capture file that is missing or not what the emulator writes."""


#: The most bytes a record of the emulator's captures takes (its header and the IP
#: and TCP headers with options, at most 60 + 60 bytes): what reading N records costs.
_RECORD_MAX = 16 + 120


def read_records(path: Path, max_records: int | None = None) -> list[tuple[float, int, bytes]]:
    """``(t_s, orig_len, captured bytes)`` of every record of a RAW pcap file, or of its
    first ``max_records`` (reading no more of the file than those can take)."""
    try:
        with path.open("rb") as f:
            data = f.read() if max_records is None else f.read(24 + max_records * _RECORD_MAX)
    except OSError as exc:
        raise PcapError(f"{path}: {exc.strerror}") from None
    if len(data) < 24:
        raise PcapError(f"{path}: not a pcap file (shorter than its header)")
    magic, _, _, _, _, _, link = struct.unpack_from("<IHHiIII", data, 0)
    if magic not in (_MAGIC_NS, _MAGIC_US):
        raise PcapError(f"{path}: not a little-endian pcap file (magic {magic:#x})")
    if link != _LINKTYPE_RAW:
        raise PcapError(f"{path}: link type {link}, expected RAW ({_LINKTYPE_RAW})")
    frac = 1e-9 if magic == _MAGIC_NS else 1e-6
    out: list[tuple[float, int, bytes]] = []
    at = 24
    while at + 16 <= len(data) and (max_records is None or len(out) < max_records):
        sec, sub, incl, orig = struct.unpack_from("<IIII", data, at)
        at += 16
        if at + incl > len(data):
            break  # a record cut by the read (or by a capture that was killed)
        out.append((sec + sub * frac, orig, data[at : at + incl]))
        at += incl
    return out


@dataclass
class Packets:
    """One direction of the bottleneck, one row per packet that reached the queue.

    ``ecn_in`` is the codepoint the sender set (the capture point is before the
    path's rewrite and the queue), ``ecn_out`` the one it left with (-1:
    dropped), ``t_out`` NaN when dropped. ``payload`` is the transport payload
    in bytes (TCP or UDP), ``ip_len`` the whole IP packet. ``sport``/``dport``
    are -1 for neither TCP nor UDP. ``flags`` is the TCP flags byte with the
    AccECN AE bit (RFC 9768: the former NS bit) as bit 8; 0 for UDP. ``src`` and
    ``dst`` are the IP addresses as text (``""`` for a packet that is not IP).
    """

    t_in: npt.NDArray[np.float64]
    t_out: npt.NDArray[np.float64]
    ecn_in: npt.NDArray[np.int8]
    ecn_out: npt.NDArray[np.int8]
    ip_len: npt.NDArray[np.int64]
    payload: npt.NDArray[np.int64]
    proto: npt.NDArray[np.int16]
    sport: npt.NDArray[np.int32]
    dport: npt.NDArray[np.int32]
    flags: npt.NDArray[np.int32]
    src: npt.NDArray[np.object_]
    dst: npt.NDArray[np.object_]

    def __len__(self) -> int:
        return len(self.t_in)

    def select(self, mask: npt.NDArray[np.bool_]) -> Packets:
        """The rows where ``mask`` holds."""
        return Packets(**{k: getattr(self, k)[mask] for k in self.__dataclass_fields__})


def _parse(rec: bytes, orig: int) -> tuple[int, int, int, int, int, int, int]:
    """``(ecn, ip_len, payload, proto, sport, dport, flags)`` of one IP packet."""
    if not rec:
        return NOT_ECT, orig, 0, -1, -1, -1, 0
    version = rec[0] >> 4
    if version == 4 and len(rec) >= 20:
        ecn = rec[1] & 3
        hl = (rec[0] & 0xF) * 4
        proto = rec[9]
        total = struct.unpack_from(">H", rec, 2)[0]
    elif version == 6 and len(rec) >= 40:
        ecn = (rec[1] >> 4) & 3
        hl, proto = 40, rec[6]
        total = 40 + struct.unpack_from(">H", rec, 4)[0]
    else:
        return NOT_ECT, orig, 0, -1, -1, -1, 0
    l4 = rec[hl:]
    if proto == 6 and len(l4) >= 14:
        sport, dport = struct.unpack_from(">HH", l4, 0)
        off = (l4[12] >> 4) * 4
        flags = l4[13] | ((l4[12] & 1) << 8)
        return ecn, total, max(0, total - hl - off), proto, sport, dport, flags
    if proto == 17 and len(l4) >= 8:
        sport, dport, ulen = struct.unpack_from(">HHH", l4, 0)
        return ecn, total, max(0, ulen - 8), proto, sport, dport, 0
    return ecn, total, max(0, total - hl), proto, -1, -1, 0


def _addresses(rec: bytes) -> tuple[str, str]:
    """The packet's source and destination address as text (``""``: not IP)."""
    if len(rec) >= 20 and rec[0] >> 4 == 4:
        return str(IPv4Address(rec[12:16])), str(IPv4Address(rec[16:20]))
    if len(rec) >= 40 and rec[0] >> 4 == 6:
        return str(IPv6Address(rec[8:24])), str(IPv6Address(rec[24:40]))
    return "", ""


def _key(rec: bytes) -> bytes:
    """The record with what the path may change masked: ECN bits, IPv4 checksum."""
    b = bytearray(rec)
    if b and b[0] >> 4 == 4 and len(b) >= 12:
        b[1] &= 0xFC
        b[10] = b[11] = 0
    elif b and b[0] >> 4 == 6 and len(b) >= 2:
        b[1] &= 0xCF
    return bytes(b)


def read_direction(pcap_dir: Path, direction: str, max_records: int | None = None) -> Packets:
    """The packets of bottleneck direction ``direction`` (``up``: client to
    server, ``down``) from ``pcap_dir/bottleneck.<direction>.{in,out}.pcap`` (the first
    ``max_records`` of each file, if given)."""
    ins = read_records(pcap_dir / f"bottleneck.{direction}.in.pcap", max_records)
    outs = read_records(pcap_dir / f"bottleneck.{direction}.out.pcap", max_records)
    # Identical records (a retransmission with the same bytes) leave in order:
    # match each key's arrivals to its departures first in, first out.
    waiting: dict[bytes, deque[tuple[float, int]]] = defaultdict(deque)
    for t, _, rec in outs:
        waiting[_key(rec)].append((t, rec[1] & 3 if rec and rec[0] >> 4 == 4 else _ecn6(rec)))
    n = len(ins)
    cols = np.zeros((n, 7), dtype=np.int64)
    t_in = np.empty(n)
    t_out = np.full(n, np.nan)
    ecn_out = np.full(n, -1, dtype=np.int8)
    # Few distinct address pairs: each is made into text once.
    pairs: dict[bytes, tuple[str, str]] = {}
    src: list[str] = []
    dst: list[str] = []
    for i, (t, orig, rec) in enumerate(ins):
        t_in[i] = t
        cols[i] = _parse(rec, orig)
        raw = rec[8:40] if rec and rec[0] >> 4 == 6 else rec[12:20]
        pair = pairs.get(raw)
        if pair is None:
            pair = pairs[raw] = _addresses(rec)
        src.append(pair[0])
        dst.append(pair[1])
        q = waiting.get(_key(rec))
        if q:
            t_out[i], ecn_out[i] = q.popleft()
    return Packets(
        t_in=t_in,
        t_out=t_out,
        ecn_in=cols[:, 0].astype(np.int8),
        ecn_out=ecn_out,
        ip_len=cols[:, 1],
        payload=cols[:, 2],
        proto=cols[:, 3].astype(np.int16),
        sport=cols[:, 4].astype(np.int32),
        dport=cols[:, 5].astype(np.int32),
        flags=cols[:, 6].astype(np.int32),
        # Object arrays of the few address strings: a pointer per packet, not a copy.
        src=np.array(src, dtype=object),
        dst=np.array(dst, dtype=object),
    )


def _ecn6(rec: bytes) -> int:
    return (rec[1] >> 4) & 3 if len(rec) >= 2 else NOT_ECT
