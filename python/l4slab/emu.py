"""The real-time emulator from Python: a thin layer over the emulator process.

The emulator (crates/l4slab-emu, compiled into the native module) does
everything: it creates a client and a server network namespace joined through
TUN devices and its user-space forwarder, runs the bottleneck with the
simulator's own queue, rate and loss code against the wall clock, and removes
everything again. This module runs it as a process of its own
(:func:`emulator_command`: ``python -m l4slab._emu``, or ``$L4SLAB_EMU_BIN``)
with a plan (:mod:`l4slab.emu_plan`, the one declaration of what it takes) and
reads its results.

The emulator is tied to the process that starts it: when that process dies,
even by SIGKILL, the kernel sends the emulator SIGTERM (``PR_SET_PDEATHSIG``,
asked for through ``$L4SLAB_EMU_PARENT_PID``) and it tears down as on Ctrl-C.

Link options are scenario overrides on the ``[bottleneck]`` table (see
docs/scenarios.md), so ``rate="20Mbit"`` means exactly what
``--set bottleneck.rate=20Mbit`` means for ``l4slab run``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from l4slab import shipped
from l4slab.emu_plan import Plan, Run, Shell, Tuning, Validate, to_json

__all__ = [
    "EmuError",
    "EmuInputError",
    "EmulatorDied",
    "NotRootError",
    "checked",
    "command_line",
    "ecn_paths",
    "emulator_command",
    "is_root",
    "link_sets",
    "pcap_limit",
    "read_report",
    "run_emulator",
    "run_scenario",
    "shell",
    "timing_line",
    "validate",
]

_P = TypeVar("_P", bound=Plan)


def ecn_paths() -> list[str]:
    """ECN path behaviours before the bottleneck queue: the scenario key
    ``ecn_rewrite`` (crates/l4slab-link/src/ecn.rs), from the native module."""
    from l4slab import _native

    return _native.ecn_rewrite_names()


#: Names the process that starts the emulator, which then dies with it
#: (crates/l4slab-emu/src/cli.rs, ``PARENT_PID_ENV``).
PARENT_PID_ENV = "L4SLAB_EMU_PARENT_PID"
#: Names the file the emulator writes a panic's message to
#: (crates/l4slab-emu/src/cli.rs, ``PANIC_FILE_ENV``).
PANIC_FILE_ENV = "L4SLAB_EMU_PANIC_FILE"


class EmuError(RuntimeError):
    """The emulator could not run (not available, bad option, setup failed)."""


class EmulatorDied(EmuError):
    """The emulator process was killed by a signal (SIGKILL, a crash) or panicked (a
    bug) before it could report: nothing it ran has a result. ``l4slab`` exits 125
    (:data:`EXIT_EMULATOR_DIED <l4slab._cli_base.EXIT_EMULATOR_DIED>`), not COMMAND's
    code."""


def _died(proc: subprocess.Popen[str], err: str | None) -> EmulatorDied:
    """What to say about an emulator process that ``-returncode`` killed."""
    number = -(proc.returncode or 0)
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    if err is None:
        log = "its log is its stderr, this terminal's (any messages are above)"
    elif err.strip():
        log = "its last messages: " + " | ".join(err.strip().splitlines()[-5:])
    else:
        log = "it wrote nothing on stderr"
    return EmulatorDied(
        f"the emulator process (pid {proc.pid}) was killed by signal {number} ({name}); "
        f"{log}. Its reaper removes the namespaces it made; `sudo l4slab emu cleanup` "
        "removes any that remain"
    )


class NotRootError(EmuError):
    """The emulator needs root for network namespaces and TUN devices."""


def is_root() -> bool:
    """Whether this process runs as root (the emulator needs it)."""
    return os.geteuid() == 0


def emulator_command() -> list[str]:
    """The argument vector that runs the emulator (its arguments follow).

    ``$L4SLAB_EMU_BIN`` when set (e.g. a cargo-built ``l4slab-emu``), else the
    emulator compiled into this installation's native module
    (``python -m l4slab._emu``), which always matches the installed package.
    Raises :class:`EmuError` when neither is available.
    """
    env = os.environ.get("L4SLAB_EMU_BIN")
    if env:
        path = Path(env)
        if path.is_file() and os.access(path, os.X_OK):
            return [os.fspath(path)]
        raise EmuError(f"L4SLAB_EMU_BIN={env} is not an executable file")
    try:
        from l4slab import _native
    except ImportError as exc:
        raise EmuError(f"the native module l4slab._native is not built: {exc}") from None
    if not hasattr(_native, "emu_main"):
        raise EmuError("this build of l4slab has no emulator: it needs Linux")
    from l4slab._emu import SELF_COMMAND

    return list(SELF_COMMAND)


def _child_env() -> dict[str, str]:
    """Our environment, plus the pid the emulator ties its life to and, after the
    user's own ``$L4SLAB_TRACES``, the traces l4slab ships (so a trace given by name
    resolves as it does in the simulator, wherever l4slab is installed)."""
    traces = [d for d in os.environ.get("L4SLAB_TRACES", "").split(os.pathsep) if d]
    traces.append(os.fspath(shipped.traces_dir()))
    return {
        **os.environ,
        PARENT_PID_ENV: str(os.getpid()),
        "L4SLAB_TRACES": os.pathsep.join(traces),
    }


def link_sets(
    *,
    rate: str | None = None,
    down_rate: str | None = None,
    up_rate: str | None = None,
    delay: str | None = None,
    down_delay: str | None = None,
    up_delay: str | None = None,
    buffer: str | None = None,
    qdisc: str | None = None,
    qdisc_params: Iterable[str] = (),
    loss: str | None = None,
    ecn_path: str | None = None,
    ecn_path_down: str | None = None,
    ecn_path_up: str | None = None,
    mahimahi: Iterable[MahimahiLink] = (),
    sets: Iterable[str] = (),
) -> list[str]:
    """Scenario overrides (``key.path=value``) for the given link options.

    ``qdisc_params`` are ``name=value`` strings for the qdisc table (e.g.
    ``"target=5ms"``); ``ecn_path*`` what the path does to ECN before the queue
    (the key ``ecn_rewrite``, one of :func:`ecn_paths`); ``sets`` are passed on
    last, so they win. Raises :class:`EmuError` naming a bad option.
    """
    out: list[str] = []

    def put(key: str, value: str | None) -> None:
        if value is not None:
            out.append(f"bottleneck.{key}={value}")

    put("rate", rate)
    put("down.rate", down_rate)
    put("up.rate", up_rate)
    put("delay", delay)
    put("down.delay", down_delay)
    put("up.delay", up_delay)
    put("buffer", buffer)
    if qdisc is not None:
        put("qdisc.kind", qdisc)
    for param in qdisc_params:
        if "=" not in param:
            raise EmuError(f"--qdisc-param {param!r}: expected NAME=VALUE, e.g. target=5ms")
        if qdisc is None:
            raise EmuError("--qdisc-param needs --qdisc (the kind the parameters belong to)")
        out.append(f"bottleneck.qdisc.{param}")
    put("loss", loss)
    for opt, key, value in (
        ("--ecn-path", "ecn_rewrite", ecn_path),
        ("--ecn-path-down", "down.ecn_rewrite", ecn_path_down),
        ("--ecn-path-up", "up.ecn_rewrite", ecn_path_up),
    ):
        if value is not None:
            known = ecn_paths()
            if value not in known:
                names = ", ".join(known)
                raise EmuError(f"{opt}: unknown ECN path {value!r}; choose one of: {names}")
            put(key, value)
    for link in mahimahi:
        out.extend(link.sets())
    out.extend(sets)
    return out


#: mm-link's queue types and the qdisc each is here (``--uplink-queue``).
MAHIMAHI_QUEUES = {
    "droptail": ("fifo", ()),
    "drophead": ("fifo", ("head_drop=true",)),
    "codel": ("codel", ()),
    "pie": ("pie", ()),
}

#: mm-link's queue arguments (in milliseconds where a time) and the qdisc
#: parameter each sets here; ``packets`` and ``bytes`` set the buffer.
MAHIMAHI_TIMES = {"target": "target", "interval": "interval", "qdelay_ref": "target",
                  "max_burst": "max_burst"}  # fmt: skip


@dataclass(frozen=True)
class MahimahiLink:
    """One direction given as mahimahi's ``mm-link`` is: a delivery trace
    file (``--uplink-trace F``), a queue type (``--uplink-queue=codel``) and
    its arguments (``--uplink-queue-args="packets=100, target=5"``: ``NAME=NUMBER``
    with NAME one of bytes, packets, target, interval, qdelay_ref, max_burst,
    the times in milliseconds). ``direction`` is ``up`` (client to server,
    mm-link's uplink) or ``down``."""

    direction: str
    trace: str | None = None
    queue: str | None = None
    queue_args: str | None = None

    def sets(self) -> list[str]:
        """The scenario overrides for this direction; :class:`EmuError` names
        the option for anything mm-link would not take or l4slab cannot do."""
        d, opt = self.direction, f"--{self.direction}link-queue"
        out: list[str] = []
        if self.trace is not None:
            path = Path(self.trace).expanduser()
            if path.is_file():
                trace = str(path.resolve())
            elif "/" not in self.trace and self.trace in shipped.trace_names():
                trace = self.trace  # a trace l4slab ships, by name
            else:
                raise EmuError(f"--{d}link-trace: no such file: {self.trace} (nor a trace "
                               f"l4slab ships: {', '.join(shipped.trace_names())})")  # fmt: skip
            out.append(f"bottleneck.{d}.rate={{ trace = {json.dumps(trace)} }}")
        if self.queue is None:
            if self.queue_args is not None:
                raise EmuError(f"{opt}-args needs {opt} (the queue the arguments are for)")
            return out
        if self.queue == "infinite":
            raise EmuError(f"{opt}: infinite: l4slab's queues are finite; write e.g. "
                           f"{opt}=droptail {opt}-args=packets=1000")  # fmt: skip
        if self.queue not in MAHIMAHI_QUEUES:
            raise EmuError(f"{opt}: unknown queue {self.queue!r}; choose one of: "
                           f"infinite, {', '.join(MAHIMAHI_QUEUES)}")  # fmt: skip
        kind, fixed = MAHIMAHI_QUEUES[self.queue]
        out.append(f"bottleneck.{d}.qdisc.kind={kind}")
        out.extend(f"bottleneck.{d}.qdisc.{p}" for p in fixed)
        for arg in (self.queue_args or "").split(","):
            if not arg.strip():
                continue
            name, eq, number = (x.strip() for x in arg.partition("="))
            if not eq or not number.isdigit():
                raise EmuError(
                    f"{opt}-args: {arg.strip()!r}: expected NAME=NUMBER, e.g. packets=100"
                )
            if name == "packets":
                out.append(f"bottleneck.{d}.buffer={number}pkt")
            elif name == "bytes":
                out.append(f"bottleneck.{d}.buffer={number}B")
            elif name in MAHIMAHI_TIMES and (kind, name) in _MAHIMAHI_TAKES:
                out.append(f"bottleneck.{d}.qdisc.{MAHIMAHI_TIMES[name]}={number}ms")
            else:
                takes = ", ".join(
                    ["bytes", "packets", *(n for k, n in _MAHIMAHI_TAKES if k == kind)]
                )
                raise EmuError(f"{opt}-args: {name!r} is not an argument of {self.queue}; "
                               f"it takes: {takes}")  # fmt: skip
        return out


#: Which queue takes which timed argument (mm-link: codel target and
#: interval; pie qdelay_ref and max_burst).
_MAHIMAHI_TAKES = {("codel", "target"), ("codel", "interval"), ("pie", "qdelay_ref"),
                   ("pie", "max_burst")}  # fmt: skip


def pcap_limit(text: str, pcap_dir: Path | None) -> int | None:
    """``--pcap-limit``'s bytes (``None`` without ``--pcap-dir``). Raises
    :class:`EmuInputError` for a size that is not one, and for a ``pcap_dir`` whose
    ``pcap/`` already holds files (a capture never replaces files it did not write)."""
    from l4slab import _native

    parsed = _native.quantity(text)
    if parsed is None or parsed[0] != "bytes" or parsed[1] < 1:
        raise EmuInputError(f"--pcap-limit: {text!r} is not a size (e.g. 500MB, 2GiB)")
    if pcap_dir is None:
        return None
    target = Path(pcap_dir) / "pcap"
    if target.is_dir() and any(target.iterdir()):
        raise EmuInputError(f"--pcap-dir: {target} already holds files; give a new or empty folder")
    if target.exists() and not target.is_dir():
        raise EmuInputError(f"--pcap-dir: {target} is a file, not a folder")
    return int(parsed[1])


def command_line(plan: Plan) -> list[str]:
    """The argument vector that runs the emulator with ``plan`` (e.g. a probe
    given to a shell as its COMMAND, or ``shlex.join``-ed as its server command).
    Raises :class:`EmuError` when there is no emulator."""
    return [*emulator_command(), to_json(plan)]


def checked(plan: _P) -> _P:
    """``plan``, once the emulator compiled into the native module has read it
    as the emulator process will. Raises :class:`EmuInputError` with the
    emulator's message (naming the field) for a plan it would refuse, e.g.
    ``Tuning(mtu=100)``. Without an emulator in the native module, the
    emulator process checks it when it starts.
    """
    try:
        from l4slab import _native
    except ImportError:
        return plan
    check = getattr(_native, "emu_plan_check", None)
    if check is not None:
        try:
            check(to_json(plan))
        except ValueError as exc:
            raise EmuInputError(str(exc)) from None
    return plan


def run_emulator(
    plan: Plan, *, capture: bool = False, capture_stderr: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the emulator with ``plan`` to completion, forwarding SIGTERM/SIGHUP/SIGINT to it.

    The emulator dies with the calling thread's process (module docs); this
    thread waits for it, so it outlives the emulator. Raises
    :class:`NotRootError` when not root, :class:`EmuError` when there is no
    emulator, and :class:`EmulatorDied` when a signal killed the emulator process
    (it handles SIGTERM, SIGHUP and SIGINT itself and exits 128 + the signal) or
    it panicked (its exit code then is not COMMAND's).
    """
    if not is_root():
        raise NotRootError(
            "l4slab emu needs root: it creates network namespaces and TUN devices. "
            "Run it as root (e.g. with sudo)."
        )
    # Where the emulator reports a panic (PANIC_FILE_ENV): a file with no name
    # (nothing to leave behind), opened by the emulator through our /proc entry.
    with tempfile.TemporaryFile() as panics:
        env = {**_child_env(), PANIC_FILE_ENV: f"/proc/{os.getpid()}/fd/{panics.fileno()}"}
        proc = subprocess.Popen(
            command_line(plan),
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.PIPE if capture or capture_stderr else None,
            text=True,
            env=env,
        )
        out, err = _wait(proc)
        panics.seek(0)
        panic = panics.read().decode(errors="replace").strip()
    if proc.returncode < 0:
        raise _died(proc, err)
    if panic:
        # The first panic: Rust writes its place, then its message, on two lines.
        first = " ".join(line.strip() for line in panic.splitlines()[:2])
        raise EmulatorDied(
            f"the emulator process (pid {proc.pid}) failed with an internal error, a bug "
            f"in l4slab (please report it): {first}; its exit code "
            f"{proc.returncode} is not COMMAND's. Its reaper removes the namespaces it made; "
            "`sudo l4slab emu cleanup` removes any that remain"
        )
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _wait(proc: subprocess.Popen[str]) -> tuple[str | None, str | None]:
    """Wait for the emulator, forwarding SIGTERM/SIGHUP (and SIGINT, when only we
    got it) to it; its stdout and stderr when captured."""

    def forward(signum: int, _frame: FrameType | None) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    handled = (signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, forward) for s in handled}
    try:
        while True:
            try:
                out, err = proc.communicate()
                break
            except KeyboardInterrupt:
                # The terminal sent SIGINT to the whole foreground group; if
                # only we got it, pass it on. Then wait for the teardown.
                forward(signal.SIGINT, None)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return out, err


def shell(plan: Shell) -> int:
    """Run ``plan.command`` in the client namespace behind the emulated link.

    Returns the command's exit code (128 + signal when it was killed or
    interrupted).
    """
    return run_emulator(plan).returncode


def timing_line(summary: dict[str, Any]) -> str:
    """One line on the emulator's timing accuracy from an emulated run's summary."""
    t = (summary.get("emulator") or {}).get("timing_error_us")
    if not t:
        return "emulator timing: no packets were forwarded"
    return (
        f"emulator timing error (actual - intended release, {t['samples']} packets): "
        f"p50 {t['p50']:.0f} us, p99 {t['p99']:.0f} us, p99.9 {t['p999']:.0f} us, "
        f"max {t['max']:.0f} us"
    )


def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read the JSON report an emulator run wrote with ``report=PATH``."""
    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return data


class EmuInputError(EmuError):
    """The scenario or an option is invalid for the emulator, or asks for what
    kernel TCP here cannot do (the message names the key and the reason)."""


def _scenario_file(text: str, source: str, tmp: Path) -> Path:
    """A file holding ``text`` whose stem is the scenario's default name."""
    stem = Path(source).stem if source.endswith(".toml") else "scenario"
    path = tmp / f"{stem}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def validate(text: str, source: str, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Resolve a scenario as the emulator will run it and check its flows
    against kernel TCP (no root needed). Raises :class:`EmuInputError`."""
    command = emulator_command()
    with tempfile.TemporaryDirectory(prefix="l4slab-emu-") as tmp:
        path = _scenario_file(text, source, Path(tmp))
        proc = subprocess.run(
            [*command, to_json(Validate(scenario=path, sets=tuple(overrides)))],
            capture_output=True,
            text=True,
            check=False,
            env=_child_env(),
        )
    if proc.returncode != 0:
        raise EmuInputError(_error_text(proc.stderr))
    resolved: dict[str, Any] = json.loads(proc.stdout)
    return resolved


def _error_text(stderr: str | None) -> str:
    text = (stderr or "").strip()
    return text.removeprefix("error: ") or "the emulator failed without a message"


def run_scenario(
    text: str,
    source: str,
    overrides: Iterable[str] = (),
    seed: int | None = None,
    *,
    tuning: Tuning | None = None,
    pcap_dir: Path | None = None,
) -> dict[str, Any]:
    """Run a scenario through the emulator with kernel TCP.

    Returns what ``l4slab._native.run`` returns (``summary_json``, ``series``,
    ``packets``, ``stats``), so :class:`l4slab.Results` takes it as it is. A
    scenario with ``pcap = true`` writes its capture files into ``pcap_dir``/pcap/.
    Raises :class:`NotRootError`, :class:`EmuInputError` (bad or unsupported
    scenario), :class:`EmuError`, or ``KeyboardInterrupt`` when interrupted.
    """
    with tempfile.TemporaryDirectory(prefix="l4slab-emu-") as tmp:
        path = _scenario_file(text, source, Path(tmp))
        out = Path(tmp) / "result.json"
        plan = Run(
            scenario=path,
            out=out,
            sets=tuple(overrides),
            seed=seed,
            pcap_dir=pcap_dir,
            tuning=tuning or Tuning(),
        )
        proc = run_emulator(plan, capture_stderr=True)
        if proc.returncode in (128 + signal.SIGINT, 128 + signal.SIGTERM, 128 + signal.SIGHUP):
            raise KeyboardInterrupt
        if proc.returncode == 2:
            raise EmuInputError(_error_text(proc.stderr))
        if proc.returncode != 0 or not out.is_file():
            raise EmuError(_error_text(proc.stderr))
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result
