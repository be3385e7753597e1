"""The command line, driven through ``main(argv)``."""

from __future__ import annotations

import importlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console

from l4slab import _cli_base, cli, report_cli
from l4slab import run_cli as run_mod
from l4slab.cli import main
from l4slab.results import MANIFEST_FILE, RUN_FILE, SERIES_FILE, SUMMARY_FILE, load, write_bundle

# A short run keeps the suite fast; the scenario files define the rest.
SHORT = ["--set", "duration=3s"]


def flat(text: str) -> str:
    """Help and tables with box drawing and line wrapping undone, for substring checks."""
    return re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─┃┏┓┗┛━]", " ", text))


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- help


UNIT_EXAMPLES = ["20Mbit", "25ms", "1%", "10MB", "100pkt"]


def test_app_help_teaches_what_where_and_units(capsys):
    code, out, _ = run_cli(capsys, "--help")
    text = flat(out)

    assert code == 0
    assert "bottleneck" in text and "L4S" in text
    assert "l4slab run reno-20mbit" in text
    for unit in UNIT_EXAMPLES:
        assert unit in text, unit
    assert "results/<scenario name>/" in text
    for command in (
        "run",
        "validate",
        "show",
        "report",
        "compare",
        "reproduce",
        "sweep",
        "plot-sweep",
        "emu",
    ):
        assert re.search(rf"^\s*│?\s*{command}\b", out, re.M), command


@pytest.mark.parametrize("command", ["run", "validate"])
def test_scenario_command_help_has_example_units_and_results(capsys, command):
    code, out, _ = run_cli(capsys, command, "--help")
    text = flat(out)

    assert code == 0
    assert f"Example: l4slab {command} reno-20mbit" in text
    for unit in UNIT_EXAMPLES:
        assert unit in text, unit
    assert "results/<scenario name>/" in text
    assert "--set" in text


def test_run_help_names_its_options(capsys):
    _, out, _ = run_cli(capsys, "run", "--help")
    text = flat(out)

    for option in ("--out", "--seed", "--set", "--quiet", "KEY=VALUE"):
        assert option in text
    assert "exit code 2" in text


def test_show_help(capsys):
    code, out, _ = run_cli(capsys, "show", "--help")
    text = flat(out)

    assert code == 0
    assert "Example: l4slab show results/reno-20mbit" in text
    assert "Mbit/s" in text and "ms" in text
    assert "results/<scenario name>/" in text


def test_reproduce_help_has_example_outputs_and_exit_codes(capsys):
    code, out, _ = run_cli(capsys, "reproduce", "--help")
    text = flat(out)

    assert code == 0
    assert "Example: l4slab reproduce litespeed-bbr-loss" in text
    for option in ("--list", "--out", "--jobs", "--studies", "--no-report", "--quiet"):
        assert option in text
    assert "results/studies/<id>/" in text and "study.json" in text
    assert "exit code 0" in text.lower() and "docs/studies.md" in text


def test_unknown_option_is_a_usage_error(capsys):
    code, _, err = run_cli(capsys, "run", "--bogus", "x.toml")

    assert code == 2
    assert "--bogus" in err


def test_no_command_prints_help(capsys):
    code, out, _ = run_cli(capsys)

    assert code == 2
    assert "Usage" in out


# --------------------------------------------------------------------------- exit codes


def test_every_row_of_the_exit_code_table_is_an_error_class_no_earlier_row_shadows(native):
    seen: list[type[BaseException]] = []
    for row in _cli_base.EXIT_CODES:
        cls = getattr(importlib.import_module(row.module), row.name)
        assert isinstance(cls, type) and issubclass(cls, Exception), row
        shadow = [earlier.__name__ for earlier in seen if issubclass(cls, earlier)]
        assert not shadow, f"{row.name} is reported by the earlier row of {shadow}"
        seen.append(cls)


def _reported(
    capsys: pytest.CaptureFixture[str], exc: BaseException, **block: Any
) -> tuple[int, str]:
    """The exit code and the error line ``errors(**block)`` gives ``exc``."""
    with pytest.raises(typer.Exit) as caught, _cli_base.errors(**block):
        raise exc
    return caught.value.exit_code, capsys.readouterr().err.strip()


def test_errors_map_each_class_to_its_code_and_message(native, capsys):
    from l4slab import emu
    from l4slab.output import OutputDirError

    assert _reported(capsys, native.ScenarioError("k: bad")) == (2, "error: k: bad")
    assert _reported(capsys, native.SimulationError("boom")) == (
        1,
        "error: simulation failed: boom",
    )
    # A subclass before its base: OutputDirError is an OSError, but bad input.
    assert _reported(capsys, OutputDirError("d: not ours")) == (2, "error: d: not ours")
    assert _reported(capsys, KeyError("no flow 'x'"), reading=True) == (2, "error: no flow 'x'")
    assert _reported(capsys, OSError("disk full"), writing="results to d") == (
        1,
        "error: could not write results to d: disk full",
    )
    assert _reported(capsys, emu.EmuError("no emulator")) == (1, "error: no emulator")
    assert _reported(capsys, emu.EmuError("died"), emulation=True) == (
        1,
        "error: emulation failed: died",
    )
    assert _reported(capsys, emu.EmuError("bad --x"), input_only=True) == (2, "error: bad --x")
    assert _reported(capsys, FileExistsError("d: taken"), about="--out") == (
        2,
        "error: --out: d: taken",
    )


def test_user_text_in_errors_and_notes_is_printed_as_written(native, capsys, tmp_path):
    # rich's emoji codes (":b:" is an emoji) and markup ("[red]") in a file name or a
    # value the user wrote: shown as written, on both consoles.
    text = "a:b:c [red]x[/red] :smile:"
    assert _reported(capsys, native.ScenarioError(f"k: {text}")) == (2, f"error: k: {text}")
    code, _, err = run_cli(capsys, "validate", tmp_path / "a:b:c.toml")
    assert code == 2 and "a:b:c.toml" in err, err
    out = io.StringIO()
    console = _cli_base._stdout()
    console.file = out
    console.print(text, markup=False)
    assert out.getvalue().strip() == text


def test_errors_let_what_the_block_does_not_expect_through(capsys):
    # An OSError where nothing is written, a plain ValueError where no results are read,
    # an error the table does not know, and Ctrl-C without a message of the block's: not
    # an error line, the exception itself.
    for exc in (
        OSError("read failed"),
        ValueError("Out of range float values are not JSON compliant"),
        RuntimeError("a bug"),
        KeyboardInterrupt(),
    ):
        with pytest.raises(type(exc)), _cli_base.errors():
            raise exc
    assert capsys.readouterr().err == ""


def test_errors_say_what_ctrl_c_and_sigterm_stopped(capsys):
    def stopped(exc: KeyboardInterrupt) -> str:
        return f"{'terminated' if _cli_base.terminated(exc) else 'interrupted'}; nothing written"

    assert _reported(capsys, KeyboardInterrupt(), interrupted=stopped) == (
        130,
        "error: interrupted; nothing written",
    )
    assert _reported(capsys, _cli_base.Terminated(), interrupted=stopped) == (
        143,
        "error: terminated; nothing written",
    )


# --------------------------------------------------------------------------- show


def test_show_prints_the_tables_of_a_bundle(tmp_path, capsys, make_native_result):
    bundle = write_bundle(tmp_path / "res", make_native_result())

    code, out, err = run_cli(capsys, "show", bundle)

    assert code == 0, err
    assert "download" in out and "reno" in out and "bottleneck.down" in out
    assert "18.91" in out
    assert f"results: {bundle}/" in flat(out)


def test_show_of_a_non_bundle_exits_2(tmp_path, capsys):
    code, out, err = run_cli(capsys, "show", tmp_path)

    assert code == 2
    assert "not an l4slab results directory" in flat(err)
    assert out == ""


# --------------------------------------------------------------------------- run: no native needed


def test_run_of_a_missing_file_exits_2_and_writes_nothing(tmp_path, capsys):
    out_dir = tmp_path / "out"

    code, _, err = run_cli(capsys, "run", tmp_path / "nope.toml", "-o", out_dir)

    assert code == 2
    assert "nope.toml: no such file" in flat(err)
    assert not out_dir.exists()


@pytest.mark.parametrize("seed", ["-1", str(2**63), str(2**70), "seven"])
def test_a_bad_seed_exits_2_and_writes_nothing(native, example_scenario, tmp_path, capsys, seed):
    out_dir = tmp_path / "out"

    code, out, err = run_cli(capsys, "run", example_scenario, "-o", out_dir, "--seed", seed)

    assert code == 2
    assert "--seed" in flat(err)
    assert "Traceback" not in err and out == ""
    assert not out_dir.exists()


@pytest.mark.parametrize(
    ("sets", "key", "estimate"),
    [
        (["sample_interval=1us"], "sample_interval", "30,000,000 samples"),
        (["flows[0].count=100000"], "flows[0].count", "100,000 flows"),
        (
            ["duration=100h", "sample_interval=10s", "packet_trace=true"],
            "packet_trace",
            "packet-trace rows",
        ),
    ],
)
def test_a_run_past_the_limits_exits_2_before_anything_runs(
    native, example_scenario, tmp_path, capsys, sets, key, estimate
):
    out_dir = tmp_path / "out"
    overrides = [arg for s in sets for arg in ("--set", s)]

    code, out, err = run_cli(capsys, "run", example_scenario, "-o", out_dir, *overrides)

    assert code == 2
    assert flat(err).startswith(f"error: {key}: "), err
    assert estimate in flat(err)
    assert "--allow-large" in flat(err)
    assert out == ""
    assert list(tmp_path.iterdir()) == [], "nothing written, not even a staging directory"

    code, out, err = run_cli(capsys, "validate", example_scenario, *overrides)
    assert code == 2 and flat(err).startswith(f"error: {key}: ")


# A call is app-limited: the trace estimate counts it at the link's rate (both ways), an
# upper bound past the limit at 10 Gbit/s for 60 s, while the run itself is small.
APP_LIMITED = ["bottleneck.rate=10Gbit", "duration=60s", "packet_trace=true"]


def test_allow_large_lifts_the_limits(native, tmp_path, capsys):
    call = Path(__file__).parents[1] / "scenarios" / "examples" / "video-call.toml"
    sets = [*APP_LIMITED, 'flows=[{name="call", app="video_call"}]']
    overrides = [arg for s in sets for arg in ("--set", s)]

    code, _, err = run_cli(capsys, "run", call, "-o", tmp_path / "refused", *overrides)
    assert code == 2 and "error: packet_trace: about 600,000,000 packet-trace rows" in flat(err)

    code, _, err = run_cli(
        capsys, "run", call, "-o", tmp_path / "o", "--allow-large", "-q", *overrides
    )
    assert code == 0, err
    assert (tmp_path / "o" / "packets.parquet").is_file()


def test_validate_prints_the_estimated_cost(native, example_scenario, capsys):
    code, out, err = run_cli(capsys, "validate", example_scenario, "--set", "duration=10s")

    assert code == 0
    assert json.loads(out)["duration"] == 10_000_000_000
    assert re.match(
        r"estimated cost: 1 flow; 100 samples x \d+ = [\d,]+ series rows; no packet trace "
        r"\(limits: 5,000 flows, 20,000,000 series rows, 250,000,000 trace rows\)",
        flat(err),
    ), err


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: Path("/dev/zero"), "/dev/zero: more than 16 MiB"),
        (lambda tmp: tmp, "is a directory"),
        (lambda tmp: _write(tmp / "bin.toml", b"format = 1\n\xff\xfe"), "not UTF-8 text"),
    ],
)
def test_an_unreadable_scenario_exits_2_without_reading_it_whole(tmp_path, capsys, make, message):
    path = make(tmp_path)

    for command in ("run", "validate"):
        code, out, err = run_cli(capsys, command, path)
        assert code == 2, err
        assert message in flat(err) and "Traceback" not in err and out == ""


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_progress_bar_starts_only_after_a_second(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(run_mod.time, "monotonic", lambda: clock[0])
    console = Console(file=io.StringIO(), force_terminal=True, width=80)

    with run_mod._LazyProgress(console, enabled=True) as progress:
        progress(1.0, 10.0)
        clock[0] += 0.9
        progress(2.0, 10.0)
        assert progress._progress is None
        clock[0] += 0.2
        progress(3.0, 10.0)
        assert progress._progress is not None
        assert progress._progress.tasks[0].completed == 3.0
        assert progress._progress.tasks[0].total == 10.0
    assert not progress._progress.live.is_started


def test_disabled_progress_never_draws(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(run_mod.time, "monotonic", lambda: clock[0])
    progress = run_mod._LazyProgress(Console(file=io.StringIO()), enabled=False)
    clock[0] = 10.0
    progress(1.0, 2.0)

    assert progress._progress is None


# --------------------------------------------------------------------------- with the simulator


def test_version(native, capsys):
    code, out, _ = run_cli(capsys, "--version")

    assert code == 0
    assert out.strip() == f"l4slab {native.__version__}"


def test_run_writes_the_bundle_and_prints_the_table(native, example_scenario, tmp_path, capsys):
    out_dir = tmp_path / "out"

    code, out, err = run_cli(capsys, "run", example_scenario, "-o", out_dir, "--seed", "5", *SHORT)

    assert code == 0, err
    assert {SUMMARY_FILE, SERIES_FILE, RUN_FILE} <= {p.name for p in out_dir.iterdir()}
    res = load(out_dir)
    assert res.seed == 5
    assert res.flows(), "the scenario has flows"
    for flow in res.flows():
        assert flow in out
    assert "goodput" in out
    assert f"results: {out_dir}/" in flat(out)
    run_info = json.loads((out_dir / RUN_FILE).read_text())
    assert run_info["command"][:2] == ["l4slab", "run"]


def test_names_are_printed_as_written_never_as_rich_markup(
    native, example_scenario, tmp_path, capsys
):
    name = ":x: [red]hi[/red] [bold]b"

    code, out, err = run_cli(
        capsys, "run", example_scenario, "-o", tmp_path / "o", "--set", f"name={name!r}", *SHORT
    )
    assert code == 0, err
    assert f"flows — {name} (seed" in out

    code, out, _ = run_cli(capsys, "show", tmp_path / "o")
    assert code == 0 and f"flows — {name} (seed" in out


def test_run_says_when_the_seed_changes_nothing(native, example_scenario, tmp_path, capsys):
    code, out, err = run_cli(capsys, "run", example_scenario, "-o", tmp_path / "a", *SHORT)
    assert code == 0, err
    assert "(seed 1, nothing random: every seed gives these results)" in flat(out)
    assert load(tmp_path / "a").random_draws == 0

    code, out, err = run_cli(
        capsys, "run", example_scenario, "-o", tmp_path / "b", "--set", "bottleneck.loss=1%", *SHORT
    )
    assert code == 0, err
    assert "(seed 1)" in flat(out) and "nothing random" not in out
    assert load(tmp_path / "b").random_draws > 0


def test_run_quiet_prints_only_where_results_went(native, example_scenario, tmp_path, capsys):
    code, out, err = run_cli(
        capsys, "run", example_scenario, "-o", tmp_path / "q", "--quiet", *SHORT
    )

    assert code == 0, err
    assert out.strip().startswith(f"results: {tmp_path / 'q'}/")
    assert len(out.strip().splitlines()) == 1


def test_run_defaults_to_results_scenario_name(
    native, example_scenario, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    text = example_scenario.read_text()
    name = json.loads(native.validate(text, str(example_scenario), []))["name"]

    code, _, err = run_cli(capsys, "run", example_scenario, "--quiet", *SHORT)

    assert code == 0, err
    assert (tmp_path / "results" / name / SUMMARY_FILE).is_file()


def test_bad_scenario_exits_2_names_the_key_and_writes_nothing(
    native, example_scenario, tmp_path, capsys
):
    bad = tmp_path / "bad.toml"
    bad.write_text("no_such_key = 1\n" + example_scenario.read_text())
    out_dir = tmp_path / "out"

    code, out, err = run_cli(capsys, "run", bad, "-o", out_dir)

    assert code == 2
    assert "no_such_key" in err
    assert out == ""
    assert not out_dir.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_bad_override_exits_2_naming_the_key(native, example_scenario, tmp_path, capsys):
    out_dir = tmp_path / "out"

    code, _, err = run_cli(
        capsys, "run", example_scenario, "-o", out_dir, "--set", "bottleneck.rate=fast"
    )

    assert code == 2
    assert "bottleneck.rate" in err
    assert "20Mbit" in err or "Mbit" in err, "the message shows a valid example"
    assert not out_dir.exists()


def test_run_refuses_an_output_dir_that_is_not_a_bundle(native, example_scenario, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("keep me")

    code, _, err = run_cli(capsys, "run", example_scenario, "-o", tmp_path, *SHORT)

    assert code == 2
    assert "not an l4slab results directory" in flat(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_ctrl_c_during_a_run_exits_130_and_writes_nothing(
    native, example_scenario, tmp_path, capsys, monkeypatch
):
    calls = []

    def interrupt(self: run_mod._LazyProgress, sim_s: float, duration_s: float) -> None:
        calls.append(sim_s)
        raise KeyboardInterrupt

    monkeypatch.setattr(run_mod._LazyProgress, "__call__", interrupt)
    out_dir = tmp_path / "out"

    code, _, err = run_cli(capsys, "run", example_scenario, "-o", out_dir, "--set", "duration=60s")

    if not calls:
        pytest.skip("the run finished before its first progress call")
    assert code == 130
    assert "interrupted" in err
    assert not out_dir.exists()
    assert list(tmp_path.iterdir()) == []


def test_validate_prints_the_resolved_scenario(native, example_scenario, capsys):
    code, out, err = run_cli(capsys, "validate", example_scenario)

    assert code == 0, err
    resolved = json.loads(out)
    assert resolved["name"]
    assert resolved["flows"]


def test_set_override_changes_the_resolved_scenario(native, example_scenario, capsys):
    _, base_out, _ = run_cli(capsys, "validate", example_scenario)
    code, out, err = run_cli(capsys, "validate", example_scenario, "--set", "duration=7s")

    assert code == 0, err
    base, changed = json.loads(base_out), json.loads(out)
    assert changed["duration"] == 7_000_000_000  # resolved times are integer nanoseconds
    assert base["duration"] != changed["duration"]
    assert {k: v for k, v in base.items() if k != "duration"} == {
        k: v for k, v in changed.items() if k != "duration"
    }


def test_validate_of_a_bad_scenario_exits_2(native, example_scenario, tmp_path, capsys):
    code, out, err = run_cli(capsys, "validate", example_scenario, "--set", "bottleneck.delay=soon")

    assert code == 2
    assert "bottleneck.delay" in err
    assert out == ""


# --------------------------------------------------------------------------- never destroy
#
# Issue 10: l4slab replaces only what its manifest says it wrote. On the code before the
# fix, each of these directories was swapped out whole (user files deleted), a symlink
# was replaced by a directory, and an unwritable -o failed only after the simulation.

REPO = Path(__file__).resolve().parent.parent


def test_a_user_figure_survives_report_and_a_re_run(native, example_scenario, tmp_path, capsys):
    out_dir = tmp_path / "out"
    assert run_cli(capsys, "run", example_scenario, "-o", out_dir, "-q", *SHORT)[0] == 0
    (out_dir / "figures").mkdir()
    mine = out_dir / "figures" / "mine.png"
    mine.write_bytes(b"my figure")

    code, _, err = run_cli(capsys, "report", out_dir)

    assert code == 0, err
    assert mine.read_bytes() == b"my figure"
    manifest = json.loads((out_dir / MANIFEST_FILE).read_text())
    figures = [f for f, writer in manifest["files"].items() if writer == "report"]
    assert "report.html" in figures and any(f.startswith("figures/") for f in figures)
    assert "figures/mine.png" not in manifest["files"]

    code, _, err = run_cli(capsys, "run", example_scenario, "-o", out_dir, "-q", *SHORT)

    assert code == 2
    assert "figures/mine.png is not l4slab's" in flat(err)
    assert mine.read_bytes() == b"my figure"
    assert (out_dir / "report.html").is_file(), "the refused run changed nothing"


def test_report_replaces_only_its_own_earlier_figures(native, example_scenario, tmp_path, capsys):
    out_dir = tmp_path / "out"
    run_cli(capsys, "run", example_scenario, "-o", out_dir, "-q", *SHORT)
    assert run_cli(capsys, "report", out_dir)[0] == 0
    # An earlier report drew a figure this one does not.
    manifest = json.loads((out_dir / MANIFEST_FILE).read_text())
    manifest["files"]["figures/gone.svg"] = "report"
    (out_dir / MANIFEST_FILE).write_text(json.dumps(manifest))
    (out_dir / "figures" / "gone.svg").write_text("<svg/>")
    (out_dir / "notes.txt").write_text("mine")

    code, _, err = run_cli(capsys, "report", out_dir)

    assert code == 0, err
    assert not (out_dir / "figures" / "gone.svg").exists()
    assert "figures/gone.svg" not in json.loads((out_dir / MANIFEST_FILE).read_text())["files"]
    assert (out_dir / "notes.txt").read_text() == "mine"


def test_report_refuses_to_overwrite_a_file_it_did_not_write(
    native, example_scenario, tmp_path, capsys
):
    out_dir = tmp_path / "out"
    run_cli(capsys, "run", example_scenario, "-o", out_dir, "-q", *SHORT)
    (out_dir / "report.html").write_text("my own page")

    code, _, err = run_cli(capsys, "report", out_dir)

    assert code == 2
    assert "report.html" in flat(err) and "did not write it" in flat(err)
    assert (out_dir / "report.html").read_text() == "my own page"
    assert not (out_dir / "figures").exists()


def test_compare_keeps_a_user_figure(native, example_scenario, tmp_path, capsys):
    a, b, out_dir = tmp_path / "a", tmp_path / "b", tmp_path / "cmp"
    run_cli(capsys, "run", example_scenario, "-o", a, "-q", *SHORT)
    run_cli(capsys, "run", example_scenario, "-o", b, "-q", "--seed", "2", *SHORT)
    (out_dir / "figures").mkdir(parents=True)
    (out_dir / "figures" / "mine.png").write_bytes(b"my figure")

    for _ in range(2):  # a first comparison, then a second one over it
        code, _, err = run_cli(
            capsys, "compare", a, b, "-o", out_dir, "--label", "x", "--label", "y"
        )
        assert code == 0, err

    assert (out_dir / "figures" / "mine.png").read_bytes() == b"my figure"
    assert (out_dir / "compare.html").is_file()


def test_a_summary_json_and_a_user_file_are_not_a_bundle(
    native, example_scenario, tmp_path, capsys
):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / SUMMARY_FILE).write_text("{}")
    (out_dir / "run.json").write_text("my notes")

    code, _, err = run_cli(capsys, "run", example_scenario, "-o", out_dir, *SHORT)

    assert code == 2
    assert "no .l4slab-manifest.json" in flat(err)
    assert (out_dir / "run.json").read_text() == "my notes"
    assert sorted(p.name for p in out_dir.iterdir()) == ["run.json", SUMMARY_FILE]


def test_an_unwritable_output_exits_2_before_simulating(
    native, example_scenario, tmp_path, capsys, monkeypatch
):
    calls = []
    monkeypatch.setattr(native, "run", lambda *args, **kwargs: calls.append(args))
    (tmp_path / "file").write_text("not a directory")

    code, out, err = run_cli(capsys, "run", example_scenario, "-o", tmp_path / "file" / "out")

    assert code == 2
    assert "cannot write results" in flat(err) and "-o" in err
    assert calls == [], "nothing was simulated"
    assert out == ""


def test_a_symlinked_output_is_followed(native, example_scenario, tmp_path, capsys):
    real, link = tmp_path / "real", tmp_path / "link"
    link.symlink_to(real)  # dangling at first

    for seed in ("1", "2"):
        code, out, err = run_cli(
            capsys, "run", example_scenario, "-o", link, "-q", "--seed", seed, *SHORT
        )
        assert code == 0, err

    assert link.is_symlink() and link.resolve() == real
    assert load(real).seed == 2
    assert f"{link} -> {real}" in flat(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_two_names_that_clean_up_alike_never_overwrite_each_other(
    native, example_scenario, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    text = example_scenario.read_text()
    first, second = tmp_path / "first.toml", tmp_path / "second.toml"
    first.write_text(f'name = "a b"\n{text}')
    second.write_text(f'name = "a-b"\n{text}')
    target = tmp_path / "results" / "a-b"

    assert run_cli(capsys, "run", first, "-q", *SHORT)[0] == 0
    code, _, err = run_cli(capsys, "run", second, "-q", *SHORT)

    assert code == 2
    assert "'a b'" in err and "'a-b'" in err and "-o" in err
    assert load(target).name == "a b"
    # The same scenario again replaces its own results; -o gives the other its own place.
    assert run_cli(capsys, "run", first, "-q", "--seed", "3", *SHORT)[0] == 0
    assert load(target).seed == 3
    assert run_cli(capsys, "run", second, "-q", "-o", "results/a-b-2", *SHORT)[0] == 0


def test_same_name_from_another_file_is_refused(
    native, example_scenario, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").mkdir()
    copy = tmp_path / "x" / example_scenario.name
    copy.write_text(example_scenario.read_text())

    assert run_cli(capsys, "run", example_scenario, "-q", *SHORT)[0] == 0
    code, _, err = run_cli(capsys, "run", copy, "-q", *SHORT)

    assert code == 2
    # The example's own path (scenarios/examples links to the package's data/examples).
    assert str(copy) in flat(err) and str(example_scenario.resolve()) in flat(err)


def test_a_killed_runs_leftover_is_removed_by_the_next_run(
    native, example_scenario, tmp_path, capsys
):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    leftover = tmp_path / f".out.tmp-{child.pid}-0123abcd"
    leftover.mkdir()
    (leftover / "packets.parquet").write_bytes(b"half written")
    kept = tmp_path / f".out.tmp-{child.pid}-4567abcd"
    kept.mkdir()
    (kept / "diary.txt").write_text("mine")

    code, _, err = run_cli(capsys, "run", example_scenario, "-o", tmp_path / "out", "-q", *SHORT)

    assert code == 0, err
    assert not leftover.exists()
    assert (kept / "diary.txt").read_text() == "mine"
    assert "note:" in err and "diary.txt" in flat(err)


def test_sigterm_mid_run_exits_143_and_leaves_nothing(native, example_scenario, tmp_path):
    out_dir = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    command = [sys.executable, "-m", "l4slab", "run", str(example_scenario), "-o", str(out_dir)]
    command += ["-q", "--set", "duration=900s", "--set", "packet_trace=true"]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    try:
        # The run is under way once its trace streams into the staging directory.
        deadline = time.monotonic() + 300
        while not list(tmp_path.glob(".out.tmp-*/packets.parquet")):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"no trace in a staging directory: {proc.communicate()}")
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    assert proc.returncode == 143, err  # not -15: the CLI handled the signal
    assert "terminated (SIGTERM); nothing was written" in flat(err)
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == [], "no bundle, no staging directory"


def test_progress_names_the_trace_being_written():
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with run_mod._LazyProgress(
        console, enabled=True, delay=0.0, label="simulating, writing packets.parquet"
    ) as progress:
        progress(1.0, 10.0)
        assert progress._progress is not None
        columns = progress._progress.columns
    assert any(
        getattr(c, "text_format", "") == "simulating, writing packets.parquet" for c in columns
    )


def test_the_progress_bars_columns():
    """The run's bar (its label, simulated seconds, no "ETA") and a sweep's or study's
    (the task, whole items, "ETA") are drawn by the one _Bar._start_bar."""
    console = Console(file=io.StringIO(), force_terminal=True, width=100)

    def texts(bar: _cli_base._Bar) -> list[str]:
        assert bar._progress is not None
        return [getattr(c, "text_format", type(c).__name__) for c in bar._progress.columns]

    with run_mod._LazyProgress(console, enabled=True, delay=0.0) as run_bar:
        run_bar(1.0, 10.0)
        assert texts(run_bar) == [
            "simulating",
            "BarColumn",
            "{task.completed:.1f} of {task.total:.1f} s",
            "TimeElapsedColumn",
            "TimeRemainingColumn",
        ]
    with _cli_base._Bar() as runs_bar:
        runs_bar._start_bar(console, 4, runs_bar._of("runs"))
        assert texts(runs_bar) == [
            "{task.description}",
            "BarColumn",
            "{task.completed} of {task.total} runs",
            "TimeElapsedColumn",
            "ETA",
            "TimeRemainingColumn",
        ]


def test_sigterm_in_any_command_exits_143(tmp_path, capsys, monkeypatch, make_native_result):
    bundle = write_bundle(tmp_path / "res", make_native_result())

    def terminated(*args: object, **kwargs: object) -> None:
        raise _cli_base.Terminated  # what the SIGTERM handler raises

    monkeypatch.setattr(report_cli, "_write_report", terminated)

    code, _, err = run_cli(capsys, "report", bundle)

    assert code == 143
    assert "terminated (SIGTERM)" in err


def test_main_handles_sigterm_only_while_it_runs(tmp_path, capsys, monkeypatch, make_native_result):
    bundle = write_bundle(tmp_path / "res", make_native_result())
    before = signal.getsignal(signal.SIGTERM)
    during = []

    def report(directory: Path, *, flow: str | None, tsg_window: object = None) -> Path:
        during.append(signal.getsignal(signal.SIGTERM))
        return directory / "report.html"

    monkeypatch.setattr(report_cli, "_write_report", report)

    code, _, err = run_cli(capsys, "report", bundle)

    assert code == 0, err
    assert during == [cli._on_sigterm]
    assert signal.getsignal(signal.SIGTERM) is before
