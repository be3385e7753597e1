"""The command line starts without the libraries it may not need (issue 32).

``l4slab --version`` is answered before Typer loads (:func:`l4slab._start.main`);
building the command tree (:func:`l4slab.cli.build_app`, what ``--help`` needs)
loads no rich, numpy, pyarrow, matplotlib or simulator; a command builds only its
own family; ``--help`` and ``validate`` never need numpy or pyarrow. Each case runs
in a fresh interpreter and lists what it loaded. Times are measured by
bench/startup.py, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

from l4slab import _start

PYTHON_DIR = str(Path(_start.__file__).resolve().parent.parent)
SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "examples" / "reno-20mbit.toml"
#: What building the whole command tree imports (of HEAVY).
TREE = ["l4slab.check_cli", "l4slab.cli", "l4slab.emu_cli", "l4slab.sweep_cli"]
HEAVY = (
    "typer",
    "rich",
    "numpy",
    "pyarrow",
    "matplotlib",
    "l4slab._native",
    "l4slab.cli",
    "l4slab.check_cli",
    "l4slab.emu_cli",
    "l4slab.sweep_cli",
    "l4slab.results",
    "l4slab.emu",
    "l4slab.check.measure",
)


def _run(code: str) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """Run ``code`` in a fresh interpreter; the HEAVY modules it loaded (printed last)."""
    tail = f"""
    import json, sys
    print(json.dumps(sorted({{m.split(".")[0] if m.split(".")[0] != "l4slab" else m
                             for m in sys.modules}} & set({HEAVY!r}))))
    """
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code) + textwrap.dedent(tail)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": PYTHON_DIR, "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.splitlines()[-1]), r


def test_the_command_tree_imports_only_typer() -> None:
    loaded, _ = _run(
        """
        from l4slab import cli
        app = cli.build_app()
        # FAMILIES names what each module's register() adds, in the order of --help.
        declared = [name for _, names in cli.FAMILIES for name in names]
        added = [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]
        assert sorted(added) == sorted(declared), (added, declared)
        for name in declared:
            one = cli.build_app([name, "--help"])
            assert [c.name for c in one.registered_commands + one.registered_groups] == [
                n for _, names in cli.FAMILIES if name in names for n in names
            ]
        """
    )
    # What `import typer` loads itself (older Typer, e.g. its floor 0.16, imports rich
    # at once; newer ones only when drawing) is Typer's, not the tree's.
    typer_alone, _ = _run("import typer")
    assert loaded == sorted({*TREE, *typer_alone})


def test_version_loads_only_the_simulator(native: ModuleType) -> None:
    loaded, r = _run(
        """
        from l4slab import _start
        assert _start.main(["--version"]) == 0
        """
    )
    assert loaded == ["l4slab._native"]
    assert r.stdout.splitlines()[0] == f"l4slab {native.__version__}"


def test_version_without_the_simulator_is_the_clis_error() -> None:
    # A missing build: the CLI explains how to build it (exit 1), as before.
    code = """
        import sys
        sys.modules["l4slab._native"] = None  # importing it raises ImportError
        from l4slab import _start
        sys.exit(_start.main(["--version"]))
        """
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": PYTHON_DIR, "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "error: l4slab._native, the compiled simulator, is not built" in r.stderr
    assert r.stdout == ""


def test_help_loads_no_numpy_pyarrow_or_matplotlib(native: ModuleType) -> None:
    loaded, r = _run(
        """
        from l4slab import cli
        assert cli.main(["--help"]) == 0
        """
    )
    # rich draws the help; the simulator names the qdiscs in emu's option help.
    assert loaded == ["l4slab._native", *TREE, "rich", "typer"]
    assert "Usage: l4slab" in r.stdout


def test_validate_loads_no_numpy_or_pyarrow_nor_other_commands(native: ModuleType) -> None:
    loaded, r = _run(
        f"""
        from l4slab import cli
        assert cli.main(["validate", {str(SCENARIO)!r}]) == 0
        """
    )
    assert loaded == ["l4slab._native", "l4slab.cli", "rich", "typer"]
    assert '"name"' in r.stdout
