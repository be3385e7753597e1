"""Shipped scenarios: ``l4slab examples``, and a scenario given by its name."""

from __future__ import annotations

from pathlib import Path

import pytest

from l4slab import shipped
from l4slab._read import read_scenario_file
from l4slab.cli import main

REPO = Path(__file__).resolve().parents[1]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_tree_and_the_package_hold_one_copy() -> None:
    # scenarios/examples/X and scenarios/golden/X are links, one per file, to the package's
    # data (a directory link would hide them from `find scenarios/...`); a file added to
    # one place and not linked from the other fails here.
    for sub in ("examples", "golden"):
        shipped_dir = REPO / "python" / "l4slab" / "data" / sub
        tree_dir = REPO / "scenarios" / sub
        assert not tree_dir.is_symlink() and tree_dir.is_dir(), tree_dir
        names = sorted(p.name for p in shipped_dir.iterdir())
        assert sorted(p.name for p in tree_dir.iterdir()) == names, sub
        for name in names:
            link = tree_dir / name
            assert link.is_symlink(), f"{link}: copy, not a link to {shipped_dir / name}"
            assert link.resolve() == (shipped_dir / name).resolve(), link


def test_every_example_and_golden_scenario_is_shipped_with_a_description() -> None:
    found = shipped.examples()
    on_disk = {
        p.stem for sub in ("examples", "golden") for p in (REPO / "scenarios" / sub).glob("*.toml")
    }
    assert set(found) == on_disk
    assert found["reno-20mbit"].parent.name == "examples"
    assert found["dualpi2-reno"].parent.name == "golden"
    assert shipped.example_description(found["reno-20mbit"]) == (
        "The default scenario: one Reno bulk download through a 20 Mbit/s"
    )
    assert all(shipped.example_description(p) for p in found.values()), "a file lacks its comment"


def test_a_bare_name_is_the_shipped_scenario_a_file_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shipped_file = shipped.examples()["reno-20mbit"]
    assert shipped.find_scenario(Path("reno-20mbit")) == shipped_file
    assert shipped.find_scenario(Path("reno-20mbit.toml")) == shipped_file
    (tmp_path / "reno-20mbit.toml").write_text("# mine\n")
    assert shipped.find_scenario(Path("reno-20mbit.toml")) == Path("reno-20mbit.toml")
    assert read_scenario_file(Path("reno-20mbit.toml")) == "# mine\n"
    # A path with a directory part is only ever that path.
    assert shipped.find_scenario(Path("x/reno-20mbit")) == Path("x/reno-20mbit")
    with pytest.raises(shipped.UnknownScenarioError, match=r"nope: no such file.*reno-20mbit"):
        shipped.find_scenario(Path("nope"))


def test_examples_lists_the_names_and_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "examples")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == len(shipped.examples())
    assert any(
        line.startswith("reno-20mbit ") and "one Reno bulk download" in line for line in lines
    )
    assert any(line.startswith("fifo-reno ") and line.endswith("(golden)") for line in lines)


def test_examples_copies_one_out_and_never_overwrites(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "examples", "reno-20mbit")
    assert code == 0, err
    assert "wrote reno-20mbit.toml" in err
    assert (tmp_path / "reno-20mbit.toml").read_bytes() == (
        shipped.examples()["reno-20mbit"].read_bytes()
    )
    # The same again: nothing to do, said so.
    code, _, err = run_cli(capsys, "examples", "reno-20mbit.toml")
    assert code == 0 and "already there, the same" in err
    # Edited: refused, the file kept.
    (tmp_path / "reno-20mbit.toml").write_text("# edited\n")
    code, _, err = run_cli(capsys, "examples", "reno-20mbit")
    assert code == 2
    assert "reno-20mbit.toml exists and differs" in err
    assert (tmp_path / "reno-20mbit.toml").read_text() == "# edited\n"
    # -o DIR, created.
    code, _, err = run_cli(capsys, "examples", "fifo-reno", "-o", "mine/here")
    assert code == 0, err
    assert (tmp_path / "mine" / "here" / "fifo-reno.toml").is_file()


def test_examples_refuses_an_unknown_name_listing_the_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_cli(capsys, "examples", "reno")
    assert code == 2
    assert "reno: not a shipped scenario" in err and "reno-20mbit" in err
    code, _, err = run_cli(capsys, "examples", "-o", "x")
    assert code == 2 and "give the NAME" in err


@pytest.mark.parametrize("command", ["run", "validate", "sweep"])
def test_a_scenario_command_takes_a_name_and_lists_the_names_when_unknown(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    native: object,
    command: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, command, "reno-2Ombit")
    assert code == 2
    assert "reno-2Ombit: no such file, nor a shipped scenario" in err
    assert "reno-20mbit" in err and "l4slab examples" in err
    assert not (tmp_path / "results").exists()


def test_run_a_shipped_scenario_by_name_from_anywhere(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    native: object,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "run", "fifo-reno", "--set", "duration=2s", "-q")
    assert code == 0, err
    assert (tmp_path / "results" / "fifo-reno" / "summary.json").is_file()
    code, out, err = run_cli(capsys, "validate", "reno-20mbit.toml")
    assert code == 0, err
    assert '"name": "reno-20mbit"' in out


def test_the_api_takes_a_name(native: object) -> None:
    import l4slab

    resolved = l4slab.validate("dualpi2-reno", overrides=["duration=2s"])
    assert resolved["name"] == "dualpi2-reno"
    assert resolved["duration"] == 2_000_000_000
