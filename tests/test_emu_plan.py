"""The emulator's plans: every plan the Python side builds is one the emulator
reads (crates/l4slab-emu/src/plan.rs), a bad plan is refused naming the field,
and the emulator process takes nothing but a plan (``--help`` says so).

The plans are caught where the code hands them to the emulator
(:func:`l4slab.emu.run_emulator`), so they are the ones ``l4slab emu``,
``l4slab check-l4s`` and ``l4slab run --backend emu`` really build; no root needed.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from l4slab import emu, emu_plan
from l4slab.check.phases import phases
from l4slab.check.runner import run_phase
from l4slab.cli import main

native = pytest.importorskip("l4slab._native")
if not hasattr(native, "emu_plan_check"):
    pytest.skip("this build of l4slab has no emulator (it needs Linux)", allow_module_level=True)


def _accepted(plan: emu_plan.Plan) -> str:
    """The sub-command the emulator reads ``plan`` as (raises ValueError if it refuses it)."""
    name: str = native.emu_plan_check(emu_plan.to_json(plan))
    return name


def _inner(command: list[str] | tuple[str, ...]) -> str:
    """The sub-command of a plan given to the emulator as a command line."""
    assert list(command[:-1]) == emu.emulator_command(), command
    name: str = native.emu_plan_check(command[-1])
    return name


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> list[emu_plan.Plan]:
    """The plans handed to the emulator, which is not started."""
    plans: list[emu_plan.Plan] = []

    def fake(plan: emu_plan.Plan, **_: Any) -> subprocess.CompletedProcess[str]:
        plans.append(plan)
        return subprocess.CompletedProcess([], 0, json.dumps({"l4s_ok": True}), "")

    monkeypatch.setattr(emu, "run_emulator", fake)
    monkeypatch.delenv("L4SLAB_EMU_BIN", raising=False)
    return plans


def test_every_plan_the_emu_commands_build_is_read_by_the_emulator(
    handed: list[emu_plan.Plan], capsys: pytest.CaptureFixture[str]
) -> None:
    shell = ["emu", "--rate", "20Mbit", "--ecn-path", "bleach", "--qdisc", "dualpi2"]
    shell += ["--qdisc-param", "step_thresh=1ms", "--server", "sleep 1", "--cc", "reno"]
    shell += ["--spin-us", "5", "--min-sleep-us", "0", "--no-pin", "--no-realtime", "-q"]
    shell += ["--mtu", "9000", "--malformed", "drop", "--no-coalesce"]
    assert main([*shell, "--", "true"]) == 0
    assert main(["emu", "--delay", "5ms", "ecn-check", "--count", "3", "--json"]) == 0
    assert main(["emu", "cleanup"]) == 0
    capsys.readouterr()
    run, check, _ = handed
    assert [_accepted(p) for p in handed] == ["shell", "shell", "cleanup"]
    assert isinstance(run, emu_plan.Shell) and isinstance(check, emu_plan.Shell)
    assert run.command == ("true",) and run.cc == "reno" and run.quiet
    assert run.tuning == emu_plan.Tuning(
        mtu=9000,
        spin_us=5,
        min_sleep_us=0,
        pin=False,
        realtime=False,
        coalesce=False,
        malformed="drop",
    )
    assert "bottleneck.ecn_rewrite=bleach" in run.sets
    # The ECN check's two ends are plans too: the checker is COMMAND, the
    # reflector the server command.
    assert _inner(check.command) == "ecn_check"
    assert '"count":3' in check.command[-1]
    assert check.server_command is not None
    assert _inner(shlex.split(check.server_command)) == "ecn_reflect"


def test_a_check_l4s_phase_is_a_plan_the_emulator_reads(
    handed: list[emu_plan.Plan], tmp_path: Path
) -> None:
    phase = next(p for p in phases("down") if p.competitor and p.ecn_path is None)
    with pytest.raises(emu.EmuError, match="the emulator failed"):
        # No report: the emulator did not run.
        run_phase(phase, client="true", server=None, seconds=2, data_dir="down", workdir=tmp_path)
    (plan,) = handed
    assert isinstance(plan, emu_plan.Shell) and plan.pcap_dir == tmp_path / phase.name
    assert _accepted(plan) == "shell"
    # The competing kernel flow's ends run the emulator's probes, from plans
    # (shell-quoted in the client's and the server's scripts).
    assert plan.server_command is not None
    scripts = plan.command[-1] + plan.server_command
    probes = [shlex.split(q)[0] for q in re.findall(r"'\{[^']*\}'", scripts)]
    assert [native.emu_plan_check(p) for p in probes] == ["tcp_sink", "tcp_send"]


def test_backend_emu_and_the_probes_build_plans_the_emulator_reads(
    handed: list[emu_plan.Plan], tmp_path: Path
) -> None:
    with pytest.raises(emu.EmuError):
        # The fake emulator wrote no results.
        emu.run_scenario("format = 1", "x.toml", ["duration=1s"], 7, pcap_dir=tmp_path)
    (run,) = handed
    assert isinstance(run, emu_plan.Run) and run.seed == 7 and run.sets == ("duration=1s",)
    assert _accepted(run) == "run"
    plans: list[emu_plan.Plan] = [
        emu_plan.Validate(scenario="x.toml", sets=("duration=1s",)),
        emu_plan.Ping(),
        emu_plan.TcpSend(addr=f"{emu_plan.SERVER_ADDR}:5001"),
        emu_plan.TcpSink(),
        emu_plan.EcnReflect(),
        emu_plan.EcnCheck(),
    ]
    assert [_accepted(p) for p in plans] == [
        "validate",
        "ping",
        "tcp_send",
        "tcp_sink",
        "ecn_reflect",
        "ecn_check",
    ]


def test_a_bad_plan_is_refused_naming_the_field() -> None:
    plan = json.loads(emu_plan.to_json(emu_plan.Shell(command=("true",))))
    plan["shell"]["tuning"]["spin"] = 5
    with pytest.raises(ValueError, match=r"shell\.tuning\.spin: unknown field `spin`"):
        native.emu_plan_check(json.dumps(plan))
    with pytest.raises(ValueError, match="missing field `addr`"):
        native.emu_plan_check('{"tcp_send": {"cc": "cubic", "seconds": 1, "sample_ms": 10}}')
    with pytest.raises(ValueError, match="unknown variant `probe`, expected one of `shell`"):
        native.emu_plan_check('{"probe": {}}')
    # A value the emulator cannot take is bad input (exit code 2), before root is asked for.
    with pytest.raises(emu.EmuInputError, match=r"tuning\.mtu: must be between 576 and 9000"):
        emu.checked(emu_plan.Shell(command=("true",), tuning=emu_plan.Tuning(mtu=100)))
    # So is a value only the emulator knows the choices of.
    with pytest.raises(emu.EmuInputError, match="malformed: unknown variant `sideways`"):
        emu.checked(emu_plan.Shell(command=("true",), tuning=emu_plan.Tuning(malformed="sideways")))
    # The emulator process says the same and exits with code 2.
    proc = subprocess.run(
        [*emu.emulator_command(), json.dumps(plan)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "error: bad emulator plan: shell.tuning.spin: unknown field `spin`" in proc.stderr


@pytest.mark.parametrize("arg", ["--help", "-h", "help"])
def test_the_emulator_process_says_what_it_is(arg: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "l4slab._emu", arg], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "not run by hand: run `l4slab emu --help`" in " ".join(proc.stdout.split())
    assert "l4slab-emu PLAN" in proc.stdout
    # Anything but one plan is a usage error, with the same text.
    proc = subprocess.run(
        [sys.executable, "-m", "l4slab._emu"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "expected one argument, a plan" in proc.stderr
