"""``l4slab reproduce`` end to end on a tiny synthetic study, and the metric functions."""

from __future__ import annotations

import json
import os
import re
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from l4slab import load, studies
from l4slab.cli import main
from l4slab.studies.metrics import METRICS, MetricError, delivery_advances
from l4slab.studies.report import measures_data, pivot_data
from l4slab.studies.runner import Job, JobResult, evaluate, run_jobs

SCENARIO = """\
format = 1
duration = "3s"
packet_trace = true
[bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "50pkt"
[bottleneck.down]
loss = "1%"
[[flows]]
name = "file"
app = { kind = "file", size = "300kB" }
"""

STUDY = """\
format = 1
title = "Rate and loss"
source = "A test, 2026"
description = "A 300 kB file at two rates with 1 % loss."

[[runs]]
name = "rate_{rate}"
label = "{rate}"
scenario = "s.toml"
set = ["bottleneck.rate={rate}"]
sweep = { rate = ["5Mbit", "20Mbit"] }
seeds = [1, 2]

[[runs]]
name = "clean"
scenario = "s.toml"
set = ["bottleneck.down.loss=0%"]

[measures.time]
unit = "s"
path = "flows.file.completion_s"
published = { rate_20Mbit = 0.2 }

[measures.plateau]
unit = "ms"
metric = "delivery_plateau_max_ms"
args = { flow = "file" }

[measures.goodput]
unit = "Mbit/s"
path = "flows.file.goodput_bps"
scale = 1e-6

[[claims]]
id = "slower"
text = "A slower link takes longer"
expr = "time.rate_5Mbit / time.rate_20Mbit"
op = ">"
value = 1.5
why = "Four times less capacity."

[[claims]]
id = "impossible"
text = "A 20 Mbit/s link carries 100 Mbit/s"
expr = "goodput.rate_20Mbit"
range = [100, 200]
why = "It cannot: this claim must fail."

[[figures]]
name = "time"
kind = "measure_plot"
title = "Time against rate"
args = { measure = "time", x = [5, 20], series = { Reno = ["rate_5Mbit", "rate_20Mbit"] } }

[[figures]]
name = "tsg"
kind = "time_sequence"
title = "Time-sequence graphs"
args = { runs = ["rate_5Mbit", "clean"], flow = "file" }
"""


def make_study(root: Path, name: str = "tiny", study: str = STUDY) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "s.toml").write_text(SCENARIO)
    (folder / "study.toml").write_text(textwrap.dedent(study))
    return folder


def reproduce(capsys, *args: str | Path) -> tuple[int, str, str]:
    code = main(["reproduce", *[str(a) for a in args]])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_reproduce_writes_everything_and_fails_on_a_failing_claim(native, tmp_path, capsys):
    folder = make_study(tmp_path / "studies")
    out = tmp_path / "out"

    code, stdout, err = reproduce(capsys, folder, "-o", out, "--jobs", "1")

    assert code == 1, err
    text = flat(stdout)
    assert "tiny: main runs side by side" in text and "tiny: claims — 1 of 2 hold" in text
    assert re.search(r"slower .* PASS", text) and re.search(r"impossible .* FAIL", text)
    assert f"tiny: 1 of 2 claims hold — FAIL; results: {out / 'tiny'}/" in text
    target = out / "tiny"
    assert sorted(p.name for p in target.iterdir()) == [
        ".l4slab-manifest.json",
        "clean", "figures", "rate_20Mbit", "rate_5Mbit", "report.html", "study.json", "table.md",
    ]  # fmt: skip
    assert (target / "rate_5Mbit" / "seed-2" / "summary.json").is_file()
    assert load(target / "clean").packets is not None
    assert {p.name for p in (target / "figures").iterdir()} == {
        "time.png", "time.svg", "tsg.png", "tsg.svg",
    }  # fmt: skip
    page = (target / "report.html").read_text()
    assert "Rate and loss" in page and "A 20 Mbit/s link carries 100 Mbit/s" in page
    assert page.count("data:image/png;base64,") == 2 and "FAIL" in page
    table = (target / "table.md").read_text()
    assert "| measure | rate_5Mbit | rate_20Mbit | clean |" in table and "| slower |" in table

    study = json.loads((target / "study.json").read_text())
    assert study["study"] == "tiny" and study["verdict"] == "fail"
    assert (study["claims_passed"], study["claims_total"]) == (1, 2)
    verdicts = {c["id"]: c["verdict"] for c in study["claims"]}
    assert verdicts == {"slower": "pass", "impossible": "fail"}
    time = next(m for m in study["measures"] if m["name"] == "time")
    fast = time["values"]["rate_20Mbit"]
    assert set(fast["seeds"]) == {"1", "2"} and fast["published"] == 0.2
    assert fast["value"] == pytest.approx(np.mean(list(fast["seeds"].values())))
    runs = {run["name"]: run for run in study["runs"]}
    assert runs["rate_5Mbit"]["set"] == ["bottleneck.rate=5Mbit"]
    assert runs["rate_5Mbit"]["dirs"] == ["rate_5Mbit/seed-1", "rate_5Mbit/seed-2"]
    assert runs["clean"]["seeds"] == [1] and runs["clean"]["dirs"] == ["clean"]
    goodput = next(m for m in study["measures"] if m["name"] == "goodput")
    assert 1 < goodput["values"]["clean"]["value"] < 20


def test_a_declared_model_gap_is_reported_as_gap_not_fail(native, tmp_path, capsys):
    # The same failing claim with `gap`: reported GAP with the reason, the
    # study does not fail (exit 0), and study.json says so.
    study = STUDY.replace(
        'why = "It cannot: this claim must fail."',
        'why = "It cannot: this claim must fail."\ngap = "a 20 Mbit/s link is not faster"',
    )
    folder = make_study(tmp_path / "studies", study=study)
    out = tmp_path / "out"

    code, stdout, err = reproduce(capsys, folder, "-o", out, "--jobs", "1", "--no-report")

    assert code == 0, err
    text = flat(stdout)
    assert re.search(r"impossible .* GAP", text)
    assert "tiny: 1 of 2 claims hold, 1 a model gap — GAP" in text
    doc = json.loads((out / "tiny" / "study.json").read_text())
    assert (doc["verdict"], doc["claims_passed"], doc["claims_gaps"]) == ("gap", 1, 1)
    verdicts = {c["id"]: (c["verdict"], c["gap"]) for c in doc["claims"]}
    assert verdicts == {
        "slower": ("pass", None),
        "impossible": ("gap", "a 20 Mbit/s link is not faster"),
    }


def test_a_calibrated_claim_prints_calibrated_never_pass(native, tmp_path, capsys):
    # "slower" holds, but a parameter was fitted to it: CALIBRATED everywhere, not
    # counted as holding; the failing claim still fails the study.
    study = STUDY + textwrap.dedent(
        """
        [[calibrated]]
        parameter = "bottleneck.buffer"
        value = "50pkt"
        what = "the buffer: not published, fitted to the slow link's time"
        calibrated_from = "slower"
        """
    )
    folder = make_study(tmp_path / "studies", study=study)
    out = tmp_path / "out"

    code, stdout, err = reproduce(capsys, folder, "-o", out, "--jobs", "1")

    assert code == 1, err
    text = flat(stdout)
    assert re.search(r"slower .* CALIBRATED", text) and not re.search(r"slower .* PASS", text)
    assert "bottleneck.buffer = 50pkt was fitted to this claim" in text
    assert "tiny: 0 of 2 claims hold, 1 calibrated — FAIL" in text
    doc = json.loads((out / "tiny" / "study.json").read_text())
    assert (doc["claims_passed"], doc["claims_calibrated"], doc["verdict"]) == (0, 1, "fail")
    assert doc["calibrated"] == [
        {
            "parameter": "bottleneck.buffer",
            "value": "50pkt",
            "what": "the buffer: not published, fitted to the slow link's time",
            "calibrated_from": "slower",
        }
    ]
    claims = {c["id"]: (c["verdict"], c["calibrated"]) for c in doc["claims"]}
    assert claims == {"slower": ("calibrated", "bottleneck.buffer"), "impossible": ("fail", None)}
    page = (out / "tiny" / "report.html").read_text()
    assert ">CALIBRATED</td>" in page and "calibrated: bottleneck.buffer = 50pkt" in page
    assert "| slower |" in (out / "tiny" / "table.md").read_text()
    assert "CALIBRATED" in (out / "tiny" / "table.md").read_text()


ROBUST_STUDY = """\
format = 1
title = "Round trip"
source = "A test, 2026"

[[runs]]
name = "clean"
scenario = "s.toml"
set = ["bottleneck.down.loss=0%"]

[[runs]]
name = "lossy"
scenario = "s.toml"
seeds = [1, 2]

[measures.rtt]
unit = "ms"
path = "flows.file.rtt_ms.min"

[measures.time]
unit = "s"
path = "flows.file.completion_s"

[[claims]]
id = "short"
text = "The round trip is under 22 ms"
expr = "rtt.clean"
op = "<"
value = 22
why = "20 ms of delay: it holds nominally and must not 5 ms later."

[[claims]]
id = "done"
text = "The lossy file arrives"
expr = "time.lossy"
op = ">"
value = 0
why = "It always does."
"""


def test_robust_marks_a_claim_a_moved_setup_flips_fragile(native, tmp_path, capsys):
    folder = make_study(tmp_path / "studies", name="rt", study=ROBUST_STUDY)
    out = tmp_path / "out"

    code, stdout, err = reproduce(capsys, folder, "-o", out, "-j", "1", "--robust", "--no-report")

    assert code == 0, err
    # the cost first: 3 nominal simulations; robust adds 2 seeds x 2 runs + 4 x 3
    assert "3 simulations + 16 robust (seeds+2, rate x0.8, rate x1.2, rtt -5ms, rtt +5ms)" in flat(
        err
    )
    text = flat(stdout)
    assert re.search(r"short .* PASS FRAGILE: rtt \+5ms FAIL \(25\)", text), text
    assert re.search(r"done .* PASS steady in all 5", text)
    assert "rt: 2 of 2 claims hold, 1 FRAGILE — PASS" in text
    doc = json.loads((out / "rt" / "study.json").read_text())
    robust = doc["robust"]
    assert robust["fragile"] == ["short"]
    assert robust["claims"]["short"]["flips"] == ["rtt +5ms"]
    assert robust["claims"]["short"]["variants"]["rtt -5ms"]["verdict"] == "pass"
    # "clean" draws nothing: no more seeds, and one simulation per moved setup
    assert robust["simulations"] == 2 + 4 + 4 * 2
    sets = {v["name"]: v["set"] for v in robust["variants"]}
    assert sets["rate x0.8"]["clean"] == [
        "bottleneck.down.rate=16000000bit",
        "bottleneck.up.rate=16000000bit",
    ]
    assert sets["rtt +5ms"]["lossy"] == [
        "bottleneck.down.delay=12500000ns",
        "bottleneck.up.delay=12500000ns",
    ]
    # the robust cells went through the store, and it is gone once complete
    assert not (out / ".rt.cells").exists()
    assert sorted(p.name for p in (out / "rt").iterdir() if not p.name.startswith(".")) == [
        "clean", "lossy", "study.json", "table.md",
    ]  # fmt: skip
    assert "FRAGILE: rtt +5ms FAIL" in (out / "rt" / "table.md").read_text()
    # the default reproduce runs no robust cell and writes no robust key
    code, _, err = reproduce(capsys, folder, "-o", tmp_path / "plain", "-j", "1", "--no-report")
    assert code == 0 and "robust" not in err
    assert "robust" not in json.loads((tmp_path / "plain" / "rt" / "study.json").read_text())


def test_robust_reports_the_moves_outside_a_claims_stated_range(native, tmp_path, capsys):
    # "short" is stated to hold up to the study's own RTT: rtt +5ms lies outside, so
    # its FAIL there is reported beside the claim and does not make it FRAGILE.
    holds = 'holds = { rtt_max_ms = 0, why = "20 ms of delay: 5 ms more is 25" }\n'
    study = ROBUST_STUDY.replace('must not 5 ms later."\n', 'must not 5 ms later."\n' + holds)
    folder = make_study(tmp_path / "studies", name="rt", study=study)
    out = tmp_path / "out"

    code, stdout, err = reproduce(capsys, folder, "-o", out, "-j", "1", "--robust", "--no-report")

    assert code == 0, err
    text = flat(stdout)
    assert re.search(
        r"short .* PASS steady in the 4 within its stated range; "
        r"outside its stated range: rtt \+5ms FAIL \(25\)",
        text,
    ), text
    assert "rt: 2 of 2 claims hold — PASS" in text
    robust = json.loads((out / "rt" / "study.json").read_text())["robust"]
    assert robust["fragile"] == []
    assert robust["claims"]["short"]["flips"] == []
    assert robust["claims"]["short"]["outside"] == ["rtt +5ms"]
    assert robust["claims"]["short"]["variants"]["rtt +5ms"]["verdict"] == "fail"
    assert robust["claims"]["done"]["outside"] == []


def test_robust_resumes_from_the_cell_store(native, tmp_path, monkeypatch):
    from l4slab.studies import runner

    folder = make_study(tmp_path / "studies", name="rt", study=ROBUST_STUDY)
    study = studies.load_study(folder)
    calls = []
    real = runner.execute

    def failing(job, root):
        calls.append(job.run)
        if job.run == "lossy@rtt+5":
            raise runner.JobError("run", "killed")
        return real(job, root)

    monkeypatch.setattr(runner, "execute", failing)
    with pytest.raises(runner.JobError):
        studies.reproduce(study, tmp_path / "out", workers=1, report=False, robust=True)
    first = len(calls)
    calls.clear()
    monkeypatch.setattr(runner, "execute", real)
    reused = []
    outcome = studies.reproduce(
        study,
        tmp_path / "out",
        workers=1,
        report=False,
        robust=True,
        on_done=lambda r: reused.append(r.reused),
    )
    assert outcome.robust.fragile(outcome) == ["short"]
    # every cell that finished before the failure was read back, not simulated again
    assert sum(reused) == first - 1 and first > 10


@pytest.mark.parametrize(
    ("robust", "expected"),
    [
        ('rate = ["bottleneck.down.nope"]', "robust.rate: bottleneck.down.nope is no rate of run"),
        ("delay = []", "robust.why: missing"),
    ],
)
def test_robust_keys_that_hold_no_rate_are_a_study_error(
    native, tmp_path, capsys, robust, expected
):
    study = ROBUST_STUDY + f"\n[robust]\n{robust}\n"
    folder = make_study(tmp_path / "studies", name="rt", study=study)

    code, _, err = reproduce(capsys, folder, "-o", tmp_path / "out", "--robust", "--no-report")

    assert code == 2 and expected in flat(err), err
    assert not (tmp_path / "out" / "rt").exists()


def test_study_json_is_byte_identical_across_runs_and_worker_counts(native, tmp_path, capsys):
    folder = make_study(tmp_path / "studies")

    first, _, _ = reproduce(capsys, folder, "-o", tmp_path / "a", "-j", "1", "-q", "--no-report")
    second, _, _ = reproduce(capsys, folder, "-o", tmp_path / "b", "-j", "2", "-q", "--no-report")

    assert first == second == 1
    a = (tmp_path / "a" / "tiny" / "study.json").read_bytes()
    b = (tmp_path / "b" / "tiny" / "study.json").read_bytes()
    assert a == b
    # and again into the same place: the earlier results are replaced
    third, _, _ = reproduce(capsys, folder, "-o", tmp_path / "a", "-j", "1", "-q", "--no-report")
    assert third == 1 and (tmp_path / "a" / "tiny" / "study.json").read_bytes() == a


SEEDS_STUDY = """\
format = 1
title = "Seeds"
source = "A test, 2026"

[[runs]]
name = "lossy"
scenario = "s.toml"
seeds = [1, 2]

[[runs]]
name = "steady"
scenario = "s.toml"
set = ["bottleneck.down.loss=0%"]
seeds = [1, 2, 3]

[measures.time]
unit = "s"
path = "flows.file.completion_s"

[[claims]]
id = "loss_costs_time"
text = "Loss costs time"
expr = "time.steady"
range = [0.1, 1]
why = "300 kB at 20 Mbit/s."
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_with_nothing_random_runs_once_for_all_its_seeds(native, tmp_path, capsys, jobs):
    folder = make_study(tmp_path / "studies", "seeds", SEEDS_STUDY)
    out = tmp_path / "out"

    code, _, err = reproduce(capsys, folder, "-o", out, "-j", jobs)

    assert code == 0, err
    target = out / "seeds"
    assert sorted(p.name for p in (target / "steady").iterdir()) == ["seed-1"]
    assert sorted(p.name for p in (target / "lossy").iterdir()) == ["seed-1", "seed-2"]
    study = json.loads((target / "study.json").read_text())
    runs = {run["name"]: run for run in study["runs"]}
    assert runs["steady"]["seeds"] == [1] and runs["steady"]["seeds_declared"] == [1, 2, 3]
    assert runs["steady"]["seed_matters"] is False
    assert runs["steady"]["dirs"] == ["steady/seed-1"]
    assert runs["lossy"]["seeds"] == [1, 2] and runs["lossy"]["seed_matters"] is True
    time = next(m for m in study["measures"] if m["name"] == "time")["values"]
    assert list(time["steady"]["seeds"]) == ["1"]
    assert time["steady"]["value"] == time["steady"]["seeds"]["1"]
    assert load(target / "steady" / "seed-1").random_draws == 0
    assert load(target / "lossy" / "seed-1").random_draws > 0
    page = (target / "report.html").read_text()
    assert "1 (nothing random: stands for 1, 2, 3)" in page
    # The row-per-run table (long groups) says why the spread column is empty.
    outcome = studies.reproduce(studies.load_study(folder), tmp_path / "api", workers=1)
    rows = {row.cells[1]: row.cells[-1] for row in measures_data(outcome).rows}
    assert rows["steady"] == "same for every seed"
    assert rows["lossy"].endswith("(n=2)")


def test_an_interrupted_study_resumes_from_its_cell_store(native, tmp_path):
    """A study stopped part-way keeps the runs that finished (the cell store beside its
    directory, one bundle per cell key); the next reproduce reads them back instead of
    simulating them again, and gives the same study.json as an uninterrupted one."""
    good = make_study(tmp_path / "studies", "seeds", SEEDS_STUDY)
    out = tmp_path / "out"
    clean = studies.reproduce(studies.load_study(good), tmp_path / "clean", workers=1)
    expected = (tmp_path / "clean" / "seeds" / "study.json").read_bytes()

    # The same runs, but a measure that fails on the 'steady' run (the third job): the
    # two 'lossy' seeds are complete when the study stops.
    bad = make_study(
        tmp_path / "broken",
        "seeds",
        SEEDS_STUDY.replace(
            "[measures.time]",
            '[measures.other]\nunit = "s"\npath = "flows.nope.x"\nruns = ["steady"]\n\n'
            "[measures.time]",
        ),
    )
    with pytest.raises(studies.StudyError, match=r"flows\.nope\.x"):
        studies.reproduce(studies.load_study(bad), out, workers=1)
    store = out / ".seeds.cells"
    kept = sorted(p.name for p in store.iterdir())
    assert len(kept) == 3 and all(len(k) == 64 for k in kept)
    assert not (out / "seeds").exists()

    seen: list[tuple[str, int, bool]] = []
    outcome = studies.reproduce(
        studies.load_study(good),
        out,
        workers=1,
        on_done=lambda r: seen.append((r.run, r.seed, r.reused)),
    )
    assert seen == [("lossy", 1, True), ("lossy", 2, True), ("steady", 1, True)]
    assert (out / "seeds" / "study.json").read_bytes() == expected
    assert outcome.count() == clean.count()
    assert not store.exists(), "the store is removed once the study is complete"
    assert load(out / "seeds" / "lossy" / "seed-2").random_draws > 0


def test_a_passing_study_exits_0_and_all_prints_a_summary(native, tmp_path, capsys):
    root = tmp_path / "studies"
    passing = STUDY.replace("range = [100, 200]", "range = [0.1, 20]")
    make_study(root, "good", passing)
    make_study(root, "bad")

    options = ["--studies", root, "-o", tmp_path / "o", "-j", "1", "--no-report"]
    code, out, err = reproduce(capsys, "good", *options)
    assert code == 0, err
    assert "good: 2 of 2 claims hold — PASS" in flat(out)

    code, out, err = reproduce(capsys, "all", *options)
    assert code == 1, err
    text = flat(out)
    assert "studies" in text
    assert re.search(r"bad Rate and loss 5 1 of 2 FAIL", text)
    assert re.search(r"good Rate and loss 5 2 of 2 PASS", text)


def test_progress_advances_as_each_run_finishes(native, tmp_path):
    # The "late" run's scenario is a FIFO: its worker blocks reading it until the test
    # writes it. The progress callback must hear of the "fast" run while "late" still
    # waits (a runner that reports only once all runs are done hears of nothing until
    # the fallback timer releases "late").
    late = tmp_path / "late.toml"
    os.mkfifo(late)
    fast = tmp_path / "fast.toml"
    fast.write_text(SCENARIO)
    released = threading.Event()
    lock = threading.Lock()

    def release() -> None:
        with lock:
            if not released.is_set():
                released.set()
                late.write_text(SCENARIO)

    fallback = threading.Timer(30, release)
    fallback.start()
    seen: list[tuple[str, bool]] = []

    def on_done(result) -> None:
        seen.append((result.run, released.is_set()))
        release()

    jobs = [
        Job("late", 1, "late", str(late), (), ()),
        Job("fast", 1, "fast", str(fast), (), ()),
    ]
    try:
        done = run_jobs(jobs, tmp_path / "out", workers=2, on_done=on_done)
    finally:
        fallback.cancel()
        release()  # never leave a worker blocked on the FIFO

    assert [r.run for r in done] == ["late", "fast"], "results come back in job order"
    assert seen == [("fast", False), ("late", True)]


def test_list_and_bad_input(native, tmp_path, capsys):
    root = tmp_path / "studies"
    make_study(root, "tiny")
    make_study(root, "broken", STUDY.replace('op = ">"', 'op = "=>"'))

    code, out, _ = reproduce(capsys, "--list", "--studies", root)
    assert code == 0
    assert re.search(r"tiny Rate and loss 5 2 A test, 2026", flat(out))
    assert "broken invalid:" in flat(out)

    code, _, err = reproduce(capsys, "broken", "--studies", root, "-o", tmp_path / "o")
    assert code == 2
    assert "study.toml: claims[0].op: '=>': choose one of < <= > >= == !=" in flat(err)
    assert not (tmp_path / "o").exists()

    code, _, err = reproduce(capsys, "nope", "--studies", root)
    assert code == 2 and "no study 'nope'" in err and "studies: broken, tiny" in flat(err)

    code, _, err = reproduce(capsys)
    assert code == 2 and "--list" in err

    code, _, err = reproduce(capsys, "all", "--studies", root)
    assert code == 2 and "claims[0].op" in err


def test_list_shows_titles_as_written_never_as_rich_markup(native, tmp_path, capsys):
    root = tmp_path / "studies"
    make_study(
        root, "odd", STUDY.replace('"Rate and loss"', '":x: [red]Rate[/red] and [bold]loss"')
    )

    code, out, _ = reproduce(capsys, "--list", "--studies", root)

    assert code == 0
    assert ":x: [red]Rate[/red] and [bold]loss" in out


def test_a_bad_override_or_measure_is_bad_input_and_nothing_is_written(native, tmp_path, capsys):
    root = tmp_path / "studies"
    make_study(root, "override", STUDY.replace("bottleneck.rate={rate}", "bottleneck.rat={rate}"))
    make_study(root, "measure", STUDY.replace("flows.file.completion_s", "flows.nope.completion_s"))

    code, _, err = reproduce(capsys, "override", "--studies", root, "-o", tmp_path / "o")
    assert code == 2
    assert "runs[0] (run rate_5Mbit, s.toml): bottleneck.rat: unknown key" in flat(err)

    code, _, err = reproduce(capsys, "measure", "--studies", root, "-o", tmp_path / "o", "-j", "1")
    assert code == 2
    assert "measures.time: run rate_5Mbit (seed 1): flows.nope.completion_s: no 'nope'" in flat(err)
    assert not (tmp_path / "o" / "measure").exists()


def test_a_foreign_output_directory_is_refused(native, tmp_path, capsys):
    folder = make_study(tmp_path / "studies")
    (tmp_path / "o" / "tiny").mkdir(parents=True)
    (tmp_path / "o" / "tiny" / "precious.txt").write_text("keep me")

    code, _, err = reproduce(capsys, folder, "-o", tmp_path / "o")

    assert code == 2 and "refusing to replace" in err
    assert (tmp_path / "o" / "tiny" / "precious.txt").read_text() == "keep me"


# --------------------------------------------------------------------------- metrics


def test_delivery_advances_reassemble_the_whole_transfer(small_runs):
    results = load(small_runs["file"])
    flow = next(iter(results.flows()))

    t, amount = delivery_advances(results, flow)

    assert int(amount.sum()) == results.flow(flow)["bytes_delivered"]
    assert np.all(np.diff(t) >= 0) and np.all(amount > 0)
    # 1 % loss: some hole was filled, releasing more than one segment at once
    assert amount.max() > 1448


def test_packet_metrics_on_a_lossy_transfer(small_runs):
    results = load(small_runs["file"])
    flow = next(iter(results.flows()))

    def metric(name: str, **args: object) -> float | None:
        return METRICS[name](results, METRICS[name].check_args({"flow": flow, **args}))

    plateau = metric("delivery_plateau_max_ms")
    rtt_min = results.flow(flow)["rtt_ms"]["min"]
    assert plateau is not None and plateau > rtt_min  # a loss stalls delivery for over an RTT
    assert metric("delivery_burst_max_bytes") > 1448
    episodes = metric("loss_episodes", stat="count")
    assert episodes is not None and 1 <= episodes <= results.flow(flow)["lost_packets"]
    assert metric("loss_episodes", stat="max") >= metric("loss_episodes", stat="median") >= 1


def test_metrics_without_a_trace_say_how_to_get_one(small_runs):
    results = load(small_runs["codel"])
    flow = next(iter(results.flows()))
    plateau = METRICS["delivery_plateau_max_ms"]

    with pytest.raises(ValueError, match="packet_trace = true"):
        plateau(results, {"flow": flow})


def test_flow_and_series_statistics(small_runs):
    results = load(small_runs["dualpi2"])
    flows = list(results.flows())
    stat = METRICS["flow_stat"]

    count = stat(results, stat.check_args({"flows": "*", "key": "goodput_bps", "stat": "count"}))
    total = stat(results, stat.check_args({"flows": "*", "key": "goodput_bps", "stat": "sum"}))
    assert count == len(flows)
    assert total == pytest.approx(sum(f["goodput_bps"] for f in results.flows().values()))
    series = METRICS["series_stat"]
    peak = series(
        results, series.check_args({"series": "queue/bottleneck.down", "key": "backlog_pkts"})
    )
    _, backlog = results.series("queue/bottleneck.down", "backlog_pkts")
    assert peak == backlog.max()
    with pytest.raises(ValueError, match="no flow matches 'x\\*'"):
        stat(results, stat.check_args({"flows": "x*", "key": "goodput_bps"}))


def test_object_stat_over_a_pages_objects(small_runs):
    results = load(small_runs["web"])
    objects = results.flow("page")["app_metrics"]["objects"]
    stat = METRICS["object_stat"]

    def value(**args: object) -> float | None:
        return stat(results, stat.check_args({"flow": "page", **args}))

    # Object 1 was fetched on its own flow; the page lists it with its index.
    assert [o["index"] for o in objects] == [0, 1] and objects[1]["flow"] == "page.obj1"
    tiny = objects[1]["completion_s"]
    assert tiny is not None and objects[0]["completion_s"] is None  # 10 MB take over 4 s
    assert value(first=1) == tiny and value(first=1, stat="max") == tiny
    assert value(first=1, key="size_bytes", stat="sum") == 20_000
    assert value(stat="count") == 2 and value(last=0, stat="count") == 1
    assert value() is None  # object 0 has no completion_s
    with pytest.raises(MetricError, match="no object from 2 to the last; its objects are 0 to 1"):
        value(first=2)
    with pytest.raises(MetricError, match="no flow 'nope'"):
        stat(results, stat.check_args({"flow": "nope"}))
    bulk = load(small_runs["fifo"])
    with pytest.raises(MetricError, match=r"no app_metrics\.objects"):
        stat(bulk, stat.check_args({"flow": next(iter(bulk.flows()))}))


def test_side_by_side_tables_leave_out_measures_of_other_groups(tmp_path):
    study = STUDY.replace('name = "clean"\n', 'name = "clean"\ngroup = "sensitivity"\n').replace(
        "scale = 1e-6\n", 'scale = 1e-6\nruns = ["clean"]\n'
    )
    study = study[: study.index('[[claims]]\nid = "impossible"')]
    folder = make_study(tmp_path, study=study)
    loaded = studies.load_study(folder)
    jobs = [
        JobResult(run, 1, run, {"time": 0.5, "plateau": 10.0, "goodput": 4.0}, 0.1)
        for run in ("rate_5Mbit", "rate_20Mbit", "clean")
    ]
    outcome = evaluate(loaded, jobs)

    main_rows = [row.cells[0] for row in pivot_data(outcome, "main").rows]
    other_rows = [row.cells[0] for row in pivot_data(outcome, "sensitivity").rows]
    assert main_rows == ["time (s)", "plateau (ms)"]
    assert other_rows == ["time (s)", "plateau (ms)", "goodput (Mbit/s)"]


def test_series_fraction_and_path_equals(small_runs):
    results = load(small_runs["dualpi2"])
    frac = METRICS["series_fraction"]
    _, backlog = results.series("queue/bottleneck.down", "backlog_pkts")
    middle = float(np.median(backlog))
    got = frac(
        results,
        frac.check_args(
            {"series": "queue/bottleneck.down", "key": "backlog_pkts", "op": ">=", "value": middle}
        ),
    )
    assert got == pytest.approx(np.count_nonzero(backlog >= middle) / len(backlog))
    assert 0.0 < got <= 1.0
    none = frac(
        results,
        frac.check_args(
            {"series": "queue/bottleneck.down", "key": "backlog_pkts", "op": ">", "value": 1e9}
        ),
    )
    assert none == 0.0

    equals = METRICS["path_equals"]
    name, flow = next(iter(results.flows().items()))
    same = {"path": f"flows.{name}.app", "value": flow["app"]}
    other = {"path": f"flows.{name}.app", "value": "no-such-app"}
    assert equals(results, equals.check_args(same)) == 1.0
    assert equals(results, equals.check_args(other)) == 0.0
    with pytest.raises(ValueError, match="no 'nope'"):
        equals(results, equals.check_args({"path": "flows.nope.app", "value": "x"}))


def test_path_ratio_and_series_mean_ratio(small_runs):
    results = load(small_runs["dualpi2"])
    ratio = METRICS["path_ratio"]
    queue = results.summary["queues"]["bottleneck.down"]
    flows = results.flows()
    a_name, b_name = next(iter(flows)), list(flows)[-1]
    num = {"num": f"flows.{a_name}.goodput_bps", "den": f"flows.{b_name}.goodput_bps"}
    got = ratio(results, ratio.check_args(num))
    assert flows[b_name]["goodput_bps"] > 0
    assert got == pytest.approx(flows[a_name]["goodput_bps"] / flows[b_name]["goodput_bps"])
    # A zero denominator is no value, not an error.
    zero = {
        "num": "queues.bottleneck.down.drops.total",
        "den": "queues.bottleneck.down.drops.link_loss",
    }
    assert queue["drops"]["link_loss"] == 0
    assert ratio(results, ratio.check_args(zero)) is None
    not_a_number = {
        "num": "queues.bottleneck.down.drops",
        "den": "queues.bottleneck.down.drops.total",
    }
    with pytest.raises(ValueError, match="not a number"):
        ratio(results, ratio.check_args(not_a_number))

    means = METRICS["series_mean_ratio"]
    names = list(results.flows())
    first, last = f"flow/{names[0]}", f"flow/{names[-1]}"
    _, a = results.series(first, "goodput_bps")
    _, b = results.series(last, "goodput_bps")
    args = {"num": first, "den": last, "key": "goodput_bps"}
    got = means(results, means.check_args(args))
    assert got == pytest.approx(np.mean(a[np.isfinite(a)]) / np.mean(b[np.isfinite(b)]))
    late = means(results, means.check_args({**args, "after_s": 1e9}))
    assert late is None


def test_reproduce_help_tells_how_to_resume_and_run_on_a_cluster(capsys):
    code, out, _ = reproduce(capsys, "--help")
    text = flat(re.sub(r"[│╭╮╰╯─]", " ", out))
    assert code == 0
    assert "--dask" in text and "pip install 'l4slab[dask]'" in text
    assert "Resumable:" in text and ".<id>.cells/" in text
