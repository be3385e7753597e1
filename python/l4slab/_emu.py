"""The emulator process: ``python -m l4slab._emu PLAN`` is ``l4slab-emu PLAN``.

The emulator (crates/l4slab-emu) is compiled into the native module, so an
installed wheel needs no separate binary: :mod:`l4slab.emu` runs this module as
a process of its own with a plan (:mod:`l4slab.emu_plan`, as JSON), the
``l4slab-emu`` console script runs :func:`main`, and the emulator re-executes
:data:`SELF_COMMAND` for its crash reaper and runs it as the probes inside its
namespaces. It takes no options of its own (``--help`` says so): users run
``l4slab emu``.

Before handing the process to the emulator, the signal dispositions Python
changed at start-up are put back to what the standalone binary runs with:
SIGINT's default action (Python installs a handler that the emulator, holding
no GIL, would never run, so Ctrl-C would be ignored), and SIGXFSZ's (Python
ignores it; an ignored signal stays ignored in the programs the emulator
starts). SIGPIPE stays ignored, as in any Rust program; the emulator gives its
children the default back.
"""

from __future__ import annotations

import signal
import sys

#: The argument vector that runs this emulator again.
SELF_COMMAND = [sys.executable, "-m", "l4slab._emu"]


def _restore_signals() -> None:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)


def main(argv: list[str] | None = None) -> int:
    """Run the emulator with the plan in ``argv`` (``[PLAN]``); returns its exit code."""
    from l4slab import _native

    if not hasattr(_native, "emu_main"):
        print(
            "error: this build of l4slab has no emulator (it needs Linux)",
            file=sys.stderr,
        )
        return 1
    _restore_signals()
    args = sys.argv[1:] if argv is None else argv
    return _native.emu_main(args, SELF_COMMAND)


if __name__ == "__main__":
    sys.exit(main())
