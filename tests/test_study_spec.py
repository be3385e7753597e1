"""study.toml: sweep expansion, and errors that name the key path with a valid example."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from l4slab.studies import StudyError, find_studies, load_study
from l4slab.studies.spec import slug

REPO = Path(__file__).resolve().parent.parent
STUDIES = REPO / "scenarios" / "studies"

SCENARIO = """\
format = 1
duration = "2s"
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "100pkt"
[[flows]]
name = "file"
app = { kind = "file", size = "200kB" }
"""

VALID = """\
format = 1
title = "A small study"
source = "Nobody, Nowhere, 2026"

[[runs]]
name = "reno_{loss}"
scenario = "s.toml"
set = ["bottleneck.down.loss={loss}", 'bottleneck.qdisc={ kind = "fifo", head_drop = true }']
sweep = { loss = ["0%", "0.5%"] }
seeds = [1, 2]

[[runs]]
name = "cubic"
scenario = "s.toml"
set = ["flows[0].cc=cubic"]
group = "sensitivity"

[measures.time]
unit = "s"
path = "flows.file.completion_s"
published = { reno_0 = 1.0 }

[measures.lost]
path = ["flows", "file", "lost_packets"]
runs = ["reno_*"]

[[claims]]
text = "Loss slows Reno down"
expr = "time.reno_0_5 > time.reno_0"
why = "Because."
"""


def write_study(tmp_path: Path, text: str, name: str = "small") -> Path:
    folder = tmp_path / f"try{len(list(tmp_path.iterdir()))}" / name
    folder.mkdir(parents=True)
    (folder / "s.toml").write_text(SCENARIO)
    (folder / "study.toml").write_text(textwrap.dedent(text))
    return folder


def error_of(tmp_path: Path, text: str) -> str:
    folder = write_study(tmp_path, text)
    with pytest.raises(StudyError) as info:
        load_study(folder)
    message = str(info.value)
    assert message.startswith(f"{folder / 'study.toml'}: "), message
    return message.split(": ", 1)[1]


def test_a_valid_study_expands_its_sweeps(tmp_path):
    study = load_study(write_study(tmp_path, VALID))

    assert study.id == "small" and study.title == "A small study"
    assert [run.name for run in study.runs] == ["reno_0", "reno_0_5", "cubic"]
    first = study.runs[0]
    assert first.sets == (
        "bottleneck.down.loss=0%",
        'bottleneck.qdisc={ kind = "fifo", head_drop = true }',
    )
    assert first.vars == {"loss": "0%"}
    assert first.seeds == (1, 2)
    assert first.dirs() == ["reno_0/seed-1", "reno_0/seed-2"]
    assert study.runs[2].seeds == (None,) and study.runs[2].dirs() == ["cubic"]
    assert study.runs[2].group == "sensitivity"
    assert study.jobs == 5
    time, lost = study.measures
    assert time.runs == ("reno_0", "reno_0_5", "cubic") and time.published == {"reno_0": 1.0}
    assert lost.path == ("flows", "file", "lost_packets") and lost.runs == ("reno_0", "reno_0_5")
    assert study.claims[0].id == "c1" and study.claims[0].bound_text == "is true"


def test_slug_makes_run_names_from_values():
    assert slug("0.5%") == "0_5"
    assert slug("1000pkt") == "1000pkt"
    assert slug("25 ms") == "25_ms"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "format = 1",
            "format = 2",
            "format: unsupported version 2; this l4slab reads format = 1",
        ),
        (
            "format = 1\n",
            "",
            "format: missing; write e.g. format = 1",
        ),
        (
            'title = "A small study"\n',
            "",
            'title: missing; write e.g. title = "',
        ),
        (
            "[[runs]]\nname",
            "colour = 1\n[[runs]]\nname",
            "colour: unknown key; valid keys here: format, title",
        ),
        (
            "seeds = [1, 2]",
            "seeeds = [1, 2]",
            "runs[0].seeeds: unknown key; valid keys here: name, scenario, set",
        ),
        (
            "seeds = [1, 2]",
            "seeds = [1, -2]",
            "runs[0].seeds: expected a list of integers >= 0",
        ),
        (
            "seeds = [1, 2]",
            "seeds = [1, 1]",
            "runs[0].seeds: a seed is listed twice",
        ),
        (
            '"s.toml"\nset = ["flows',
            '"nope.toml"\nset = ["flows',
            "runs[1].scenario: nope.toml: no such file",
        ),
        (
            'set = ["flows[0].cc=cubic"]',
            'set = ["flows[0].cc"]',
            "runs[1].set[0]: 'flows[0].cc' is not KEY=VALUE",
        ),
        (
            'name = "reno_{loss}"',
            'name = "reno_{los}"',
            "runs[0].name: {los} is not a sweep variable; sweep variables: loss",
        ),
        (
            'name = "reno_{loss}"',
            'name = "reno"',
            "runs[0].name: the name must contain every sweep variable",
        ),
        (
            'name = "cubic"',
            'name = "reno_0"',
            "runs[1].name: run 'reno_0' is declared twice (also by runs[0])",
        ),
        (
            'name = "cubic"',
            'name = "cubic-1"',
            "runs[1].name: 'cubic-1' is not a run name",
        ),
        (
            'name = "cubic"',
            'name = "figures"',
            "runs[1].name: 'figures' is reserved",
        ),
        (
            'sweep = { loss = ["0%", "0.5%"] }',
            'sweep = { loss = ["0.5%", "0,5%"] }',
            "runs[0].sweep.loss: two values give the same run name",
        ),
        (
            'path = "flows.file.completion_s"',
            'metric = "nope"',
            "measures.time.metric: unknown metric 'nope'; registered metrics: delivery_burst",
        ),
        (
            'path = "flows.file.completion_s"',
            'path = "a.b"\nmetric = "flow_stat"',
            "measures.time: give either path",
        ),
        (
            'path = "flows.file.completion_s"',
            'metric = "flow_stat"\nargs = { flows = "*" }',
            "measures.time.args: key: missing argument of flow_stat",
        ),
        (
            'path = "flows.file.completion_s"',
            'metric = "flow_stat"\nargs = { flows = "*", key = "x", stat = "mode" }',
            "measures.time.args: stat: 'mode'; choose one of mean, median",
        ),
        (
            "published = { reno_0 = 1.0 }",
            "published = { reno_9 = 1.0 }",
            "measures.time.published.reno_9: no run 'reno_9' for this measure",
        ),
        (
            'runs = ["reno_*"]',
            'runs = ["bbr_*"]',
            "measures.lost.runs: 'bbr_*' matches no run",
        ),
        (
            'expr = "time.reno_0_5 > time.reno_0"',
            'expr = "time.reno_0_5 > lost.cubic"',
            "claims[0].expr: measure 'lost' has no run 'cubic'; its runs: reno_0, reno_0_5",
        ),
        (
            'expr = "time.reno_0_5 > time.reno_0"',
            'expr = "__import__(1)"',
            "claims[0].expr: function '__import__' is not allowed",
        ),
        (
            'why = "Because."',
            'why = "Because."\nrange = [2, 1]',
            "claims[0].range: low 2 is above high 1; write e.g. range = [0.9, 1.1]",
        ),
        (
            'why = "Because."',
            'why = "Because."\nrange = [1]',
            "claims[0].range: expected [low, high], found [1]; write e.g. range = [0.9, 1.1]",
        ),
        (
            'why = "Because."',
            'why = "Because."\nop = "<"',
            "claims[0].value: missing: op and value go together",
        ),
        (
            'why = "Because."',
            'why = "Because."\nop = "~"\nvalue = 1',
            "claims[0].op: '~': choose one of < <= > >= == !=",
        ),
        (
            'why = "Because."\n',
            "",
            'claims[0].why: missing; write e.g. why = "',
        ),
    ],
)
def test_errors_name_the_key_path(tmp_path, old, new, expected):
    assert old in VALID
    assert expected in error_of(tmp_path, VALID.replace(old, new, 1))


CALIBRATED = """
[[calibrated]]
parameter = "bottleneck.buffer"
value = "100pkt"
what = "the buffer: not published"
calibrated_from = "c1"
"""


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            CALIBRATED.replace('"c1"', '"c9"'),
            "calibrated[0].calibrated_from: no claim 'c9'; claims: c1",
        ),
        (
            CALIBRATED + CALIBRATED.replace("bottleneck.buffer", "bottleneck.rate"),
            "calibrated[1].calibrated_from: claim 'c1' already calibrates calibrated[0]",
        ),
        (CALIBRATED.replace('value = "100pkt"\n', ""), "calibrated[0].value: missing"),
        (CALIBRATED.replace("what =", "how ="), "calibrated[0].how: unknown key"),
        (CALIBRATED.replace('"c1"', "1"), "calibrated[0].calibrated_from: expected a non-empty"),
        ("\n[calibrated]\nparameter = 'x'\n", "calibrated: expected [[calibrated]] tables"),
        ("\n[robust]\nrate = 'x'\n", "robust.rate: expected a list of override keys"),
        ("\n[robust]\nrate = []\n", "robust.why: missing: say why"),
        ("\n[robust]\nrtt = []\n", "robust.rtt: unknown key; valid keys here: rate, delay, why"),
    ],
)
def test_calibration_and_robust_errors_name_the_key_path(tmp_path, extra, expected):
    assert expected in error_of(tmp_path, VALID + extra)


@pytest.mark.parametrize(
    ("holds", "expected"),
    [
        ("{ rate_min = 0.9 }", "claims[0].holds.why: missing"),
        ('{ why = "w" }', "claims[0].holds: missing: at least one of rate_min, rate_max"),
        ('{ rate_min = "x", why = "w" }', "claims[0].holds.rate_min: expected a number"),
        ('{ rate_min = 1.1, why = "w" }', "claims[0].holds.rate_min: the study's own setting"),
        ('{ rtt_max_ms = -1, why = "w" }', "claims[0].holds.rtt_max_ms: the study's own setting"),
        ('{ rtt_max = 1, why = "w" }', "claims[0].holds.rtt_max: unknown key"),
    ],
)
def test_a_claims_stated_range_errors_name_the_key_path(tmp_path, holds, expected):
    text = VALID.replace('why = "Because."\n', f'why = "Because."\nholds = {holds}\n', 1)
    assert expected in error_of(tmp_path, text)


def test_a_claims_stated_range_covers_the_moves_inside_it(tmp_path):
    holds = '{ rate_min = 0.9, rtt_max_ms = 0.5, why = "one packet\'s time" }'
    text = VALID.replace('why = "Because."\n', f'why = "Because."\nholds = {holds}\n', 1)
    claim = load_study(write_study(tmp_path, text)).claims[0]
    assert claim.holds is not None and claim.holds.why == "one packet's time"
    covers = claim.holds.covers
    assert covers("rate", 1.2) and not covers("rate", 0.8)
    assert covers("rtt", -5.0) and not covers("rtt", 5.0)
    assert covers("seeds", 0.0)
    assert load_study(write_study(tmp_path, VALID)).claims[0].holds is None


def test_a_calibrated_parameter_is_declared_with_its_claim(tmp_path):
    study = load_study(write_study(tmp_path, VALID + CALIBRATED))
    assert study.calibration("c1") is not None
    assert study.calibration("c1").value == "100pkt"  # type: ignore[union-attr]
    assert study.calibrated[0].parameter == "bottleneck.buffer"


@pytest.mark.parametrize("outside", ["../s.toml", "{abs}"])
def test_a_scenario_outside_the_study_is_refused(tmp_path, outside):
    # The file exists, one folder up: a study must not read it (nor any absolute path).
    folder = write_study(tmp_path, VALID)
    (folder.parent / "s.toml").write_text(SCENARIO)
    path = outside.format(abs=folder.parent / "s.toml")
    (folder / "study.toml").write_text(
        VALID.replace('scenario = "s.toml"', f'scenario = "{path}"', 1)
    )
    with pytest.raises(StudyError) as info:
        load_study(folder)
    message = str(info.value)
    assert "runs[0].scenario: " in message and "leaves the study directory" in message
    assert message.endswith(
        'write e.g. scenario = "s.toml" (a file in the study directory, copied there)'
    )
    # Through a sub-folder and back stays inside.
    (folder / "sub").mkdir()
    (folder / "study.toml").write_text(
        VALID.replace('scenario = "s.toml"', 'scenario = "sub/../s.toml"', 1)
    )
    assert load_study(folder)


def test_toml_syntax_errors_name_the_file(tmp_path):
    message = error_of(tmp_path, VALID + "oops = [\n")

    assert message.startswith("TOML syntax error")


def test_figures_are_checked(tmp_path):
    figure = """
[[figures]]
name = "time"
kind = "measure_plot"
title = "Time"
args = { measure = "time", x = [0, 0.5], series = { Reno = ["reno_0", "reno_9"] } }
"""
    message = error_of(tmp_path, VALID + figure)
    assert "figures[0].args: runs: no run 'reno_9' here" in message
    message = error_of(tmp_path, VALID + figure.replace('"measure_plot"', '"pie_chart"'))
    expected = "unknown figure kind 'pie_chart'; choose one of bars, cdf, measure_plot"
    assert f"figures[0].kind: {expected}" in message


def test_a_directory_without_study_toml(tmp_path):
    with pytest.raises(StudyError, match=r"no study\.toml here"):
        load_study(tmp_path)


def test_every_shipped_study_loads():
    found = find_studies(STUDIES)

    assert {path.name for path in found} >= {
        "litespeed-bbr-loss",
        "litespeed-small-file",
        "cheshire-codel-ecn",
        "cheshire-notsent-lowat",
        "l4s-building-blocks",
        "apple-video-call",
        "excentis-wifi",
        "wwdc15-wifi-assist",
    }
    for path in found:
        study = load_study(path)
        assert study.claims and study.figures and (path / "README.md").is_file()


def test_every_shipped_study_has_its_scenarios_valid(native, tmp_path):
    from l4slab.studies import check_scenarios

    for path in find_studies(STUDIES):
        check_scenarios(load_study(path))
    # and a broken override is reported with the run that has it
    folder = tmp_path / "broken"
    shutil.copytree(STUDIES / "cheshire-codel-ecn", folder)
    text = (folder / "study.toml").read_text().replace("flows[0].cc=reno", "flows[0].cc=nope", 1)
    (folder / "study.toml").write_text(text)
    with pytest.raises(
        StudyError, match=r"runs\[\d\] \(run reno_fifo, video.toml\): flows\[0\].cc"
    ):
        check_scenarios(load_study(folder))


def test_percentile_cdf_points_and_path_difference():
    from l4slab.studies.figures import percentile_points
    from l4slab.studies.metrics import METRICS

    summary = {
        "flows": {
            "game": {"rtt_ms": {"min": 8.0, "p50": 13.0, "p90": 20.0, "p99": 29.0, "max": 47.0}}
        }
    }
    xs, ys = percentile_points(summary, "flows.game.rtt_ms")
    # p999 is absent: left out, the others in order.
    assert xs == [8.0, 13.0, 20.0, 29.0, 47.0]
    assert ys == [0.0, 0.5, 0.9, 0.99, 1.0]
    with pytest.raises(ValueError, match="not a distribution"):
        percentile_points(summary, "flows.game.rtt_ms.p50")

    class Fake:
        pass

    fake = Fake()
    fake.summary = summary  # type: ignore[attr-defined]
    diff = METRICS["path_difference"]
    args = diff.check_args({"a": "flows.game.rtt_ms.p99", "b": "flows.game.rtt_ms.p50"})
    assert diff(fake, args) == pytest.approx(16.0)  # type: ignore[arg-type]
