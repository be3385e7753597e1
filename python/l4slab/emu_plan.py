"""The emulator's plans: what one run of the emulator process is asked to do.

One frozen dataclass per emulator sub-command. This module is the one
declaration of what each takes and of every field's default: ``l4slab emu``
(:mod:`l4slab.emu_cli`, whose options take their defaults from here and hold
their help), :mod:`l4slab.emu`, ``l4slab run --backend emu`` and ``l4slab
check-l4s`` build plans, and :func:`to_json` writes one as the JSON the
emulator process reads (``l4slab-emu PLAN``, ``python -m l4slab._emu PLAN``).
The native side (crates/l4slab-emu/src/plan.rs) reads it into one Rust type per
sub-command: it declares no default and refuses a field it does not know, so
what is written here is what runs, and a plan from another version fails at
once, naming the field.

The addresses are the emulator's (crates/l4slab-emu/src/netns.rs, given to
COMMAND as ``$L4SLAB_SERVER`` etc.); the probes take them from here.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import ClassVar

__all__ = [
    "CLIENT_ADDR",
    "PCAP_LIMIT",
    "SERVER_ADDR",
    "SERVER_ECN_ADDR",
    "Cleanup",
    "EcnCheck",
    "EcnReflect",
    "Ping",
    "Plan",
    "Run",
    "Shell",
    "TcpSend",
    "TcpSink",
    "Tuning",
    "Validate",
    "to_json",
]

#: The client namespace's address (``$L4SLAB_CLIENT``).
CLIENT_ADDR = "10.77.0.1"
#: The server namespace's address (``$L4SLAB_SERVER``).
SERVER_ADDR = "10.77.0.2"
#: The same server; its route negotiates classic ECN for kernel TCP (``$L4SLAB_SERVER_ECN``).
SERVER_ECN_ADDR = "10.77.0.3"

#: A path given to the emulator (written as ``os.fspath``).
PathArg = str | os.PathLike[str]


@dataclass(frozen=True, kw_only=True)
class Tuning:
    """How the forwarder process runs (part of :class:`Shell` and :class:`Run`)."""

    #: The TUN devices' MTU, 576 to 9000.
    mtu: int = 1500
    #: Busy-wait this many µs before each deadline (more CPU, less timing error).
    spin_us: int = 0
    #: Shortest forwarder sleep in µs: packets due within it leave together.
    #: 25 µs halves the forwarder's CPU use at 500 Mbit/s and adds at most
    #: 25 µs to the timing error (docs/PERFORMANCE.md).
    min_sleep_us: int = 25
    #: Pin the forwarder to the last CPU, everything else to the others.
    pin: bool = True
    #: Run the forwarder SCHED_FIFO.
    realtime: bool = True
    #: Write segments released together as one GSO packet.
    coalesce: bool = True
    #: Packets that are not understood: counted and carried as Not-ECT (``"pass"``)
    #: or dropped (``"drop"``); the emulator refuses any other value, naming the field.
    malformed: str = "pass"


#: The default size limit of a shell's capture (``--pcap-limit``): a run with no end
#: must not fill the disk; a headers-only record is 56-76 bytes, so about 15 M packets.
PCAP_LIMIT = "1GB"


@dataclass(frozen=True, kw_only=True)
class Shell:
    """``l4slab emu -- COMMAND``: COMMAND behind an emulated bottleneck."""

    NAME: ClassVar[str] = "shell"
    command: tuple[str, ...]
    #: Overrides of the shell's base scenario (``bottleneck.rate=20Mbit``;
    #: :func:`l4slab.emu.link_sets` makes them from link options).
    sets: tuple[str, ...] = ()
    #: Run with ``sh -c`` in the server namespace before COMMAND.
    server_command: str | None = None
    #: Write the run's JSON report here.
    report: PathArg | None = None
    #: Both namespaces' default TCP congestion control: Linux's own default
    #: (net/ipv4/Kconfig ``DEFAULT_TCP_CONG``), whatever the host uses.
    cc: str = "cubic"
    #: Capture the bottleneck's packets (headers) into ``pcap_dir/pcap/*.pcap``.
    pcap_dir: PathArg | None = None
    #: The most the capture files may hold in all, in bytes (``None``: no limit); at
    #: the limit they stop growing and the report counts the packets left out.
    pcap_limit: int | None = None
    #: No banner or timing line.
    quiet: bool = False
    #: Sample the queues every second and write each sample (with the forwarder's
    #: counters) to this file as JSON, replaced atomically: ``l4slab gateway``'s live view.
    live: PathArg | None = None
    tuning: Tuning = field(default_factory=Tuning)


@dataclass(frozen=True, kw_only=True)
class Run:
    """``l4slab run SCENARIO --backend emu``: the results go to ``out`` as JSON."""

    NAME: ClassVar[str] = "run"
    scenario: PathArg
    out: PathArg
    sets: tuple[str, ...] = ()
    #: ``None``: the scenario's seed.
    seed: int | None = None
    #: A scenario with ``pcap = true`` writes ``pcap_dir/pcap/*.pcap``.
    pcap_dir: PathArg | None = None
    tuning: Tuning = field(default_factory=Tuning)


@dataclass(frozen=True, kw_only=True)
class Validate:
    """Resolve a scenario as the emulator runs it (prints it, with notes, as JSON)."""

    NAME: ClassVar[str] = "validate"
    scenario: PathArg
    sets: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Cleanup:
    """Remove the namespaces and state that killed runs left behind."""

    NAME: ClassVar[str] = "cleanup"


@dataclass(frozen=True, kw_only=True)
class Ping:
    """ICMP echoes, run inside a namespace; prints JSON."""

    NAME: ClassVar[str] = "ping"
    addr: str = SERVER_ADDR
    count: int = 10
    interval_ms: int = 100
    #: Payload bytes (at most 1400 are sent).
    size: int = 56


@dataclass(frozen=True, kw_only=True)
class TcpSend:
    """A kernel TCP sender with ``TCP_INFO`` samples, inside a namespace; prints JSON."""

    NAME: ClassVar[str] = "tcp_send"
    #: ``ADDR:PORT``.
    addr: str
    cc: str = "cubic"
    seconds: float = 5.0
    sample_ms: int = 10


@dataclass(frozen=True, kw_only=True)
class TcpSink:
    """A kernel TCP receiver, inside a namespace; prints JSON."""

    NAME: ClassVar[str] = "tcp_sink"
    port: int = 5001


@dataclass(frozen=True, kw_only=True)
class EcnReflect:
    """The ECN check's reflector, in the server namespace: UDP ``port``, TCP ``port + 1``."""

    NAME: ClassVar[str] = "ecn_reflect"
    port: int = 7000


@dataclass(frozen=True, kw_only=True)
class EcnCheck:
    """The ECN check, in the client namespace; prints its JSON report, exit code 0
    when the path is fit for L4S, 3 when not."""

    NAME: ClassVar[str] = "ecn_check"
    addr: str = SERVER_ADDR
    tcp_addr: str = SERVER_ECN_ADDR
    port: int = 7000
    #: Probes per codepoint and direction.
    count: int = 20


Plan = Shell | Run | Validate | Cleanup | Ping | TcpSend | TcpSink | EcnReflect | EcnCheck


def to_json(plan: Plan) -> str:
    """The plan as the emulator reads it: ``{"<sub-command>": {every field}}``."""
    return json.dumps({plan.NAME: asdict(plan)}, default=os.fspath, separators=(",", ":"))
