"""The built wheel, installed as a user would: a fresh virtual environment, run from a
directory outside the source tree, so nothing of the checkout (sources, studies,
traces, a cargo-built emulator) can stand in for what the wheel lacks.

``./test.sh`` builds the wheel and names it in ``$L4SLAB_WHEEL`` (and sets
``$L4SLAB_REQUIRE_WHEEL=1``, so a missing wheel fails rather than skips). By hand::

    python3 -m pip wheel --no-deps -w target/wheels .
    L4SLAB_WHEEL=$(ls target/wheels/l4slab-*.whl) python3 -m pytest tests/test_wheel.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from doc_commands import environment, run_commands, runnable

pytestmark = pytest.mark.wheel

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "scenarios" / "examples" / "reno-20mbit.toml"


def _wheel() -> Path:
    name = os.environ.get("L4SLAB_WHEEL")
    if not name:
        if os.environ.get("L4SLAB_REQUIRE_WHEEL") == "1":
            pytest.fail("L4SLAB_REQUIRE_WHEEL=1 but L4SLAB_WHEEL names no wheel")
        pytest.skip("no wheel to test: set L4SLAB_WHEEL (./test.sh builds one)")
    path = Path(name)
    if not path.is_file():
        pytest.fail(f"L4SLAB_WHEEL={name} is not a file")
    return path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the venv's bin directory, a working directory outside the source tree)."""
    wheel = _wheel()
    root = tmp_path_factory.mktemp("wheel")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    bin_dir = env_dir / "bin"
    subprocess.run(
        [bin_dir / "python", "-m", "pip", "install", "--quiet", os.fspath(wheel)],
        check=True,
        env=_clean_env(bin_dir),
    )
    work = root / "work"
    work.mkdir()
    return bin_dir, work


def _clean_env(bin_dir: Path) -> dict[str, str]:
    """The environment of a user's shell with the venv first on PATH and nothing of ours."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("L4SLAB_", "PYTHON", "VIRTUAL_ENV", "CARGO_TARGET_DIR"))
    }
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _l4slab(
    installed: tuple[Path, Path], *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    bin_dir, work = installed
    return subprocess.run(
        [os.fspath(bin_dir / "l4slab"), *args],
        cwd=work,
        env=_clean_env(bin_dir),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_wheel_carries_the_studies_the_traces_and_the_native_module() -> None:
    names = set(zipfile.ZipFile(_wheel()).namelist())
    assert "l4slab/data/studies/litespeed-bbr-loss/study.toml" in names
    assert "l4slab/data/traces/TMobile-LTE-short.down" in names
    assert "l4slab/data/examples/reno-20mbit.toml" in names
    assert "l4slab/data/golden/dualpi2-reno.toml" in names
    assert any(n.startswith("l4slab/_native") and n.endswith(".so") for n in names), names
    assert "l4slab/py.typed" in names
    # Nothing from outside the package lands in site-packages.
    strays = sorted(
        n for n in names if not n.startswith(("l4slab/", "l4slab-")) or n.startswith("l4slab/..")
    )
    assert not strays, strays


def test_the_installed_package_is_the_wheel_not_the_checkout(
    installed: tuple[Path, Path],
) -> None:
    bin_dir, work = installed
    done = subprocess.run(
        [bin_dir / "python", "-c", "import l4slab, l4slab._native as n; print(l4slab.__file__)"],
        cwd=work,
        env=_clean_env(bin_dir),
        capture_output=True,
        text=True,
        check=True,
    )
    where = Path(done.stdout.strip()).resolve()
    assert REPO not in where.parents, where


def test_run_an_example_and_a_shipped_trace_outside_the_tree(
    installed: tuple[Path, Path],
) -> None:
    _, work = installed
    shutil.copy(EXAMPLE, work / "example.toml")
    done = _l4slab(installed, "run", "example.toml", "-o", "out/example", "--set", "duration=5s")
    assert done.returncode == 0, done.stderr
    assert (work / "out" / "example" / "summary.json").is_file()
    # A trace by name comes from the wheel's package data.
    done = _l4slab(
        installed,
        "run",
        "example.toml",
        "-o",
        "out/trace",
        "--set",
        "duration=5s",
        "--set",
        'bottleneck.down.rate={ trace = "TMobile-LTE-short.down" }',
        "--report",
    )
    assert done.returncode == 0, done.stderr
    assert "TMobile-LTE-short.down" in (work / "out" / "trace" / "summary.json").read_text()
    assert (work / "out" / "trace" / "report.html").is_file()


def test_the_readme_commands_run_from_any_folder(installed: tuple[Path, Path]) -> None:
    """Every command of the README's "Using l4slab" and later sections, as written (bar
    tests/doc_commands.py's skips and short durations), with only the wheel installed."""
    bin_dir, work = installed
    readme = work / "readme"
    readme.mkdir()
    cmds = runnable(root=False)["README.md"]
    assert any(c.text.startswith("l4slab run reno-20mbit") for c in cmds)
    failures = run_commands(cmds, readme, environment(bin_dir, _clean_env(bin_dir)))
    assert not failures, "\n\n".join(failures)
    assert (readme / "reno-20mbit.toml").is_file()  # l4slab examples reno-20mbit
    assert (readme / "results" / "aqms" / "compare.html").is_file()


def test_reproduce_lists_and_runs_a_shipped_study(installed: tuple[Path, Path]) -> None:
    _, work = installed
    listed = _l4slab(installed, "reproduce", "--list")
    assert listed.returncode == 0, listed.stderr
    for study in ("litespeed-bbr-loss", "apple-video-call", "l4s-building-blocks"):
        assert study in listed.stdout
    done = _l4slab(installed, "reproduce", "litespeed-bbr-loss", "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    # Its claims hold but two, declared model gaps (study.toml `gap`).
    assert "litespeed-bbr-loss: 6 of 8 claims hold, 2 a model gap — GAP" in done.stdout
    assert (work / "results" / "studies" / "litespeed-bbr-loss" / "study.json").is_file()


def test_reproduce_list_without_studies_is_an_error(installed: tuple[Path, Path]) -> None:
    _, work = installed
    (work / "empty").mkdir(exist_ok=True)
    done = _l4slab(installed, "reproduce", "--list", "--studies", "empty")
    assert done.returncode == 2
    assert "no studies in empty" in done.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="the emulator runs on Linux only")
@pytest.mark.skipif(os.geteuid() != 0, reason="the emulator needs root (namespaces, TUN)")
def test_the_emulator_comes_with_the_wheel(installed: tuple[Path, Path]) -> None:
    done = _l4slab(installed, "emu", "--", "true", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
