"""What users read is true: each shipped study's README holds the results its shipped
study.json records, that study.json belongs to the study.toml beside it, every figure
the study writes is shown, and no shipped study cites our working notes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from l4slab.cli import main
from l4slab.studies import StudyError, find_studies, load_study, readme
from l4slab.studies.runner import study_json

REPO = Path(__file__).resolve().parent.parent
STUDIES = REPO / "python" / "l4slab" / "data" / "studies"
SHIPPED = find_studies(STUDIES)


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_the_readme_shows_what_the_shipped_study_json_records(folder):
    study = load_study(folder)
    outcome, text = readme.load_shipped(study)
    # the study.json is this study.toml's: read back, it is written out the same
    assert study_json(outcome) == text, (
        f"{folder / 'study.json'} does not match study.toml; run "
        f"l4slab reproduce {study.id} --write-readme"
    )
    assert readme.shipped_section(study) == readme.readme_section(outcome), (
        f"{folder / 'README.md'}: its results section is not the one study.json gives; run "
        f"l4slab reproduce {study.id} --write-readme"
    )


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_figure_is_shipped_and_shown_and_no_other(folder):
    study = load_study(folder)
    names = {f"{figure.name}.png" for figure in study.figures}
    assert {p.name for p in folder.glob("*.png")} == names
    section = readme.shipped_section(study)
    for name in names:
        assert f"]({name})" in section


def test_no_shipped_study_cites_the_working_notes(native, capsys):
    for path in STUDIES.rglob("*"):
        if path.is_file() and path.suffix in (".toml", ".md", ".json"):
            assert "STUDIES.md" not in path.read_text(encoding="utf-8"), path
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert "STUDIES.md" not in out and "studies in" in out


def _small_study(tmp_path: Path) -> Path:
    from test_study_run import SCENARIO, STUDY

    folder = tmp_path / "studies" / "tiny"
    folder.mkdir(parents=True)
    (folder / "s.toml").write_text(SCENARIO)
    (folder / "study.toml").write_text(STUDY)
    begin = readme.BEGIN.format(id="tiny")
    (folder / "README.md").write_text(f"# tiny\n\nintro\n\n{begin}\nold\n{readme.END}\n\nafter\n")
    (folder / "old.png").write_bytes(b"stale")
    return folder


def test_write_readme_fills_the_section_and_a_stale_one_fails_the_check(native, tmp_path, capsys):
    folder = _small_study(tmp_path)

    code = main(
        ["reproduce", str(folder), "-o", str(tmp_path / "out"), "-j", "1", "--write-readme"]
    )

    assert code == 1  # the study's impossible claim fails; the README still says so
    out = capsys.readouterr().out
    assert "removed old.png (no figure of the study)" in re.sub(r"\s+", " ", out)
    text = (folder / "README.md").read_text()
    assert text.startswith("# tiny\n\nintro\n\n") and text.endswith("\n\nafter\n")
    assert "5 simulations; 1 of 2 claims hold — **FAIL**" in text
    assert "![Time against rate](time.png)" in text and "![Time-sequence graphs](tsg.png)" in text
    assert sorted(p.name for p in folder.glob("*.png")) == ["time.png", "tsg.png"]
    study = load_study(folder)
    outcome, shipped = readme.load_shipped(study)
    assert study_json(outcome) == shipped
    assert readme.shipped_section(study) == readme.readme_section(outcome)
    # a number edited by hand in the README no longer matches
    (folder / "README.md").write_text(text.replace("| slower |", "| slower (edited) |", 1))
    assert readme.shipped_section(study) != readme.readme_section(outcome)
    # a claim changed in study.toml after the run: study.json no longer belongs to it
    toml = (folder / "study.toml").read_text().replace("value = 1.5", "value = 1.6")
    (folder / "study.toml").write_text(toml)
    changed = load_study(folder)
    outcome, shipped = readme.load_shipped(changed)
    assert study_json(outcome) != shipped
    # a claim removed from study.json: a clear error, not a crash
    doc = json.loads(shipped)
    doc["claims"] = doc["claims"][:1]
    with pytest.raises(StudyError, match=r"not a study\.json of tiny"):
        readme.outcome_from_json(changed, doc)


def test_write_readme_needs_the_markers_and_refuses_robust(native, tmp_path, capsys):
    folder = _small_study(tmp_path)
    (folder / "README.md").write_text("# tiny\n")
    code = main(["reproduce", str(folder), "-o", str(tmp_path / "o"), "-j", "1", "--write-readme"])
    err = capsys.readouterr().err
    assert code == 2 and "expected the generated section once" in re.sub(r"\s+", " ", err)
    code = main(["reproduce", str(folder), "--write-readme", "--robust"])
    assert code == 2 and "give it without --robust" in capsys.readouterr().err
    shutil.rmtree(folder)
