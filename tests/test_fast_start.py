"""``l4slab send``/``serve`` start before the CLI loads (issue 25): l4slab._start."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from l4slab import _start, cli, endpoints

PYTHON_DIR = str(Path(_start.__file__).resolve().parent.parent)
HEAVY = ("typer", "rich", "click", "numpy", "pyarrow", "matplotlib")


def test_the_option_table_is_the_typer_declaration() -> None:
    declared = _start.declared_options()
    assert declared == _start.OPTIONS, f"paste into l4slab/_start.py OPTIONS:\n{declared!r}"


ARGVS = [
    ["send", "192.0.2.1"],
    ["send", "--cc", "prague", "[::1]:4433", "-t", "3", "--no-ecn-validation"],
    ["send", "h", "--ecn=ect1", "-p", "5000", "-i", "0.5", "--app", "file:1MB", "-o", "out/x"],
    ["send", "h", "--bind", "10.0.0.1", "--connect-timeout", "2s", "--duration=500ms"],
    ["serve"],
    ["serve", "--bind", "127.0.0.1", "-p", "5000", "--once", "--max-sessions", "4"],
    ["serve", "--idle-timeout", "3", "--time-limit", "2", "-o", "d", "-i", "2"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: " ".join(a))
def test_the_fast_reading_is_the_clis(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["l4slab", *argv])
    seen: list[Any] = []

    def capture(*args: object, **kwargs: object) -> Any:
        seen.append((args, kwargs))
        return (None, {}) if argv[0] == "send" else {}

    monkeypatch.setattr(endpoints, argv[0], capture)
    assert cli.main(argv) == 0
    parsed = _start.parse(argv)
    assert parsed is not None
    assert seen == [_start._call(*parsed)]


@pytest.mark.parametrize(
    "argv",
    [
        ["send"],
        ["send", "--help"],
        ["send", "h", "--bogus"],
        ["send", "h", "-t", "-1"],
        ["send", "h", "i"],
        ["send", "h", "--no-ecn-validation=1"],
        ["send", "h", "-p", "x"],
        ["serve", "-p", "0"],
        ["serve", "--", "x"],
        ["run", "x.toml"],
        [],
    ],
)
def test_anything_unusual_goes_to_the_cli(argv: list[str]) -> None:
    assert _start.parse(argv) is None


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": PYTHON_DIR, "PATH": "/usr/bin:/bin"},
        timeout=60,
    )


def test_the_first_packet_waits_for_no_cli_or_numpy_import() -> None:
    # The native run replaced by one that reports what is loaded, then fails:
    # the failure is replayed into the CLI, which reports it as its own.
    r = _run(
        f"""
        import sys
        from l4slab import _start, endpoints

        class Native:
            def send_run(self, options, on_line):
                print(sorted(m for m in {HEAVY!r} if m in sys.modules), flush=True)
                raise RuntimeError("socket gone")

        endpoints._native_mod = Native
        sys.argv = ["l4slab", "send", "127.0.0.1:9", "-t", "1"]
        sys.exit(_start.main())
        """
    )
    assert r.stdout.splitlines()[0] == "[]", r.stdout + r.stderr
    assert r.returncode == 1, r.stderr
    assert "error: socket gone" in r.stderr


@pytest.mark.skipif(not endpoints.available(), reason="no real endpoints in this build")
def test_fast_and_cli_paths_end_alike_with_no_server() -> None:
    argv = ["send", "127.0.0.1:9", "-t", "1", "--connect-timeout", "0.3"]
    runs = [
        subprocess.run(
            [sys.executable, "-m", module, *argv],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": PYTHON_DIR, "PATH": "/usr/bin:/bin"},
            timeout=60,
        )
        for module in ("l4slab", "l4slab.cli")
    ]
    # The same exit code, error and last line (the first names a random local port).
    fast, full = ((r.returncode, r.stderr, r.stdout.splitlines()[-1]) for r in runs)
    assert fast == full
    assert fast[0] == 1 and "no answer" in fast[2]
