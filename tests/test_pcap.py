"""pcap export (``pcap = true``, docs/results.md): the capture files a run writes are
read back by tshark, which must find real IPv4 + TCP headers with the fields l4slab
models: the ECN field per flow (ECT(1) for Prague, CE after the L queue marks, Not-ECT
for Cubic), the TCP flags of the AccECN handshake, SACK blocks, timestamps, payload
lengths and the AccECN option, and nothing malformed. A host's access link has capture
files of its own, and the packet trace its queue rows. The header bytes themselves are
checked in Rust (crates/l4slab-sim/src/capture/headers.rs), the access link's records
against the trace in crates/l4slab-sim/tests/pcap.rs.

tshark is a Debian package that ./test.sh installs; without it these tests skip.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

import l4slab
from l4slab.output import read_manifest

pytestmark = pytest.mark.skipif(
    shutil.which("tshark") is None,
    reason="tshark is not installed (./test.sh installs it as root: apt-get install tshark)",
)

#: Prague (L4S, AccECN) and Cubic (Not-ECT) through DualPI2; the short buffer makes
#: Cubic lose packets in slow start, so its receiver sends SACK blocks.
SCENARIO = """
format = 1
name = "pcap-dualq"
duration = "2s"
pcap = true
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "30pkt"
qdisc = "dualpi2"
[[flows]]
name = "prague"
cc = "prague"
[[flows]]
name = "cubic"
cc = "cubic"
"""

#: The simulator's ports: server 5000 + flow, client 32768 + flow.
PRAGUE, CUBIC = 5000, 5001
FILES = [f"bottleneck.{d}.{p}.pcap" for d in ("down", "up") for p in ("in", "out")]

#: The same two flows to a laptop behind its own 10 Mbit/s access link (DualPI2 both
#: ways) on a 100 Mbit/s FIFO: the queue, the marks and the drops are the access link's.
ACCESS_SCENARIO = """
format = 1
name = "pcap-access"
duration = "2s"
pcap = true
packet_trace = true
[bottleneck]
rate = "100Mbit"
delay = "10ms"
buffer = "100pkt"
[hosts.laptop]
side = "client"
access_delay = "2ms"
access = { rate = "10Mbit", buffer = "30pkt", qdisc = "dualpi2" }
[[flows]]
name = "prague"
cc = "prague"
client = "laptop"
[[flows]]
name = "cubic"
cc = "cubic"
client = "laptop"
"""
ACCESS_FILES = [f"access.laptop.{d}.{p}.pcap" for d in ("down", "up") for p in ("in", "out")]


def tshark(path: Path, *fields: str, display: str = "") -> list[list[str]]:
    """One row of ``fields`` per packet (matching ``display``), as tshark prints them."""
    args = ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "separator=|"]
    if display:
        args += ["-Y", display]
    for field in fields:
        args += ["-e", field]
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=120).stdout
    return [line.split("|") for line in out.splitlines()]


@pytest.fixture(scope="module")
def bundle(native: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pcap")
    scenario = tmp / "pcap.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    l4slab.run(scenario, out=tmp / "run")
    return tmp / "run"


def test_the_run_writes_four_files_listed_in_its_manifest(bundle: Path) -> None:
    assert sorted(p.name for p in (bundle / "pcap").iterdir()) == sorted(FILES)
    manifest = read_manifest(bundle)
    assert manifest is not None
    assert {f"pcap/{name}" for name in FILES} <= set(manifest.files)


def test_tshark_finds_nothing_malformed(bundle: Path) -> None:
    for name in FILES:
        path = bundle / "pcap" / name
        assert (
            tshark(path, "frame.number", display="_ws.malformed or _ws.expert.severity == error")
            == []
        )
        assert len(tshark(path, "frame.number")) > 100, name


def test_ecn_field_per_flow_ect1_ce_and_not_ect(bundle: Path) -> None:
    rows = tshark(
        bundle / "pcap" / "bottleneck.down.out.pcap",
        "tcp.srcport",
        "ip.dsfield.ecn",
        display="tcp.len > 0",
    )
    seen = Counter((int(port), int(ecn)) for port, ecn in rows)
    # Prague's data is ECT(1), some of it CE-marked by the L queue; Cubic's is Not-ECT.
    assert seen[(PRAGUE, 1)] > 0 and seen[(PRAGUE, 3)] > 0, seen
    assert seen[(CUBIC, 0)] > 0, seen
    assert {ecn for port, ecn in seen if port == CUBIC} == {0}, seen
    # At the ingress nothing is marked yet.
    ingress = tshark(bundle / "pcap" / "bottleneck.down.in.pcap", "ip.dsfield.ecn")
    assert "3" not in {ecn for (ecn,) in ingress}


def test_handshake_flags_and_the_accecn_option(bundle: Path) -> None:
    up = bundle / "pcap" / "bottleneck.up.in.pcap"
    down = bundle / "pcap" / "bottleneck.down.in.pcap"
    # The AccECN SYN sets AE, CWR and ECE (RFC 9768 §3.1.1); Cubic's SYN none of them.
    syns = tshark(up, "tcp.dstport", "tcp.flags", display="tcp.flags.syn == 1")
    assert sorted(syns) == [[str(PRAGUE), "0x01c2"], [str(CUBIC), "0x0002"]]
    syn_acks = tshark(
        down, "tcp.srcport", "tcp.flags.syn", "tcp.flags.ack", display="tcp.flags.syn == 1"
    )
    assert sorted(port for port, *_ in syn_acks) == [str(PRAGUE), str(CUBIC)]
    # Prague's receiver (the client) feeds back the AccECN option (order 1, kind 174) on its ACKs,
    # with CE bytes counted once the L queue marks.
    option = tshark(
        up,
        "tcp.options.acc_ecn.ee1b",
        "tcp.options.acc_ecn.eceb",
        display=f"tcp.dstport == {PRAGUE} and tcp.options.acc_ecn",
    )
    assert option, "no AccECN option"
    assert max(int(ceb) for _, ceb in option if ceb) > 0, option[-3:]


def test_sack_blocks_timestamps_and_lengths(bundle: Path) -> None:
    up = bundle / "pcap" / "bottleneck.up.in.pcap"
    sacks = tshark(
        up,
        "tcp.options.sack_le",
        "tcp.options.sack_re",
        display=f"tcp.dstport == {CUBIC} and tcp.options.sack_le",
    )
    assert sacks, "Cubic's receiver sends SACK blocks after its losses"
    for left, right in sacks:
        lefts = [int(v) for v in left.split(",")]
        rights = [int(v) for v in right.split(",")]
        assert all(r > le for le, r in zip(lefts, rights, strict=True))
    down = bundle / "pcap" / "bottleneck.down.out.pcap"
    data = tshark(
        down,
        "tcp.len",
        "tcp.options.timestamp.tsval",
        "frame.cap_len",
        "ip.len",
        display="tcp.len > 0",
    )
    lengths = Counter(int(length) for length, *_ in data)
    assert lengths.most_common(1)[0][0] == 1448, "full segments: MSS 1448"
    for _, tsval, caplen, iplen in data:
        assert tsval != ""
        # Headers only are kept (52 bytes: IP 20, TCP 20, timestamps 12); the IP
        # length is the packet's.
        assert int(caplen) == 52 and int(iplen) >= 52
    # TSval is the sender's clock in ms: it never goes back.
    tsvals = [
        int(tsval)
        for _, tsval, *_ in tshark(
            down, "tcp.len", "tcp.options.timestamp.tsval", display=f"tcp.srcport == {PRAGUE}"
        )
    ]
    assert tsvals == sorted(tsvals) and tsvals[-1] <= 2000


@pytest.fixture(scope="module")
def access_bundle(native: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pcap-access")
    scenario = tmp / "access.toml"
    scenario.write_text(ACCESS_SCENARIO, encoding="utf-8")
    l4slab.run(scenario, out=tmp / "run")
    return tmp / "run"


def test_an_access_link_has_capture_files_and_queue_rows_of_its_own(access_bundle: Path) -> None:
    assert sorted(p.name for p in (access_bundle / "pcap").iterdir()) == sorted(
        FILES + ACCESS_FILES
    )
    manifest = read_manifest(access_bundle)
    assert manifest is not None
    assert {f"pcap/{name}" for name in ACCESS_FILES} <= set(manifest.files)
    pcap = access_bundle / "pcap"
    for name in ACCESS_FILES:
        assert tshark(pcap / name, "frame.number", display="_ws.malformed") == [], name
    # The laptop's access link marks Prague's data: CE leaves it, none arrives (the
    # shared FIFO marks nothing).
    ecn = {
        point: Counter(
            (int(port), int(e))
            for port, e in tshark(
                pcap / f"access.laptop.down.{point}.pcap",
                "tcp.srcport",
                "ip.dsfield.ecn",
                display="tcp.len > 0",
            )
        )
        for point in ("in", "out")
    }
    assert ecn["in"][(PRAGUE, 3)] == 0 and ecn["out"][(PRAGUE, 3)] > 0, ecn
    # The laptop's ACKs go up through its access link into the bottleneck: the same
    # packets leave the one as enter the other.
    left = tshark(pcap / "access.laptop.up.out.pcap", "frame.time_epoch", "tcp.ack")
    entered = tshark(pcap / "bottleneck.up.in.pcap", "frame.time_epoch", "tcp.ack")
    assert left == entered and len(left) > 100
    # The packet trace shows each packet at the access link under its name: admitted
    # and dequeued there, or dropped on arrival; one `in` record each.
    table = l4slab.load(access_bundle).packets
    assert table is not None
    rows = Counter(
        zip(table.column("queue").to_pylist(), table.column("event").to_pylist(), strict=True)
    )
    for queue in ("access.laptop.down", "access.laptop.up"):
        assert rows[(queue, "enqueue")] > 500 and rows[(queue, "dequeue")] > 500, rows
    queues = table.column("queue").to_pylist()
    ids = table.column("pkt_id").to_pylist()
    arrived = {i for q, i in zip(queues, ids, strict=True) if q == "access.laptop.down"}
    assert len(tshark(pcap / "access.laptop.down.in.pcap", "frame.number")) == len(arrived)
