"""The command line, driven through ``main(argv)``."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from l4slab import cli
from l4slab.cli import main
from l4slab.results import RUN_FILE, SERIES_FILE, SUMMARY_FILE, load, write_bundle

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
    assert "l4slab run scenarios/examples/reno-20mbit.toml" in text
    for unit in UNIT_EXAMPLES:
        assert unit in text, unit
    assert "results/<scenario name>/" in text
    for command in ("run", "validate", "show", "report", "compare", "reproduce", "emu"):
        assert re.search(rf"\b{command}\b", text)
    for later in ("sweep",):
        assert not re.search(rf"^\s*│?\s*{later}\b", out, re.M), f"no stub for {later}"


@pytest.mark.parametrize("command", ["run", "validate"])
def test_scenario_command_help_has_example_units_and_results(capsys, command):
    code, out, _ = run_cli(capsys, command, "--help")
    text = flat(out)

    assert code == 0
    assert f"Example: l4slab {command} scenarios/examples/reno-20mbit.toml" in text
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


def test_progress_bar_starts_only_after_a_second(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(cli.time, "monotonic", lambda: clock[0])
    console = Console(file=io.StringIO(), force_terminal=True, width=80)

    with cli._LazyProgress(console, enabled=True) as progress:
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
    monkeypatch.setattr(cli.time, "monotonic", lambda: clock[0])
    progress = cli._LazyProgress(Console(file=io.StringIO()), enabled=False)
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

    def interrupt(self: cli._LazyProgress, sim_s: float, duration_s: float) -> None:
        calls.append(sim_s)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli._LazyProgress, "__call__", interrupt)
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
