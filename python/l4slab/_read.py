"""Reading a scenario file, bounded: a scenario is a few kilobytes of TOML, so a path
that names ``/dev/zero``, a FIFO that never ends or a multi-gigabyte file is refused
after :data:`MAX_SCENARIO_BYTES` instead of filling the memory."""

from __future__ import annotations

from pathlib import Path

__all__ = ["MAX_SCENARIO_BYTES", "ScenarioFileError", "read_scenario_file"]

#: The largest scenario file l4slab reads (16 MiB; the shipped ones are under 10 kB).
MAX_SCENARIO_BYTES = 16 << 20


class ScenarioFileError(OSError):
    """A scenario file that cannot be read; the message names the path and why."""


def read_scenario_file(path: Path) -> str:
    """The UTF-8 text of the scenario file ``path``, read at most up to the limit; a bare
    name that is no file is a shipped scenario's (:func:`l4slab.shipped.find_scenario`)."""
    from l4slab.shipped import find_scenario

    path = find_scenario(path)
    if path.is_dir():
        raise ScenarioFileError(f"{path}: is a directory; give a scenario .toml file")
    try:
        with path.open("rb") as file:
            data = file.read(MAX_SCENARIO_BYTES + 1)
    except FileNotFoundError:
        raise ScenarioFileError(f"{path}: no such file; give a scenario .toml file") from None
    except OSError as exc:
        raise ScenarioFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_SCENARIO_BYTES:
        raise ScenarioFileError(
            f"{path}: more than {MAX_SCENARIO_BYTES >> 20} MiB; a scenario is a small TOML "
            "file (see docs/scenarios.md)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioFileError(
            f"{path}: not UTF-8 text (byte {exc.start}); a scenario is a TOML file"
        ) from None
