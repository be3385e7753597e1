"""SIGTERM as an exception, without the CLI's imports (the fast start of
``send``/``serve``, :mod:`l4slab._start`, installs it before Typer loads)."""

from __future__ import annotations

__all__ = ["Terminated", "on_sigterm"]


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: handled like Ctrl-C (nothing half-written), exit code 143."""


def on_sigterm(signum: int, frame: object) -> None:
    """A ``signal.signal`` handler: raise :class:`Terminated` in the main thread."""
    raise Terminated
