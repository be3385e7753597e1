"""Run an application through one phase of ``l4slab check-l4s`` (needs root).

A phase is one run of the emulator's shell (:mod:`l4slab.emu`) with the
bottleneck captured into ``<phase dir>/pcap/``. The client command runs under
``sh -c`` with ``$L4SLAB_CHECK_SECONDS`` and ``$L4SLAB_CHECK_PHASE`` added to
the emulator's variables (``$L4SLAB_SERVER`` ...), and is stopped (SIGTERM,
then SIGKILL 2 s later) if it outlives the phase, its start-up allowance
(:data:`STARTUP_S`: the phase is measured from the client's first packet) and
2 s. Its output and the server's go to ``client.log`` / ``server.log`` in the
phase folder. The client and the server run with ``$L4SLAB_CHECK_ROLE`` set
(``client``, ``server``): how long they waited for a CPU is sampled while the
phase runs (:mod:`l4slab.check.schedstat`).
The emulator removes the namespaces and everything in them when the phase
ends, on Ctrl-C and on SIGTERM (docs/emulator.md "Teardown and safety").
"""

from __future__ import annotations

import json
import shlex
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4slab import emu
from l4slab.check.phases import COMPETITOR_PORT, Phase
from l4slab.check.schedstat import ROLE_VAR, Sampler
from l4slab.emu_plan import CLIENT_ADDR, SERVER_ECN_ADDR, Shell, TcpSend, TcpSink

__all__ = ["GRACE_S", "STARTUP_S", "PhaseRun", "run_phase", "stopped_by_the_check"]

#: How long the client may outlive its phase before it is stopped.
GRACE_S = 2.0
#: How long the client may take to start (to send its first packet): the
#: phase's window opens at that packet, so a slow start costs no measurement.
STARTUP_S = 3.0
#: ``timeout``'s exit codes when it stopped the client at the limit: 124
#: (SIGTERM), 128 + SIGKILL (the client ignored SIGTERM for 2 s).
STOPPED_CODES = (124, 128 + signal.SIGKILL)
#: The emulator's exit codes after SIGINT, SIGTERM, SIGHUP (128 + signal).
_INTERRUPTED = (128 + signal.SIGINT, 128 + signal.SIGTERM, 128 + signal.SIGHUP)


@dataclass(frozen=True)
class PhaseRun:
    """Where one phase's evidence is and how its commands ended."""

    phase: Phase
    dir: Path
    seconds: float
    #: The client command's exit code (124: stopped at the end of the phase).
    exit_code: int
    report: dict[str, Any]
    #: How long the client, the server and the emulator waited for a CPU.
    cpu: Sampler | None = None

    @property
    def pcap_dir(self) -> Path:
        return self.dir / "pcap"


def stopped_by_the_check(exit_code: int) -> bool:
    """Whether the client ended because the check stopped it at its limit."""
    return exit_code in STOPPED_CODES


def _competitor(phase: Phase, data_dir: str, seconds: float) -> tuple[str, str]:
    """(client part, server part): a kernel Cubic flow with classic ECN in the
    application's data direction, from the emulator's own TCP probes."""
    if not phase.competitor:
        return "", ""
    sink = shlex.join(emu.command_line(TcpSink(port=COMPETITOR_PORT))) + " >/dev/null 2>&1 &"

    def send(addr: str) -> str:
        plan = TcpSend(addr=f"{addr}:{COMPETITOR_PORT}", cc="cubic", seconds=seconds)
        return shlex.join(emu.command_line(plan))

    if data_dir == "up":
        # $L4SLAB_SERVER_ECN's route negotiates classic ECN (docs/emulator.md).
        return send(SERVER_ECN_ADDR) + " >/dev/null 2>&1 &", sink
    # Downloads: the server namespace's own tcp_ecn (a per-namespace sysctl).
    server = f"sysctl -qw net.ipv4.tcp_ecn=1; (sleep 0.5; {send(CLIENT_ADDR)} >/dev/null 2>&1) &"
    return sink, server


def run_phase(
    phase: Phase,
    *,
    client: str,
    server: str | None,
    seconds: float,
    data_dir: str,
    workdir: Path,
) -> PhaseRun:
    """Run ``client`` (shell text) behind ``phase``'s path for ``seconds``.

    Raises :class:`l4slab.emu.EmuError` when the emulator cannot run.
    """
    d = workdir / phase.name
    d.mkdir(parents=True, exist_ok=True)
    comp_client, comp_server = _competitor(phase, data_dir, seconds)
    env = f"export L4SLAB_CHECK_SECONDS={seconds:g} L4SLAB_CHECK_PHASE={shlex.quote(phase.name)}"
    limit = seconds + STARTUP_S + GRACE_S
    client_log, server_log = shlex.quote(str(d / "client.log")), shlex.quote(str(d / "server.log"))
    script = (
        f"{env}; {comp_client} export {ROLE_VAR}=client; "
        f"timeout -k 2 {limit:g} sh -c {shlex.quote(client)} >{client_log} 2>&1; "
        "code=$?; wait; exit $code"
    )
    server_script = None
    if server is not None or comp_server:
        server_script = f"{env}; {comp_server} "
        server_script += (
            f"export {ROLE_VAR}=server; sh -c {shlex.quote(server)} >{server_log} 2>&1"
            if server
            else "wait"
        )
    report = d / "emu-report.json"
    plan = Shell(
        command=("sh", "-c", script),
        sets=(*phase.sets, *emu.link_sets(ecn_path=phase.ecn_path)),
        server_command=server_script,
        report=report,
        quiet=True,
        pcap_dir=d,
    )
    with Sampler(origin_role="client") as cpu:
        proc = emu.run_emulator(plan, capture=True)
    if proc.returncode in _INTERRUPTED:
        # Ctrl-C or SIGTERM: the emulator has torn the phase down; run no more.
        raise KeyboardInterrupt
    if not report.exists():
        raise emu.EmuError(
            f"phase {phase.name}: the emulator failed (exit {proc.returncode}): "
            f"{(proc.stderr or '').strip()}"
        )
    rep: dict[str, Any] = json.loads(report.read_text())
    return PhaseRun(
        phase=phase, dir=d, seconds=seconds, exit_code=proc.returncode, report=rep, cpu=cpu
    )
