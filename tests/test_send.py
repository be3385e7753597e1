"""``l4slab send`` and ``l4slab serve`` over loopback (real sockets, real time, no root).

Each test runs a server in a thread (``l4slab.endpoints.serve``, ``once``) and the
client through the CLI, as a person would; the runs take about two seconds.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow.parquet as pq
import pytest

from l4slab import endpoints
from l4slab.cli import main


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _free_port(family: int, host: str) -> int:
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _ipv6_loopback() -> bool:
    try:
        _free_port(socket.AF_INET6, "::1")
    except OSError:
        return False
    return True


class _Server:
    """``serve(once=True)`` in a thread; its lines and result."""

    def __init__(self, bind: str, port: int, out: Path | None = None, **options: Any) -> None:
        self.lines: list[str] = []
        self.result: dict[str, Any] = {}
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.result = endpoints.serve(
                    bind=bind,
                    port=port,
                    once=True,
                    time_limit="20",
                    out=out,
                    on_line=self.lines.append,
                    **options,
                )
            except BaseException as exc:  # reported by join()
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self) -> dict[str, Any]:
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the server did not stop"
        if self.error is not None:
            raise self.error
        return self.result


def _send(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["send", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("family", "bind", "target", "cc", "ecn", "codepoint"),
    [
        (socket.AF_INET, "127.0.0.1", "127.0.0.1:{port}", "prague", None, "ect1"),
        (socket.AF_INET6, "::1", "[::1]:{port}", "cubic", "ect0", "ect0"),
    ],
    ids=["ipv4-prague-ect1", "ipv6-cubic-ect0"],
)
def test_send_to_serve_over_loopback_writes_the_results_contract(
    native: ModuleType,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    family: int,
    bind: str,
    target: str,
    cc: str,
    ecn: str | None,
    codepoint: str,
) -> None:
    if family == socket.AF_INET6 and not _ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    port = _free_port(family, bind)
    server = _Server(bind, port, out=tmp_path / "serve")
    out = tmp_path / "send"
    argv = [target.format(port=port), "--cc", cc, "-t", "2", "-i", "0.5", "-o", str(out)]
    if ecn is not None:
        argv += ["--ecn", ecn]
    code, stdout, stderr = _send(argv, capsys)
    run = server.join()
    assert code == 0, stderr

    # Live lines: a header, one per interval, a summary.
    assert f"ECN {codepoint}" in stdout.splitlines()[0]
    intervals = [
        line for line in stdout.splitlines() if line.startswith("[send]") and " s  " in line
    ]
    assert len(intervals) >= 3, stdout
    assert "ECN capable" in intervals[-1]
    assert "rtt" in intervals[-1] and "CE" in intervals[-1] and "cwnd" in intervals[-1]

    # The results contract (docs/results.md): summary.json + series.parquet.
    summary = json.loads((out / "summary.json").read_text())
    flow = summary["flows"]["send"]
    assert summary["backend"] == "send"
    assert flow["bytes_delivered"] > 0 and flow["goodput_bps"] > 0
    assert flow["cc"] == cc and flow["ecn"] == codepoint and flow["transport"] == "quic"
    assert flow["rtt_ms"]["samples"] > 0 and flow["rtt_ms"]["p50"] > 0
    conn = flow["app_metrics"]["client"]
    assert conn["ecn"]["validation"] == "Capable"
    assert conn["ecn"][f"{codepoint}_sent"] > 0
    assert conn["retries"] == 1, "the server made the client answer a Retry"
    series = pq.read_table(out / "series.parquet").to_pydict()
    keys = set(series["key"])
    assert {"goodput_bps", "srtt_ms", "cwnd_bytes", "ce_fraction"} <= keys
    assert set(series["series"]) == {"flow/send"}
    assert (out / "run.json").is_file() and (out / ".l4slab-manifest.json").is_file()

    # The server's view of the session, also a bundle.
    assert run["server"]["sessions_accepted"] == 1
    assert run["server"]["retries_sent"] == 1
    (session,) = run["sessions"]
    s = json.loads(Path(session["path"], "summary.json").read_text())
    sflow = s["flows"]["session-1"]
    assert sflow["bytes_delivered"] >= flow["bytes_delivered"]
    assert sflow["app_metrics"]["server"]["ecn"][f"{codepoint}_received"] > 0
    assert any(line.startswith("[session-1]") for line in server.lines)


def test_send_json_is_iperf3_s_report_and_nothing_else_on_stdout(
    native: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port(socket.AF_INET, "127.0.0.1")
    server = _Server("127.0.0.1", port)
    out = tmp_path / "send"
    code, stdout, stderr = _send([f"127.0.0.1:{port}", "-t", "2", "-J", "-o", str(out)], capsys)
    server.join()
    assert code == 0, stderr
    report = json.loads(stdout)  # the whole of stdout: no report lines, no "results in"
    summary = json.loads((out / "summary.json").read_text())["flows"]["send"]
    received = report["end"]["sum_received"]
    assert received["bytes"] == summary["bytes_delivered"] > 0
    assert received["bits_per_second"] == pytest.approx(received["bytes"] * 8 / received["seconds"])
    assert report["end"]["sum_sent"]["retransmits"] >= 0
    assert report["start"]["connected"][0]["remote_port"] == port
    assert report["start"]["test_start"]["num_streams"] == 1
    assert len(report["intervals"]) == 2
    first = report["intervals"][0]["sum"]
    assert first["start"] == 0 and first["bytes"] > 0 and first["bits_per_second"] > 0
    assert f"results in {out}" in stderr


def test_frames_send_at_their_rate(
    native: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port(socket.AF_INET, "127.0.0.1")
    server = _Server("127.0.0.1", port)
    out = tmp_path / "frames"
    code, _, stderr = _send(
        [f"127.0.0.1:{port}", "--app", "frames:4Mbit@50", "-t", "2", "-o", str(out)], capsys
    )
    server.join()
    assert code == 0, stderr
    flow = json.loads((out / "summary.json").read_text())["flows"]["send"]
    assert flow["app"] == "frames"
    # 4 Mbit/s for 2 s: 1 MB (10,000 B a frame, 100 frames, give or take the last).
    assert 900_000 <= flow["bytes_delivered"] <= 1_020_000, flow["bytes_delivered"]
    assert 99 <= flow["app_metrics"]["frames_captured"] <= 102


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--app", "frames:8Mbit"], ["--app", "frames:8Mbit@60"]),
        (["--app", "stream"], ["--app", "bulk"]),
        (["--cc", "vegas"], ["--cc", "prague"]),
        (["--ecn", "on"], ["--ecn", "ect1"]),
        (["-t", "soon"], ["--duration", "10"]),
        (["-i", "0.001"], ["--interval"]),
        (["-P", "0"], ["-P", "1<=x<=128"]),
        (["-P", "1000"], ["-P", "1<=x<=128"]),
    ],
)
def test_bad_options_exit_2_naming_the_option_and_a_valid_value(
    native: ModuleType, capsys: pytest.CaptureFixture[str], args: list[str], names: list[str]
) -> None:
    code, _, stderr = _send(["127.0.0.1:9", *args], capsys)
    assert code == 2, stderr
    for name in names:
        assert name in stderr, stderr


def test_no_server_is_an_error_after_the_connect_timeout(
    native: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port(socket.AF_INET, "127.0.0.1")
    code, stdout, _ = _send([f"127.0.0.1:{port}", "--connect-timeout", "0.5"], capsys)
    assert code == 1
    assert "no answer" in stdout


def test_help_teaches_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("send", "serve"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        assert "Example" in text and "l4slab" in text


def test_send_with_no_server_fails_even_when_its_duration_ends_first(
    native: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 25: `send -t 2` to nobody exited 0 with 0 bytes and a normal-looking bundle.
    port = _free_port(socket.AF_INET, "127.0.0.1")
    out = tmp_path / "send"
    code, stdout, _ = _send([f"127.0.0.1:{port}", "-t", "1", "-o", str(out)], capsys)
    assert code == 1, stdout
    assert "error: no answer from" in stdout and "within 1.0 s" in stdout, stdout
    assert "a failed run" in stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failure"].startswith("no answer from"), summary["failure"]
    assert summary["flows"]["send"]["bytes_delivered"] == 0


_CLI = [sys.executable, "-m", "l4slab"]


def _cli_env() -> dict[str, str]:
    import l4slab

    python_dir = str(Path(l4slab.__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": python_dir}


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["sigterm", "sigint"]
)
def test_serve_stopped_by_a_signal_says_and_writes_its_counters(
    native: ModuleType, tmp_path: Path, sig: int, code: int
) -> None:
    # Issue 25: `serve` exited 130 on SIGTERM and dropped its counters.
    port = _free_port(socket.AF_INET, "127.0.0.1")
    out = tmp_path / "serve"
    proc = subprocess.Popen(
        [*_CLI, "serve", "--bind", "127.0.0.1", "--port", str(port), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_cli_env(),
        # Ctrl-C as at a terminal: a runner started in the background (`cmd &`)
        # passes SIGINT on ignored, and Python then never raises KeyboardInterrupt.
        preexec_fn=_default_sigint,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()  # the server listens: signals reach the native loop
        assert "listening on" in banner, banner + proc.stderr.read() if proc.stderr else ""
        # A stray datagram, to see it counted.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"hello", ("127.0.0.1", port))
        time.sleep(0.3)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, stdout + stderr
    assert "l4slab serve: 0 sessions" in stdout and "1 malformed" in stdout, stdout
    counters = json.loads((out / "server.json").read_text())
    assert counters["interrupted"] is True
    assert counters["server"]["datagrams"] == 1 and counters["server"]["malformed"] == 1


_VERSION = (0x4C340001).to_bytes(4, "big")


def _initial(dcid: bytes, scid: bytes, token: bytes, pn: int, size: int = 1200) -> bytes:
    """An l4slab Initial of PADDING only (RFC 9000 §17.2.2; a 16-byte zero tag stands in
    for the AEAD tag): first byte, version, the CIDs, token, Length, a 4-byte packet number."""
    head = bytes([0xC3]) + _VERSION + bytes([len(dcid)]) + dcid + bytes([len(scid)]) + scid
    head += bytes([len(token)]) + token  # a 1-byte varint: tokens are under 64 bytes
    length = size - len(head) - 2  # the packet number, the padding and the tag
    return head + (0x4000 | length).to_bytes(2, "big") + pn.to_bytes(4, "big") + bytes(length - 4)


def test_serve_ignores_stray_foreign_truncated_and_padding_only_datagrams(
    native: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25: junk, and a host that holds sessions with padding-only Initials, neither
    crash the server nor keep a real client out; every datagram is counted, the fake
    sessions are dropped at the handshake timeout and leave no bundle."""
    port = _free_port(socket.AF_INET, "127.0.0.1")
    out = tmp_path / "serve"
    server = _Server(
        "127.0.0.1", port, out=out, max_per_address=2, handshake_timeout="0.5", interval="0.2"
    )
    for _ in range(100):  # until it listens
        if server.lines:
            break
        time.sleep(0.05)
    target = ("127.0.0.1", port)
    rng = random.Random(25)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as junk:
        junk.settimeout(2)
        stray = [
            bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 1400))) for _ in range(200)
        ]
        foreign = [
            b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01",
            # A QUIC v1 Initial (another version), padded to 1200 bytes.
            b"\xc3\x00\x00\x00\x01\x08"
            + bytes(8)
            + b"\x08"
            + bytes(8)
            + b"\x00\x44\x9e"
            + bytes(1174),
            b"\x40" + bytes(30),  # a short header for no session
        ]
        full = _initial(b"\x11" * 8, b"\x22" * 8, b"", 0)
        truncated = [full[:n] for n in (1, 5, 6, 14, 15, 24, 40, 600, 1199)]
        short = _initial(b"\x11" * 8, b"\x22" * 8, b"", 0, size=600)  # §14.1: under 1200
        for d in [*stray, *foreign, *truncated, short]:
            junk.sendto(d, target)
            time.sleep(0.001)  # not faster than a busy server drains its socket
        # Padding-only Initials from one host (127.0.0.2; the client sends from 127.0.0.1):
        # each takes the Retry, then comes back with the token and never completes a
        # handshake. Four tries, a limit of two per address.
        holders = []
        for i in range(4):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.2", 0))
            s.settimeout(1)
            holders.append(s)
            scid = bytes([0x30 + i]) * 8
            retry = b""
            for _ in range(5):  # as a client would: again after a second without an answer
                s.sendto(_initial(bytes([0x40 + i]) * 8, scid, b"", 0), target)
                try:
                    retry = s.recv(2048)
                    break
                except TimeoutError:
                    continue
            assert retry[0] & 0xF0 == 0xF0, retry[:8]  # a Retry (long header, type 3)
            at = 6 + retry[5]
            new_cid = retry[at + 1 : at + 1 + retry[at]]
            token = retry[at + 1 + retry[at] : -16]
            for pn in range(3):
                s.sendto(_initial(new_cid, scid, token, pn + 1), target)
        time.sleep(0.2)
        argv = [f"127.0.0.1:{port}", "-t", "1", "-o", str(tmp_path / "send")]
        code, stdout, stderr = _send(argv, capsys)
        for s in holders:
            s.close()
    run = server.join()
    assert code == 0, stdout + stderr
    st = run["server"]
    assert st["sessions_connected"] == 1 and st["sessions_ended"] == 1, st
    assert st["sessions_accepted"] == 3, st  # two padding-only holders and the client
    # The third and fourth holders' three Initials each.
    assert st["sessions_refused_per_address"] == 6, st
    assert st["handshake_timeouts"] == 2, st
    # Every datagram that reached the server is counted; the junk as junk.
    assert st["datagrams"] == run["driver"]["datagrams_received"], (st, run["driver"])
    assert st["malformed"] >= 100 and st["unknown_connection"] >= 1, st
    assert st["initial_too_small"] == 1, st
    assert [p.name for p in out.iterdir() if p.is_dir()] == ["session-1"]
    assert any("over the limit of 2 per address" in line for line in server.lines), server.lines
    assert any("without a handshake in 0.5 s" in line for line in server.lines), server.lines


def test_interval_zero_prints_no_interval_lines_as_iperf3(
    native: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """iperf3's ``-i 0``: the header and the summary, no line per interval; the results
    still have their per-second series."""
    port = _free_port(socket.AF_INET, "127.0.0.1")
    server = _Server("127.0.0.1", port, out=None)
    out = tmp_path / "send"
    code, stdout, stderr = _send(
        [f"127.0.0.1:{port}", "-t", "2", "-i", "0", "-o", str(out)], capsys
    )
    server.join()
    assert code == 0, stderr
    assert "no interval lines" in stdout.splitlines()[0]
    intervals = [
        line for line in stdout.splitlines() if line.startswith("[send]") and " s  " in line
    ]
    assert intervals == [], stdout
    series = pq.read_table(out / "series.parquet").to_pydict()
    assert "goodput_bps" in set(series["key"])


# ------------------------------------------------ iperf3's -R and -P (issue 30)


def test_reverse_the_server_sends_with_the_clients_controller_and_json_says_reverse(
    native: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port(socket.AF_INET, "127.0.0.1")
    server = _Server("127.0.0.1", port, out=tmp_path / "serve")
    out = tmp_path / "send"
    argv = [f"127.0.0.1:{port}", "-R", "--cc", "prague", "-t", "2", "-J", "-o", str(out)]
    code, stdout, stderr = _send(argv, capsys)
    run = server.join()
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["start"]["test_start"]["reverse"] == 1
    received = report["end"]["sum_received"]
    assert received["bytes"] > 0 and received["bits_per_second"] > 0
    assert received["sender"] is False, "iperf3 -R: this end is not the sender"
    # The client measured what arrived here: its flow is a download.
    flow = json.loads((out / "summary.json").read_text())["flows"]["send"]
    assert flow["direction"] == "down" and flow["reverse"] is True
    assert flow["bytes_delivered"] == received["bytes"]
    assert flow["app_metrics"]["bytes_received"] == received["bytes"]
    # The server sent, with the client's controller and its ECN (ECT(1)).
    assert run["server"]["reverse_sessions"] == 1
    assert any("(reverse: sending, cc prague" in line for line in server.lines), server.lines
    (session,) = run["sessions"]
    sflow = json.loads(Path(session["path"], "summary.json").read_text())["flows"]["session-1"]
    assert sflow["cc"] == "prague" and sflow["direction"] == "down"
    assert sflow["bytes_delivered"] > 0, "the server's own count: acknowledged by the client"
    assert sflow["app_metrics"]["client"]["ecn"]["ect1_sent"] > 0
    assert sflow["bytes_delivered"] <= received["bytes"]


def test_parallel_three_connections_each_a_flow_with_sum_lines_that_add_up(
    native: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from l4slab.iperf3_json import iperf3_report
    from l4slab.results import Results

    port = _free_port(socket.AF_INET, "127.0.0.1")
    server = _Server("127.0.0.1", port)
    out = tmp_path / "send"
    code, stdout, stderr = _send(
        [f"127.0.0.1:{port}", "-P", "3", "-t", "2", "-o", str(out)], capsys
    )
    run = server.join()
    assert code == 0, stderr
    lines = stdout.splitlines()
    assert "3 connections" in lines[0]
    # Each interval: a line per connection, then [SUM] with their bytes (to rounding).
    sums = [
        i
        for i, line in enumerate(lines)
        if line.startswith("[SUM]") and not line.endswith("acknowledged")
    ]
    assert len(sums) >= 2, stdout
    totals = [line for line in lines if line.startswith("[SUM]") and line.endswith("acknowledged")]
    assert len(totals) == 1, stdout

    def megabytes(line: str) -> float:
        value, unit = line.split(" s  ")[1].split()[:2]
        return float(value) * {"GB": 1e3, "MB": 1.0, "kB": 1e-3, "B": 1e-6}[unit]

    for i in sums:
        streams = lines[i - 3 : i]
        assert [line.split()[0] for line in streams] == ["[send-1]", "[send-2]", "[send-3]"]
        assert megabytes(lines[i]) == pytest.approx(sum(map(megabytes, streams)), abs=0.02)
    # The bundle: each connection a flow; -J's streams and sums from it.
    results = Results.load(out)
    assert sorted(results.flows()) == ["send-1", "send-2", "send-3"]
    assert results.scenario["parallel"] == 3
    report = iperf3_report(results, {"failure": None})
    assert report["start"]["test_start"]["num_streams"] == 3
    streams = report["end"]["streams"]
    assert [s["receiver"]["socket"] for s in streams] == [1, 2, 3]
    total = sum(s["receiver"]["bytes"] for s in streams)
    assert all(s["receiver"]["bytes"] > 0 for s in streams)
    assert report["end"]["sum_received"]["bytes"] == total
    assert report["end"]["sum_sent"]["bytes"] == total
    assert report["end"]["sum_received"]["bits_per_second"] > 0
    for interval in report["intervals"]:
        assert len(interval["streams"]) == 3
        assert interval["sum"]["bytes"] == sum(s["bytes"] for s in interval["streams"])
    # The server served the three from one address (its default admits -P 128).
    assert run["server"]["sessions_connected"] == 3
    assert run["server"]["sessions_refused_per_address"] == 0


def test_parallel_is_bounded_as_iperf3_s_in_the_native_check_too(native: ModuleType) -> None:
    for n in (0, 129):
        with pytest.raises(endpoints.EndpointInputError, match=r"-P/--parallel: .* 1 to 128"):
            endpoints.send("127.0.0.1:9", parallel=n, duration="1")
