"""SIGTERM as an exception, without the CLI's imports (the fast start of
``send``/``serve``, :mod:`l4slab._start`, installs it before Typer loads)."""

from __future__ import annotations

__all__ = ["Terminated", "note_sigterm", "on_sigterm", "reset_sigterm", "sigterm_seen"]

#: Whether SIGTERM arrived (since :func:`reset_sigterm`): exit code 143, not 130.
_seen = False


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: handled like Ctrl-C (nothing half-written), exit code 143."""


def on_sigterm(signum: int, frame: object) -> None:
    """A ``signal.signal`` handler: note SIGTERM and raise :class:`Terminated` in the
    main thread."""
    note_sigterm()
    raise Terminated


def note_sigterm() -> None:
    """Remember that SIGTERM arrived."""
    global _seen
    _seen = True


def sigterm_seen() -> bool:
    """Whether SIGTERM arrived since :func:`reset_sigterm`."""
    return _seen


def reset_sigterm() -> None:
    global _seen
    _seen = False
