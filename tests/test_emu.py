"""``l4slab emu``: option mapping, refusal without root, and (as root) real runs
through network namespaces with the emulator compiled into the native module.

Root-only tests skip with the reason when not root, or when this build has no
emulator (not Linux); CI runs as root.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from l4slab import emu, emu_cli, emu_plan, shipped
from l4slab.cli import main


def test_link_options_become_bottleneck_overrides() -> None:
    sets = emu.link_sets(
        rate="20Mbit",
        up_rate="5Mbit",
        delay="10ms",
        buffer="50ms",
        qdisc="dualpi2",
        qdisc_params=["step_thresh=1ms"],
        loss="1%",
        sets=["bottleneck.down.delay=20ms"],
    )
    assert sets == [
        "bottleneck.rate=20Mbit",
        "bottleneck.up.rate=5Mbit",
        "bottleneck.delay=10ms",
        "bottleneck.buffer=50ms",
        "bottleneck.qdisc.kind=dualpi2",
        "bottleneck.qdisc.step_thresh=1ms",
        "bottleneck.loss=1%",
        "bottleneck.down.delay=20ms",
    ]


def test_ecn_paths_become_ecn_rewrite_overrides_before_the_sets() -> None:
    sets = emu.link_sets(
        rate="1Mbit",
        ecn_path="bleach",
        ecn_path_up="remark",
        sets=["bottleneck.ecn_rewrite=none"],
    )
    assert sets == [
        "bottleneck.rate=1Mbit",
        "bottleneck.ecn_rewrite=bleach",
        "bottleneck.up.ecn_rewrite=remark",
        "bottleneck.ecn_rewrite=none",
    ]
    with pytest.raises(emu.EmuError, match="unknown ECN path 'x'"):
        emu.link_sets(ecn_path="x")


def test_the_shell_plan_holds_the_command_and_every_field() -> None:
    plan = emu_plan.Shell(
        command=("ping", "-c", "1", "10.77.0.2"),
        sets=("bottleneck.rate=1Mbit",),
        server_command="sleep 1",
        cc="reno",
        tuning=emu_plan.Tuning(spin_us=50, pin=False),
    )
    assert json.loads(emu_plan.to_json(plan)) == {
        "shell": {
            "command": ["ping", "-c", "1", "10.77.0.2"],
            "sets": ["bottleneck.rate=1Mbit"],
            "server_command": "sleep 1",
            "report": None,
            "cc": "reno",
            "pcap_dir": None,
            "pcap_limit": None,
            "quiet": False,
            "live": None,
            "tuning": {
                "mtu": 1500,
                "spin_us": 50,
                "min_sleep_us": 25,
                "pin": False,
                "realtime": True,
                "coalesce": True,
                "malformed": "pass",
            },
        }
    }


def test_choices_come_from_the_native_module(monkeypatch: pytest.MonkeyPatch) -> None:
    native = pytest.importorskip("l4slab._native")
    monkeypatch.setattr(native, "qdisc_names", lambda: ["fifo", "newqdisc"])
    monkeypatch.setattr(native, "ecn_rewrite_names", lambda: ["none", "newpath"])
    assert emu_cli._names("qdisc_names", "Queue discipline") == "Queue discipline: fifo, newqdisc"
    assert emu.ecn_paths() == ["none", "newpath"]
    assert emu.link_sets(ecn_path="newpath") == ["bottleneck.ecn_rewrite=newpath"]


def test_qdisc_param_help_lists_the_declared_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    native = pytest.importorskip("l4slab._native")
    text = emu_cli._qdisc_param_help()
    assert "pie: limit, target, tupdate, alpha, beta," in text
    assert "dualpi2: limit, memlimit," in text
    monkeypatch.setattr(native, "qdisc_names", lambda: ["newqdisc"])
    monkeypatch.setattr(
        native, "qdisc_params", lambda kind: [{"name": "knob"}] if kind == "newqdisc" else []
    )
    assert emu_cli._qdisc_param_help().endswith("Keys: newqdisc: knob.")


def test_bad_options_exit_2_naming_the_problem(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emu", "--qdisc-param", "target=5ms", "--", "true"]) == 2
    assert "--qdisc-param needs --qdisc" in capsys.readouterr().err
    assert main(["emu", "--ecn-path", "sideways", "--", "true"]) == 2
    assert "unknown ECN path 'sideways'" in capsys.readouterr().err
    # Checked by the emulator's own reading of the plan, before root is asked for.
    assert main(["emu", "--malformed", "sideways", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "shell.tuning.malformed: unknown variant `sideways`, expected `pass` or `drop`" in err


def test_wifi_keys_are_the_scenario_files_and_what_the_shell_cannot_build_exits_2(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # The shell builds the Wi-Fi cell (the client its one station) from the
    # scenario file's [wifi] keys, checked as there before anything is created.
    # (The emulator process says it, on the same stderr.)
    assert main(["emu", "--set", "wifi.standard=zz", "--", "true"]) == 2
    err = capfd.readouterr().err
    assert "wifi.standard: unknown standard 'zz'; choose one of: a, n" in err, err
    # A second station would need a scenario host: refused, pointing at the station keys.
    assert main(["emu", "--set", "hosts.client.wifi.snr_db=20", "--", "true"]) == 2
    err = capfd.readouterr().err
    assert "cannot honour it" in err and "wifi.stations.snr_db=20" in err, err


def test_mahimahi_link_options_become_the_same_overrides(tmp_path: Path) -> None:
    trace = tmp_path / "cell.up"
    trace.write_text("1\n2\n")
    up = emu.MahimahiLink("up", str(trace), "codel", "packets=100, target=5,interval=100")
    assert up.sets() == [
        f'bottleneck.up.rate={{ trace = "{trace.resolve()}" }}',
        "bottleneck.up.qdisc.kind=codel",
        "bottleneck.up.buffer=100pkt",
        "bottleneck.up.qdisc.target=5ms",
        "bottleneck.up.qdisc.interval=100ms",
    ]
    down = emu.MahimahiLink("down", None, "drophead", "bytes=30000")
    assert down.sets() == ["bottleneck.down.qdisc.kind=fifo",
                           "bottleneck.down.qdisc.head_drop=true",
                           "bottleneck.down.buffer=30000B"]  # fmt: skip
    pie = emu.MahimahiLink("down", None, "pie", "qdelay_ref=15, max_burst=100")
    assert pie.sets()[1:] == ["bottleneck.down.qdisc.target=15ms",
                              "bottleneck.down.qdisc.max_burst=100ms"]  # fmt: skip
    for link, message in [
        (emu.MahimahiLink("up", "/nope/cell.up"), "--uplink-trace: no such file"),
        (emu.MahimahiLink("up", None, "infinite"), "--uplink-queue: infinite: l4slab's queues"),
        (emu.MahimahiLink("down", None, "red"), "--downlink-queue: unknown queue 'red'"),
        (emu.MahimahiLink("up", None, None, "packets=1"), "--uplink-queue-args needs"),
        (emu.MahimahiLink("up", None, "pie", "target=5"), "'target' is not an argument of pie"),
        (emu.MahimahiLink("up", None, "codel", "packets=lots"), "expected NAME=NUMBER"),
    ]:
        with pytest.raises(emu.EmuError, match=re.escape(message)):
            link.sets()


def test_refuses_clearly_without_root(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert main(["emu", "--rate", "20Mbit", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "needs root" in err and "network namespaces" in err


def test_a_bad_emulator_override_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("L4SLAB_EMU_BIN", "/nonexistent/l4slab-emu")
    with pytest.raises(emu.EmuError, match="not an executable"):
        emu.emulator_command()


def test_the_emulator_comes_from_the_native_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("L4SLAB_EMU_BIN", raising=False)
    command = _emulator_or_skip_build()
    assert command == [sys.executable, "-m", "l4slab._emu"]
    # It takes a plan, not options: anything else is a bad plan, exit code 2.
    proc = subprocess.run([*command, "nonsense"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "bad emulator plan: cannot read the plan file nonsense" in proc.stderr


def _emulator_or_skip() -> list[str]:
    if not emu.is_root():
        pytest.skip("needs root to create network namespaces and TUN devices")
    return _emulator_or_skip_build()


def _our_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in out.stdout.splitlines() if line.startswith("l4slab-")]


def test_the_emulator_process_starts_with_one_thread() -> None:
    # The emulator blocks its signals in its one thread and reads them from a
    # signalfd; a thread started earlier (pyarrow starts jemalloc and AWS threads when
    # it is imported) would take SIGCHLD or SIGTERM away from it: the emulator then
    # never saw COMMAND exit (a test hung on that), or died without tearing down.
    code = (
        "import os, sys, l4slab._emu, l4slab._native; "
        "heavy = [m for m in ('numpy', 'pyarrow', 'matplotlib') if m in sys.modules]; "
        "print(len(os.listdir('/proc/self/task')), heavy)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split(maxsplit=1) == ["1", "[]\n"], done.stdout


def test_an_emulator_killed_by_a_signal_is_reported_with_exit_125(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An "emulator" that dies of SIGKILL at once: before, `emu` exited 247
    # (-9 as an exit status) without a word.
    fake = tmp_path / "dying-emulator"
    fake.write_text("#!/bin/sh\nkill -9 $$\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("L4SLAB_EMU_BIN", os.fspath(fake))
    monkeypatch.setattr(emu, "is_root", lambda: True)
    monkeypatch.setattr(emu, "checked", lambda plan: plan)

    assert main(["emu", "--rate", "20Mbit", "--", "true"]) == 125
    err = capsys.readouterr().err
    assert "the emulator process (pid " in err
    assert "was killed by signal 9 (SIGKILL)" in err
    assert "stderr" in err and "l4slab emu cleanup" in err
    with pytest.raises(emu.EmulatorDied, match="signal 9"):
        emu.run_scenario("format = 1\n", "s.toml")


def test_an_emulator_that_panicked_is_reported_with_exit_125_not_as_commands_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A panicking emulator exits 101 (1 through Python): before, `emu` passed that
    # on as COMMAND's exit code. It writes the panic to L4SLAB_EMU_PANIC_FILE
    # (cli.rs report_panics), as this fake does; one that only exits 101 is
    # COMMAND's 101.
    panicking = tmp_path / "panicking-emulator"
    panicking.write_text(
        "#!/bin/sh\nprintf \"thread 'main' panicked at run.rs:1:1:\\nboom\\n\" "
        '>> "$L4SLAB_EMU_PANIC_FILE"\nexit 101\n',
        encoding="utf-8",
    )
    commands = tmp_path / "commands-101"
    commands.write_text("#!/bin/sh\nexit 101\n", encoding="utf-8")
    for f in (panicking, commands):
        f.chmod(0o755)
    monkeypatch.setattr(emu, "is_root", lambda: True)
    monkeypatch.setattr(emu, "checked", lambda plan: plan)

    monkeypatch.setenv("L4SLAB_EMU_BIN", os.fspath(panicking))
    assert main(["emu", "--rate", "20Mbit", "--", "true"]) == 125
    err = capsys.readouterr().err
    assert "failed with an internal error" in err
    assert "thread 'main' panicked at run.rs:1:1: boom" in err
    assert "exit code 101 is not COMMAND's" in err
    monkeypatch.setenv("L4SLAB_EMU_BIN", os.fspath(commands))
    assert main(["emu", "--rate", "20Mbit", "--", "true"]) == 101


@pytest.mark.skipif(sys.platform != "linux", reason="the emulator runs on Linux only")
def test_the_emulator_refuses_to_run_beside_other_threads() -> None:
    code = (
        "import sys, threading, time; "
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start(); "
        "from l4slab import _emu; "
        f"sys.exit(_emu.main([{emu_plan.to_json(emu_plan.Ping(addr='127.0.0.1', count=1))!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 1, done
    assert "must be the only thread of its process, but 2 threads" in done.stderr


def test_emu_runs_a_command_behind_the_link_and_removes_everything(tmp_path: Path) -> None:
    _emulator_or_skip()
    before = _our_namespaces()
    report = tmp_path / "report.json"
    ping = shlex.join(emu.command_line(emu_plan.Ping(count=5, interval_ms=20)))
    script = f"{ping} >/dev/null; exit 5"
    options = [
        "--delay",
        "5ms",
        "--rate",
        "50Mbit",
        "--cc",
        "reno",
        "--quiet",
        "--report",
        str(report),
    ]
    code = main(["emu", *options, "--", "sh", "-c", script])
    assert code == 5
    rep = emu.read_report(report)
    assert rep["scenario"]["bottleneck"]["down"]["delay"] == 5_000_000
    assert rep["forwarder"]["timing_error_us"]["samples"] >= 10
    assert rep["queues"]["bottleneck.up"]["kind"] == "fifo"
    assert rep["tcp_congestion_control"] == {"client": "reno", "server": "reno"}
    assert _our_namespaces() == before


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="needs iperf3")
def test_command_starts_once_the_server_command_listens(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # A server that takes a while to listen (loaded machines: docs/emulator.md's
    # iperf3 example was refused once in CI): COMMAND, which connects at once, waits
    # for the server namespace's listening socket instead of being refused.
    _emulator_or_skip()
    code = main(["emu", "--rate", "20Mbit", "--server", "sleep 0.5; exec iperf3 -s -1",
                 "--", "sh", "-c", "iperf3 -c $L4SLAB_SERVER -t 1"])  # fmt: skip
    err = capfd.readouterr().err
    assert code == 0, err
    assert "Connection refused" not in err
    # A server command that never listens: COMMAND starts after the wait, said.
    assert main(["emu", "--rate", "20Mbit", "--server", "sleep 30", "--", "true"]) == 0
    assert "opened no listening socket in 2 s" in capfd.readouterr().err


def test_emu_takes_mahimahi_s_link_options(tmp_path: Path) -> None:
    _emulator_or_skip()
    traces = shipped.traces_dir()
    report = tmp_path / "report.json"
    # A file, as mm-link takes it; or a trace l4slab ships, by name.
    code = main(["emu", "--uplink-trace", str(traces / "TMobile-LTE-short.up"),
                 "--downlink-trace", "TMobile-LTE-short.down",
                 "--downlink-queue=codel", "--downlink-queue-args=packets=200, target=5",
                 "--quiet", "--report", str(report), "--", "true"])  # fmt: skip
    assert code == 0
    rep = emu.read_report(report)
    down, up = rep["scenario"]["bottleneck"]["down"], rep["scenario"]["bottleneck"]["up"]
    # By name: named, and no path (where l4slab is installed is no result).
    assert down["rate_trace"]["name"] == "TMobile-LTE-short.down"
    assert "path" not in down["rate_trace"]
    assert up["rate_trace"]["path"].endswith("TMobile-LTE-short.up")
    assert down["qdisc"]["kind"] == "codel" and down["qdisc"]["limit"] == 200
    assert down["qdisc"]["target"] == 5_000_000
    assert rep["queues"]["bottleneck.down"]["kind"] == "codel"


def test_l4slab_send_prague_keeps_the_l_queue_short_beside_kernel_cubic(tmp_path: Path) -> None:
    """The QUIC/UDP issue's Done-means, literally: a Prague flow from ``l4slab send``
    through the emulator's DualPI2 next to a kernel Cubic flow (iperf3), both uploads."""
    _emulator_or_skip()
    if shutil.which("iperf3") is None:
        pytest.skip("needs iperf3 (apt-get install -y iperf3; ./test.sh installs it)")
    l4slab = shlex.join([sys.executable, "-m", "l4slab"])
    report, iperf = tmp_path / "report.json", tmp_path / "iperf.json"
    send = tmp_path / "send"
    server = f"sh -c 'iperf3 -s -1 -D; {l4slab} serve --once --time-limit 30'"
    client = (
        f'sleep 1; iperf3 -c "$L4SLAB_SERVER" -C cubic -t 8 -J > {iperf} & '
        f'{l4slab} send "$L4SLAB_SERVER" --cc prague -t 8 -o {send} > /dev/null; wait'
    )
    link = ["--rate", "20Mbit", "--delay", "10ms", "--buffer", "50ms", "--qdisc", "dualpi2"]
    code = main(
        [
            "emu",
            *link,
            "--quiet",
            "--report",
            str(report),
            "--server",
            server,
            "--",
            "sh",
            "-c",
            client,
        ]
    )
    assert code == 0
    up = emu.read_report(report)["queues"]["bottleneck.up"]["subqueues"]
    # Measured 2026-11-27 (10 s): L p50 0.53 / p99 2.6 ms, C p50 13.6 ms.
    assert up["l"]["sojourn_ms"]["p99"] < 5.0, up["l"]
    assert up["l"]["sojourn_ms"]["samples"] > 1000, up["l"]
    assert 5.0 < up["c"]["sojourn_ms"]["p50"] < 25.0, up["c"]
    flow = json.loads((send / "summary.json").read_text())["flows"]["send"]
    assert flow["ecn_validation"] == "capable", flow
    assert flow["ce_packets_fed_back"] > 0, flow
    cubic = json.loads(iperf.read_text())["end"]["sum_received"]["bits_per_second"]
    prague = flow["goodput_bps"]
    assert prague > 1e6 and cubic > 5e6, (prague, cubic)
    assert prague + cubic > 0.8 * 20e6, (prague, cubic)


def _ecn_report(tcp_forward: dict[str, Any], *, works: bool, l4s_ok: bool) -> dict[str, Any]:
    arrived = {"sent": 5, "not_ect": 0, "ect0": 5, "ect1": 0, "ce": 0}
    passed = {"outcome": "pass", "arrived": {**arrived, "ect0": 0, "not_ect": 5}}
    remarked = {"outcome": "remarked", "arrived": arrived}
    direction = {"not_ect": passed, "ect0": passed, "ect1": remarked, "ce": passed}
    clean = {"complete": True, "ect_seen": True, "delivered": 25, "delivered_ce": 0}
    return {
        "forward": direction,
        "reverse": direction,
        "tcp": {"forward": tcp_forward, "reverse": {**clean, "retransmits": 0, "outcome": "pass"}},
        "tcp_ecn_negotiated": True,
        "tcp_ecn_works": works,
        "classic_ecn_ok": works,
        "l4s_ok": l4s_ok,
    }


def test_the_ecn_report_reads_as_lines() -> None:
    tcp = {"complete": True, "ect_seen": True, "delivered": 25, "delivered_ce": 1}
    text = emu_cli.format_ecn_report(
        _ecn_report({**tcp, "retransmits": 0, "outcome": "pass"}, works=True, l4s_ok=False)
    )
    assert "client -> server  ect1     RE-MARKED to ect0 (5/5 arrived)" in text
    assert "kernel TCP ECN negotiation: yes (the SYN-ACK echoed ECE)" in text
    assert "kernel TCP data client -> server: ECT(0) arrives (1/25 segments echoed CE)" in text
    assert "kernel TCP ECN: works" in text
    assert text.endswith("verdict: NOT fit for L4S: see the lines in capitals")


def test_the_ecn_report_says_negotiation_is_not_ecn_working() -> None:
    # Negotiated over the handshake, but the path dropped the data's ECT(0).
    dropped = {"complete": True, "ect_seen": False, "delivered": 25, "delivered_ce": 0}
    dropped |= {"retransmits": 24, "outcome": "dropped"}
    text = emu_cli.format_ecn_report(_ecn_report(dropped, works=False, l4s_ok=False))
    assert "kernel TCP ECN negotiation: yes" in text
    assert "client -> server: ECT DROPPED: only the 24 Not-ECT retransmissions" in text
    assert "kernel TCP ECN: NOT WORKING" in text
    assert "classic ECN: NOT working" in text


def _emulator_or_skip_build() -> list[str]:
    try:
        return emu.emulator_command()
    except emu.EmuError as exc:
        pytest.skip(str(exc))


def test_backend_emu_carries_what_kernel_tcp_cannot_on_its_own_endpoints(
    example_scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _emulator_or_skip_build()
    # Validation needs no root: the plan comes before anything is created.
    resolved = emu.validate(
        example_scenario.read_text(), str(example_scenario), ["flows[0].cc=prague"]
    )
    notes = "\n".join(resolved["emulator_notes"])
    assert "kernel TCP cannot carry it (this kernel has no prague" in notes
    assert "QUIC-style transport on UDP" in notes
    # A frame app over TCP with a controller the kernel lacks is refused, naming the key.
    code = main(
        [
            "run",
            str(example_scenario),
            "--backend",
            "emu",
            "--set",
            "flows[0].cc=prague",
            "--set",
            'flows[0].app={ kind = "video_call" }',
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "flows[0] (" in err and '.app = "video_call" over TCP' in err and "--backend sim" in err
    assert main(["run", str(example_scenario), "--backend", "nope"]) == 2


def test_ecn_check_reports_a_bleaching_path(capsys: pytest.CaptureFixture[str]) -> None:
    _emulator_or_skip()
    assert main(["emu", "--ecn-path", "bleach", "ecn-check", "--count", "3"]) == 3
    out = capsys.readouterr().out
    assert "server -> client  ect1     BLEACHED to Not-ECT" in out
    # TCP negotiates ECN over the handshake, but its ECT(0) never arrives.
    assert "kernel TCP ECN negotiation: yes" in out
    assert "kernel TCP data client -> server: BLEACHED" in out
    assert "kernel TCP ECN: NOT WORKING" in out
    assert "NOT fit for L4S" in out


def test_ecn_check_fails_a_path_that_marks_everything(capsys: pytest.CaptureFixture[str]) -> None:
    _emulator_or_skip()
    assert main(["emu", "--ecn-path", "ce_all", "ecn-check", "--count", "3"]) == 3
    out = capsys.readouterr().out
    assert "client -> server  ect1     CE-MARKED (on an idle path" in out
    assert "NOT fit for L4S" in out


def _children(pid: int) -> list[int]:
    """Pids of the children of ``pid`` (every thread's)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            out += [int(p) for p in task.read_text().split()]
    return out


def _alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _ns_pids(name: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def _wait_for(what: str, timeout_s: float, cond: Callable[[], bool]) -> None:
    """Wait until ``cond()`` holds, failing after ``timeout_s`` (a bound, not a measurement)."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


def test_sigkill_of_l4slab_takes_the_emulator_its_commands_and_namespaces_down() -> None:
    _emulator_or_skip()
    # The subprocess imports l4slab from where this test did.
    source = str(Path(emu.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    env.pop("L4SLAB_EMU_BIN", None)
    command = [sys.executable, "-m", "l4slab", "emu", "--quiet", "--server", "sleep 1000"]
    cli = subprocess.Popen([*command, "--", "sleep", "1000"], stdin=subprocess.DEVNULL, env=env)
    emulator: list[int] = []
    sleeps: list[int] = []
    try:

        def started() -> bool:
            # The emulator is l4slab's only child; a sleep runs in each namespace.
            emulator[:] = _children(cli.pid)
            if len(emulator) != 1:
                return False
            sides = [_ns_pids(f"l4slab-{emulator[0]}-{side}") for side in ("c", "s")]
            sleeping = [[p for p in pids if b"sleep" in _cmdline(p)] for pids in sides]
            sleeps[:] = [p for pids in sides for p in pids]
            return all(sleeping)

        _wait_for("the emulator, COMMAND and the server command", 30, started)
        cli.kill()
        cli.wait()
        (pid,) = emulator
        _wait_for("the emulator to exit", 15, lambda: not _alive(pid))
        _wait_for("COMMAND and the server command to end", 15, lambda: not any(map(_alive, sleeps)))
        prefix = f"l4slab-{pid}-"
        _wait_for(
            "its namespaces to be removed",
            15,
            lambda: not any(n.startswith(prefix) for n in _our_namespaces()),
        )
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        for p in emulator:
            if _alive(p):
                os.kill(p, signal.SIGTERM)


_DOCS = Path(__file__).resolve().parents[1] / "docs" / "emulator.md"


def _documented_recipe() -> list[str]:
    """The ``l4slab emu`` arguments of the measurement recipe in docs/emulator.md."""
    lines = _DOCS.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if "measurement-recipe:" in line)
    command = next(line for line in lines[start:] if line.startswith("$ sudo l4slab emu "))
    return shlex.split(command.removeprefix("$ sudo l4slab "))


def test_the_documented_measurement_recipe_runs_to_the_end() -> None:
    # The recipe once hung forever: both iperf3 ends at the same SCHED_FIFO
    # priority on the one CPU the forwarder leaves, the client busy-waiting for
    # a server that never got to run.
    _emulator_or_skip()
    if shutil.which("iperf3") is None:
        pytest.fail("the documented recipe needs iperf3 (Debian: apt-get install -y iperf3)")
    args = _documented_recipe()
    assert args[0] == "emu" and "iperf3" in " ".join(args)
    source = str(Path(emu.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    env.pop("L4SLAB_EMU_BIN", None)
    cli = subprocess.Popen(
        [sys.executable, "-m", "l4slab", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        # A bound, not a measurement: the recipe's iperf3 runs 10 s.
        out, _ = cli.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        # SIGKILL of l4slab tears the emulator and both iperf3 down (PR_SET_PDEATHSIG).
        cli.kill()
        out, _ = cli.communicate()
        pytest.fail(f"the documented recipe did not finish within 60 s:\n{out[-2000:]}")
    assert cli.returncode == 0, out[-2000:]
    # iperf3's summary: "... 19.1 Mbits/sec ... receiver" (client and server both print one).
    rates = [
        float(line.split("bits/sec")[0].split()[-2])
        * {"K": 1e-3, "M": 1.0, "G": 1e3}[line.split("bits/sec")[0].split()[-1]]
        for line in out.splitlines()
        if line.rstrip().endswith("receiver")
    ]
    assert rates, out[-2000:]
    # The link is 20 Mbit/s: an end starved of CPU shows as far less.
    assert max(rates) > 10.0, out[-2000:]
