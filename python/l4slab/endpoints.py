"""Real endpoints over UDP: ``l4slab send`` and ``l4slab serve`` as functions.

Both run in the native module (crates/l4slab-sendserve): the simulator's own
QUIC-style connection and stream apps, on a real UDP socket in real time. A
server answers only clients that prove their address (a Retry with an
address-validation token), bounds its sessions, and counts what it ignores;
see docs/send.md. This module turns their JSON results into
:class:`l4slab.Results` bundles (the results contract, docs/results.md).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from l4slab._types import NativeResult
    from l4slab.results import Results

# numpy and pyarrow (l4slab.results, l4slab.output) are imported only where a
# bundle is checked or written: a run starts sending before they load
# (issue 25: the first packet within about 100 ms of the command).

__all__ = [
    "DEFAULT_MAX_PER_ADDRESS",
    "DEFAULT_MAX_SESSIONS",
    "MAX_PARALLEL",
    "EndpointError",
    "EndpointInputError",
    "available",
    "send",
    "serve",
]

#: ``send -P``'s most connections (iperf3's limit; crates/l4slab-sendserve parallel.rs).
MAX_PARALLEL = 128
#: ``serve``'s defaults: one client at ``-P 128`` from an address, two in all.
DEFAULT_MAX_PER_ADDRESS = MAX_PARALLEL
DEFAULT_MAX_SESSIONS = 2 * MAX_PARALLEL


class EndpointError(RuntimeError):
    """A real endpoint could not run (no native support, the socket failed)."""


class EndpointInputError(EndpointError, ValueError):
    """An option's value is invalid; the message names it and shows a valid one."""


def available() -> bool:
    """Whether this build has the real endpoints (Linux)."""
    try:
        from l4slab import _native
    except ImportError:
        return False
    return hasattr(_native, "send_run")


def _native_mod() -> Any:
    try:
        from l4slab import _native
    except ImportError as exc:
        raise EndpointError(f"the native module l4slab._native is not built: {exc}") from None
    if not hasattr(_native, "send_run"):
        raise EndpointError("this build of l4slab has no real endpoints: they need Linux")
    return _native


def _print_line(line: str) -> None:
    print(line, flush=True)


def send(
    host: str,
    *,
    cc: str = "cubic",
    ecn: str | None = None,
    ecn_validation: bool = True,
    app: str = "bulk",
    duration: str = "10",
    interval: str = "1",
    port: int | None = None,
    bind: str | None = None,
    connect_timeout: str = "5",
    out: str | os.PathLike[str] | None = None,
    on_line: Callable[[str], None] = _print_line,
    command: Sequence[str] | None = None,
    quiet: bool = False,
    reverse: bool = False,
    parallel: int = 1,
) -> tuple[Results, dict[str, Any]]:
    """Send to an ``l4slab serve`` at ``host`` (``HOST``, ``HOST:PORT``, ``[V6]:PORT``).

    Returns the run as :class:`Results` (saved at ``out`` when given) and the raw
    result (``failure``: why it did not complete, or ``None``; ``interrupted``). A run
    with no handshake, or in which the server acknowledged nothing, is a failure; its
    bundle is still saved, with ``failure`` in ``summary.json`` saying why.
    Raises :class:`EndpointInputError` for a bad option before anything is sent.
    ``ecn_validation=False`` keeps marking whatever the path does (RFC 9000
    §13.4.2 off: a non-conforming sender, only to demonstrate the failure).
    ``quiet``: no report lines (``on_line`` is not called; ``send -J``).
    ``reverse`` (``-R``): the server sends with ``cc``, ``ecn`` and ``app``, and the
    flow is what arrived here. ``parallel`` (``-P``, 1 to :data:`MAX_PARALLEL`):
    connections at once, flows ``send-1`` ... ``send-N`` (``send`` alone for one).
    """
    native = _native_mod()
    target = None
    if out is not None:
        from l4slab.output import check_output_dir, output_path

        target = output_path(out)
        check_output_dir(target)
    options = {
        "target": host,
        "port": port,
        "cc": cc,
        "ecn": ecn,
        "ecn_validation": ecn_validation,
        "app": app,
        "duration": duration,
        "interval": interval,
        "bind": bind,
        "connect_timeout": connect_timeout,
        "reverse": reverse,
        "parallel": parallel,
    }
    try:
        lines = (lambda _line: None) if quiet else on_line
        raw: dict[str, Any] = json.loads(native.send_run(options, lines))
    except ValueError as exc:
        raise EndpointInputError(str(exc)) from None
    except RuntimeError as exc:
        raise EndpointError(str(exc)) from None
    from l4slab.results import Results

    native_result = cast("NativeResult", {**raw, "packets": None})
    results = Results.from_native(
        native_result, command=list(sys.argv if command is None else command)
    )
    if target is not None:
        results.save(target)
    return results, raw


def serve(
    *,
    bind: str | None = None,
    port: int = 4433,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    max_per_address: int = DEFAULT_MAX_PER_ADDRESS,
    handshake_timeout: str = "5",
    once: bool = False,
    interval: str = "1",
    idle_timeout: str = "10",
    time_limit: str | None = None,
    out: str | os.PathLike[str] | None = None,
    on_line: Callable[[str], None] = _print_line,
    command: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Serve ``l4slab send`` clients until Ctrl-C, ``time_limit``, or with ``once``
    the first session's end.

    With ``out``, each session's results are saved as it ends, at
    ``out/session-N/`` (only sessions that completed their handshake are
    reported), and the server's counters at ``out/server.json`` when it stops,
    however it stops (Ctrl-C and SIGTERM too). Returns the run: ``sessions``
    (their raw results, and ``path`` where saved), ``server`` (the counters:
    Retries, refused tokens and sessions, handshake timeouts, malformed
    datagrams, ...), ``driver``, ``listen``, ``interrupted``.
    """
    native = _native_mod()
    root = Path(out) if out is not None else None
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    saved: dict[int, Path] = {}
    argv = list(sys.argv if command is None else command)

    def on_session(text: str) -> None:
        if root is None:
            return
        from l4slab.output import check_output_dir, output_path
        from l4slab.results import Results

        raw = json.loads(text)
        target = output_path(root / f"session-{raw['session']}")
        check_output_dir(target)
        Results.from_native(cast("NativeResult", {**raw, "packets": None}), command=argv).save(
            target
        )
        saved[int(raw["session"])] = target
        on_line(f"[session-{raw['session']}] results in {target}")

    options = {
        "bind": bind,
        "port": port,
        "max_sessions": max_sessions,
        "max_per_address": max_per_address,
        "handshake_timeout": handshake_timeout,
        "once": once,
        "interval": interval,
        "idle_timeout": idle_timeout,
        "time_limit": time_limit,
    }
    try:
        run: dict[str, Any] = json.loads(native.serve_run(options, on_line, on_session))
    except ValueError as exc:
        raise EndpointInputError(str(exc)) from None
    except RuntimeError as exc:
        raise EndpointError(str(exc)) from None
    for s in run["sessions"]:
        if int(s["session"]) in saved:
            s["path"] = os.fspath(saved[int(s["session"])])
    if root is not None:
        _write_counters(root / "server.json", run, saved)
    return run


def _write_counters(path: Path, run: dict[str, Any], saved: dict[int, Path]) -> None:
    """``serve``'s counters as JSON, replaced whole (a new file renamed over the old)."""
    record = {
        "listen": run["listen"],
        "interrupted": bool(run.get("interrupted")),
        "server": run["server"],
        "driver": run["driver"],
        "sessions": {str(n): os.fspath(p) for n, p in sorted(saved.items())},
    }
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(path)
