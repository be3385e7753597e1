"""``l4slab send`` and ``l4slab serve`` over loopback (real sockets, real time, no root).

Each test runs a server in a thread (``l4slab.endpoints.serve``, ``once``) and the
client through the CLI, as a person would; the runs take about two seconds.
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow.parquet as pq
import pytest

from l4slab import endpoints
from l4slab.cli import main


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

    def __init__(self, bind: str, port: int, out: Path | None = None) -> None:
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
        (["-i", "0"], ["--interval"]),
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
