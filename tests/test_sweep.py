"""``l4slab sweep``: grids, cell keys, resuming, failures, the dataset, plots, the CLI.

The cells are small (2 s of a few Mbit/s) so that a sweep of a handful takes a second.
Their path loses 0.5 % of packets at random, so that every seed is a run of its own
(a cell that draws no random number runs once for all its seeds: tested on its own).
The cluster tests are in test_sweep_dask.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from l4slab import sweep
from l4slab.cli import main
from l4slab.output import OutputWarning
from l4slab.sweep import spec
from l4slab.sweep.runner import CELLS_DIR, CELLS_PARQUET, SWEEP_JSON, error_record_path

SCENARIO = """\
format = 1
duration = "2s"
warmup = "0.5s"
[bottleneck]
rate = "5Mbit"
delay = "5ms"
buffer = "50pkt"
qdisc = "fifo"
loss = "0.5%"
[[flows]]
name = "bulk"
cc = "reno"
"""

TABLE = """
[sweep]
grid = { "bottleneck.qdisc" = ["fifo", "dualpi2"], "bottleneck.rate" = ["5Mbit", "10Mbit"] }
seeds = 2
"""

GRID = ["bottleneck.qdisc=fifo,dualpi2", "bottleneck.rate=5Mbit,10Mbit"]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─┃┏┓┗┛━]", " ", text))


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


@pytest.fixture
def with_table(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SCENARIO + TABLE, encoding="utf-8")
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- the grid


def test_grid_values_split_outside_quotes_and_tables():
    assert spec.split_values('fifo,{ kind = "codel", ecn = true },"a,b"') == [
        "fifo",
        '{ kind = "codel", ecn = true }',
        '"a,b"',
    ]
    key, values = spec.parse_grid_option("flows[0].cc=prague,cubic")
    assert key == "flows[0].cc"
    assert [v.label for v in values] == ["prague", "cubic"]
    assert spec.parse_seeds_option("3") == [1, 2, 3]
    assert spec.parse_seeds_option("1,7,42") == [1, 7, 42]
    assert spec.toml_value({"kind": "codel", "ecn": True}) == '{ kind = "codel", ecn = true }'


def test_the_grid_expands_first_key_outermost_seeds_innermost(native, scenario):
    plan = sweep.plan(scenario, grid=GRID, seeds=2)

    assert [p.label() for p in plan.points] == [
        "bottleneck.qdisc=fifo bottleneck.rate=5Mbit",
        "bottleneck.qdisc=fifo bottleneck.rate=10Mbit",
        "bottleneck.qdisc=dualpi2 bottleneck.rate=5Mbit",
        "bottleneck.qdisc=dualpi2 bottleneck.rate=10Mbit",
    ]
    assert [(c.point.index, c.seed) for c in plan.cells] == [
        (p, s) for p in range(4) for s in (1, 2)
    ]
    rate = plan.grid[1]
    assert (rate.unit, rate.numbers, rate.number_column) == (
        "bps",
        (5e6, 10e6),
        "bottleneck.rate_bps",
    )
    assert plan.grid[0].number_column is None
    assert len(set(plan.unique_keys)) == 8


def test_the_files_sweep_table_and_grid_options_meet(native, with_table):
    from_file = sweep.plan(with_table)
    assert [k.key for k in from_file.grid] == ["bottleneck.qdisc", "bottleneck.rate"]
    assert from_file.seeds == (1, 2)
    # --grid replaces the file's values of its key, and --seeds its seeds.
    mixed = sweep.plan(with_table, grid=["bottleneck.rate=20Mbit"], seeds="1")
    assert [v.label for v in mixed.grid[1].values] == ["20Mbit"]
    assert mixed.seeds == (1,)
    assert len(mixed.cells) == 2


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        (
            "bottleneck.qdsic=fifo",
            "--grid bottleneck.qdsic=fifo: bottleneck.qdsic: unknown key; valid keys here: rate",
        ),
        (
            "bottleneck.qdisc=fifo,fast",
            "--grid bottleneck.qdisc=fast: bottleneck.qdisc: unknown qdisc 'fast'; choose one of",
        ),
        ("flows[3].cc=reno", "--grid flows[3].cc=reno: index 3 is out of range"),
        ("bottleneck.rate", "--grid bottleneck.rate: expected KEY=V1,V2,...; write e.g. --grid"),
        ("bottleneck.rate=5Mbit,,6Mbit", "an empty value"),
        ("bottleneck.rate=5Mbit,5Mbit", "5Mbit is listed twice"),
        ("seed=1,2", "the seed is not a grid key; write e.g. --seeds 3"),
    ],
)
def test_bad_grid_keys_and_values_are_named_with_an_example(native, scenario, grid, message):
    with pytest.raises(sweep.SweepError) as caught:
        sweep.plan(scenario, grid=[grid])
    assert message in str(caught.value)


def test_a_sweep_past_the_cell_limit_is_refused_naming_its_biggest_key(native, scenario):
    # 101 rates x 100 delays x 1 seed = 10,100 cells: refused before any point is checked.
    rates = ",".join(f"{n}Mbit" for n in range(1, 102))
    delays = ",".join(f"{n}ms" for n in range(1, 101))
    grid = [f"bottleneck.rate={rates}", f"bottleneck.delay={delays}"]
    with pytest.raises(sweep.SweepError) as caught:
        sweep.plan(scenario, grid=grid, seeds=1)
    assert str(caught.value) == (
        "--grid bottleneck.rate: 10,100 cells (101 x 100 x 1 seeds) is past the limit of "
        "10,000 cells (each is a run and a bundle on disk); lift the limit with "
        "--allow-large; write e.g. 100 of its 101 values"
    )
    assert sweep.spec.MAX_CELLS == 10_000
    # Seeds count too, and name their own option.
    with pytest.raises(sweep.SweepError, match=r"^--seeds: 10,002 cells \(2 x 5001 seeds\)"):
        sweep.plan(scenario, grid=["bottleneck.rate=5Mbit,6Mbit"], seeds=5001)


def test_a_bad_sweep_table_names_its_key_path(native, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(SCENARIO + '[sweep]\ngrid = { "bottleneck.qdisc" = ["fifo", "fast"] }\n')
    with pytest.raises(sweep.SweepError, match=r'^sweep\.grid\."bottleneck\.qdisc"\[1\]: '):
        sweep.plan(path)
    path.write_text(SCENARIO + "[sweep]\ngird = {}\n")
    with pytest.raises(sweep.SweepError, match=r"^sweep\.gird: unknown key; valid keys here"):
        sweep.plan(path)


def test_bad_grid_exits_2_naming_the_key(native, scenario, capsys, tmp_path):
    code, _, err = run_cli(
        capsys, "sweep", scenario, "--grid", "bottleneck.qdsic=fifo", "-o", tmp_path / "o"
    )
    assert code == 2
    assert "bottleneck.qdsic: unknown key" in flat(err)
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- cell keys


def test_a_cell_key_is_the_hash_of_resolved_scenario_seed_and_version(native, scenario):
    plan = sweep.plan(scenario, grid=["bottleneck.rate=10Mbit"], seeds="3,")
    cell = plan.cells[0]
    resolved = sweep.plan(scenario, sets=["bottleneck.rate=10Mbit"]).cells[0]
    from l4slab import api

    scenario_json = api.validate(scenario, overrides=["bottleneck.rate=10Mbit"])
    scenario_json["seed"] = 3
    canonical = json.dumps(
        {"scenario": scenario_json, "seed": 3, "tool_version": native.__version__},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert cell.key == hashlib.sha256(canonical.encode()).hexdigest()
    # The same cell however it is asked for: a --set, a grid value, another spelling.
    assert resolved.seed == 1 and resolved.key != cell.key
    again = sweep.plan(scenario, grid=["bottleneck.rate=10000kbit"], seeds="3,")
    assert again.cells[0].key == cell.key
    # The seed and the version are part of it.
    assert sweep.cell_key(scenario_json, 4, native.__version__) != cell.key
    assert sweep.cell_key(scenario_json, 3, "0.0.0") != cell.key


def test_the_same_grid_from_the_file_or_the_command_line_gives_the_same_keys(
    native, scenario, with_table
):
    assert (
        sweep.plan(with_table).unique_keys == sweep.plan(scenario, grid=GRID, seeds=2).unique_keys
    )


# --------------------------------------------------------------------------- running


class Counter:
    """A Progress that counts what ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.started: tuple[int, int, int, int] | None = None

    def start(self, todo: int, total: int, reused: int, retrying: int) -> None:
        self.started = (todo, total, reused, retrying)

    def done(self, cell, outcome) -> None:  # type: ignore[no-untyped-def]
        self.ran.append(cell.key)


def test_a_sweep_writes_a_typed_dataset_in_grid_order(native, scenario, tmp_path):
    plan = sweep.plan(scenario, grid=GRID, seeds=2)
    outcome = sweep.run_sweep(plan, tmp_path / "s", jobs=2, threads=True)

    assert (outcome.ran, outcome.failed, outcome.reused) == (8, 0, 0)
    data = sweep.load(tmp_path / "s")
    table = data.table
    assert table.num_rows == 8
    assert table.column("index").to_pylist() == list(range(8))
    assert table.column("seed").to_pylist() == [1, 2] * 4
    assert table.column("bottleneck.qdisc").to_pylist() == ["fifo"] * 4 + ["dualpi2"] * 4
    assert table.column("bottleneck.rate_bps").to_pylist() == [5e6, 5e6, 10e6, 10e6] * 2
    assert set(table.column("status").to_pylist()) == {"ok"}
    assert table.column("window_start_s").to_pylist() == [0.5] * 8
    schema = table.schema
    assert str(schema.field("bottleneck.rate_bps").type) == "double"
    assert str(schema.field("flow/bulk/retransmits").type) == "int64"
    for column in (
        "flow/bulk/goodput_bps",
        "flow/bulk/rtt_ms_p99",
        "queue/bottleneck.down/sojourn_ms_p99",
        "queue/bottleneck.down/utilization",
        "queue/bottleneck.down/l/sojourn_ms_p99",
    ):
        assert column in data.metrics
    # Each row's metrics are its bundle's summary.json.
    for row in table.to_pylist():
        summary = json.loads((tmp_path / "s" / row["dir"] / "summary.json").read_text())
        assert row["flow/bulk/goodput_bps"] == summary["flows"]["bulk"]["goodput_bps"]
        assert row["cell"] == Path(row["dir"]).name
    info = json.loads((tmp_path / "s" / SWEEP_JSON).read_text())
    assert info["cells"] == 8 and info["ok"] == 8 and info["failed"] == []
    assert info["columns"]["params"] == [
        "bottleneck.qdisc",
        "bottleneck.rate",
        "bottleneck.rate_bps",
    ]


def test_the_seeds_of_a_point_without_random_draws_share_its_first_seeds_run(
    native, scenario, tmp_path
):
    # Loss 0 %: nothing random happens, every seed gives the same results; 2 %: it does.
    plan = sweep.plan(scenario, grid=["bottleneck.loss=0%,2%"], seeds=3)
    out = tmp_path / "s"
    outcome = sweep.run_sweep(plan, out, jobs=2)

    assert (outcome.ran, outcome.shared, outcome.failed) == (4, 2, 0)
    table = sweep.load(out).table
    rows = table.to_pylist()
    assert [r["seed"] for r in rows] == [1, 2, 3, 1, 2, 3]
    assert [r["ran_seed"] for r in rows] == [1, 1, 1, 1, 2, 3]
    assert [r["random_draws"] == 0 for r in rows] == [True] * 3 + [False] * 3
    assert {r["dir"] for r in rows[:3]} == {rows[0]["dir"]}
    assert len({r["dir"] for r in rows[3:]}) == 3
    assert len({r["flow/bulk/goodput_bps"] for r in rows[3:]}) > 1
    assert {r["flow/bulk/goodput_bps"] for r in rows[:3]} == {rows[0]["flow/bulk/goodput_bps"]}
    assert len([d for d in (out / CELLS_DIR).iterdir() if d.is_dir()]) == 4
    info = json.loads((out / SWEEP_JSON).read_text())
    assert info["ok"] == 6 and info["same_as_first_seed"] == 2

    # Run for real, the shared seeds give exactly the first seed's results.
    ran = sweep.plan(scenario, grid=["bottleneck.loss=0%"], seeds=[2])
    direct = sweep.run_sweep(ran, tmp_path / "direct", jobs=1)
    assert direct.ran == 1
    again = sweep.load(tmp_path / "direct").table.to_pylist()[0]
    metrics = [c for c in table.column_names if c.startswith(("flow/", "queue/"))]
    assert {c: again[c] for c in metrics} == {c: rows[1][c] for c in metrics}

    # Resuming decides the same without running anything.
    first = (out / CELLS_PARQUET).read_bytes()
    counter = Counter()
    resumed = sweep.run_sweep(plan, out, jobs=2, progress=counter)
    assert (resumed.ran, resumed.reused, resumed.shared) == (0, 4, 2)
    assert counter.started == (0, 6, 4, 0)
    assert (out / CELLS_PARQUET).read_bytes() == first


def test_threads_and_processes_give_the_same_bytes(native, scenario, tmp_path):
    plan = sweep.plan(scenario, grid=GRID)
    sweep.run_sweep(plan, tmp_path / "t", jobs=2, threads=True)
    sweep.run_sweep(plan, tmp_path / "p", jobs=2)
    assert (tmp_path / "t" / CELLS_PARQUET).read_bytes() == (
        tmp_path / "p" / CELLS_PARQUET
    ).read_bytes()
    assert (tmp_path / "t" / SWEEP_JSON).read_bytes() == (tmp_path / "p" / SWEEP_JSON).read_bytes()


def test_completed_cells_are_never_run_again_and_leftovers_are_ignored(native, scenario, tmp_path):
    plan = sweep.plan(scenario, grid=GRID)
    out = tmp_path / "s"
    sweep.run_sweep(plan, out, jobs=2, threads=True)
    first = (out / CELLS_PARQUET).read_bytes()
    cells = out / CELLS_DIR
    stamps = {key: (cells / key / "summary.json").stat().st_mtime_ns for key in plan.unique_keys}

    # A crash mid-cell: the cell's directory is not there, only a half-written hidden
    # staging directory of a process that is gone.
    lost = plan.unique_keys[2]
    leftover = cells / f".{lost}.tmp-999999999-0123abcd"
    (cells / lost).rename(leftover)
    (leftover / "series.parquet").unlink()
    stamps.pop(lost)

    counter = Counter()
    with pytest.warns(OutputWarning, match="left by a killed run"):
        outcome = sweep.run_sweep(plan, out, jobs=2, threads=True, progress=counter)

    assert counter.started == (1, 4, 3, 0)
    assert counter.ran == [lost]
    assert (outcome.ran, outcome.reused) == (1, 3)
    assert not leftover.exists()
    for key, stamp in stamps.items():
        assert (cells / key / "summary.json").stat().st_mtime_ns == stamp, key
    assert (out / CELLS_PARQUET).read_bytes() == first

    # Nothing left to do: nothing runs.
    again = Counter()
    sweep.run_sweep(plan, out, jobs=2, threads=True, progress=again)
    assert again.ran == [] and again.started == (0, 4, 4, 0)


def test_a_failing_cell_is_recorded_and_the_sweep_goes_on(native, scenario, tmp_path, monkeypatch):
    from l4slab import api

    real = api.run_text

    def flaky(text, source, **kwargs):  # type: ignore[no-untyped-def]
        if "bottleneck.rate=10Mbit" in kwargs.get("overrides", ()) and kwargs.get("seed") == 1:
            raise native.SimulationError("the model broke (a test)")
        return real(text, source, **kwargs)

    monkeypatch.setattr(api, "run_text", flaky)
    plan = sweep.plan(scenario, grid=GRID)
    out = tmp_path / "s"
    outcome = sweep.run_sweep(plan, out, jobs=2, threads=True)

    assert (outcome.ran, outcome.failed) == (2, 2)
    table = pq.read_table(out / CELLS_PARQUET)
    rows = table.to_pylist()
    assert [r["status"] for r in rows] == ["ok", "failed", "ok", "failed"]
    failed = rows[1]
    assert failed["error"] == "SimulationError: the model broke (a test)"
    assert failed["dir"] is None and failed["flow/bulk/goodput_bps"] is None
    record = json.loads(error_record_path(out, failed["cell"]).read_text())
    assert record["error"] == failed["error"]
    assert "Traceback" in record["traceback"] and "the model broke" in record["traceback"]
    assert record["params"] == {"bottleneck.qdisc": "fifo", "bottleneck.rate": "10Mbit"}
    # No results directory that looks complete.
    assert not (out / CELLS_DIR / failed["cell"]).exists()

    # The next run retries the failed cells, and only them.
    monkeypatch.setattr(api, "run_text", real)
    counter = Counter()
    outcome = sweep.run_sweep(plan, out, jobs=2, threads=True, progress=counter)
    assert counter.started == (2, 4, 2, 2)
    assert (outcome.ran, outcome.failed, outcome.retried) == (2, 0, 2)
    assert not error_record_path(out, failed["cell"]).exists()
    assert set(pq.read_table(out / CELLS_PARQUET).column("status").to_pylist()) == {"ok"}


def test_a_failed_cell_exits_1_and_says_where_the_error_is(
    native, scenario, tmp_path, monkeypatch, capsys
):
    from l4slab import api

    def broken(text, source, **kwargs):  # type: ignore[no-untyped-def]
        raise native.SimulationError("no")

    monkeypatch.setattr(api, "run_text", broken)
    out = tmp_path / "s"
    code, stdout, err = run_cli(
        capsys, "sweep", scenario, "--grid", "bottleneck.rate=5Mbit", "--threads", "-o", out
    )
    assert code == 1
    assert "1 cells: 0 ran, 0 were complete already, 1 failed" in flat(stdout)
    assert "cells/<key>.error.json" in flat(err) and "retry" in flat(err)


def test_a_sweep_directory_must_be_a_sweeps(native, scenario, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    code, _, err = run_cli(capsys, "sweep", scenario, "-o", mine)
    assert code == 2
    assert "is not a sweep's results directory" in flat(err)
    assert (mine / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    ("signum", "code", "word"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_an_interrupted_sweep_resumes_to_the_same_bytes(native, tmp_path, signum, code, word):
    """Ctrl-C (SIGINT) or SIGTERM mid-sweep: finished cells stay, nothing half-written
    looks complete, and running again finishes it with the same dataset as a sweep never
    stopped."""
    path = tmp_path / "slow.toml"
    path.write_text(SCENARIO.replace('duration = "2s"', 'duration = "30s"'))
    grid = ["bottleneck.rate=40Mbit,50Mbit,60Mbit", "flows[0].cc=reno,cubic"]
    out = tmp_path / "s"
    argv = [sys.executable, "-m", "l4slab", "sweep", str(path), "-o", str(out), "-j", "1"]
    for item in grid:
        argv += ["--grid", item]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")}
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # Ctrl-C as at a terminal: a runner started in the background (`cmd &`)
        # passes SIGINT on ignored, and Python then never raises KeyboardInterrupt.
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 120
        cells = out / CELLS_DIR
        while time.monotonic() < deadline and process.poll() is None:
            if cells.is_dir() and any(not p.name.startswith(".") for p in cells.iterdir()):
                break
            time.sleep(0.05)
        process.send_signal(signum)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == code, err
    match = re.search(rf"{word}: (\d+) of 6 cells complete", err)
    assert match is not None, err
    complete = int(match.group(1))
    assert 1 <= complete < 6
    assert not (out / CELLS_PARQUET).exists()
    done = [p for p in (out / CELLS_DIR).iterdir() if not p.name.startswith(".")]
    assert len(done) == complete
    for folder in done:
        assert (folder / "summary.json").is_file() and (folder / "series.parquet").is_file()

    plan = sweep.plan(path, grid=grid)
    counter = Counter()
    resumed = sweep.run_sweep(plan, out, jobs=2, progress=counter)
    assert (resumed.reused, resumed.ran) == (complete, 6 - complete)
    whole = sweep.run_sweep(plan, tmp_path / "whole", jobs=2)
    assert whole.ran == 6
    assert (out / CELLS_PARQUET).read_bytes() == (tmp_path / "whole" / CELLS_PARQUET).read_bytes()
    for key in plan.unique_keys:
        for name in ("summary.json", "series.parquet"):
            assert (out / CELLS_DIR / key / name).read_bytes() == (
                tmp_path / "whole" / CELLS_DIR / key / name
            ).read_bytes()


def _worker_pids(parent: int | None = None) -> list[int]:
    """The multiprocessing workers (not the resource tracker) of ``parent`` (this
    process by default), from /proc."""
    parent = os.getpid() if parent is None else parent
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
            pids.append(int(entry.name))
    return pids


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not reaped by its new parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the workers in /proc")
def test_workers_die_with_a_sigkilled_sweep(native, tmp_path):
    """SIGKILL gives the sweep no chance to stop its workers: the kernel must (they
    used to run on, for nobody, ten minutes later)."""
    path = tmp_path / "slow.toml"
    path.write_text(SCENARIO.replace('duration = "2s"', 'duration = "300s"'))
    out = tmp_path / "s"
    argv = [sys.executable, "-m", "l4slab", "sweep", str(path), "-o", str(out), "-j", "2"]
    argv += ["--grid", "bottleneck.rate=40Mbit,50Mbit"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")}
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(workers) < 2 and process.poll() is None:
            time.sleep(0.1)
            workers = _worker_pids(process.pid)
        assert len(workers) == 2, "the sweep never started its workers"
        time.sleep(1.0)  # the workers are simulating now
        process.kill()
        process.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.1)
        assert not [pid for pid in workers if _alive(pid)], "workers outlived their sweep"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in workers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the workers in /proc")
@pytest.mark.filterwarnings("ignore::l4slab.output.OutputWarning")  # the killed cell's leftover
def test_a_killed_local_worker_is_replaced_and_its_cell_run_again(native, tmp_path):
    path = tmp_path / "slow.toml"
    path.write_text(SCENARIO.replace('duration = "2s"', 'duration = "20s"'))
    plan = sweep.plan(path, grid=["bottleneck.rate=20Mbit,30Mbit,40Mbit,50Mbit"])

    class KillOne:
        def __init__(self) -> None:
            self.killed: list[int] = []

        def start(self, todo: int, total: int, reused: int, retrying: int) -> None:
            pass

        def done(self, cell, outcome) -> None:  # type: ignore[no-untyped-def]
            if not self.killed:
                pids = _worker_pids()
                assert pids
                os.kill(pids[0], signal.SIGKILL)
                self.killed.append(pids[0])

    progress = KillOne()
    outcome = sweep.run_sweep(plan, tmp_path / "p", jobs=2, progress=progress)
    assert progress.killed
    assert (outcome.ran, outcome.failed) == (4, 0)
    sweep.run_sweep(plan, tmp_path / "t", jobs=2, threads=True)
    assert (tmp_path / "p" / CELLS_PARQUET).read_bytes() == (
        tmp_path / "t" / CELLS_PARQUET
    ).read_bytes()
    assert not [p for p in (tmp_path / "p" / CELLS_DIR).iterdir() if p.name.startswith(".")]


# --------------------------------------------------------------------------- plots, CLI


@pytest.fixture
def finished(native, scenario, tmp_path) -> Path:
    out = tmp_path / "done"
    plan = sweep.plan(scenario, grid=[*GRID, "bottleneck.delay=5ms,25ms"])
    sweep.run_sweep(plan, out, jobs=2, threads=True)
    return out


def test_plot_sweep_writes_the_report_and_figures(finished, capsys):
    code, out, _ = run_cli(capsys, "plot-sweep", finished)
    assert code == 0
    assert f"report: {finished / 'report.html'}" in flat(out)
    page = (finished / "report.html").read_text()
    pngs = sorted(p.name for p in (finished / "figures").glob("*.png"))
    assert "flow-bulk-rtt-ms-p99-vs-bottleneck-rate.png" in pngs
    assert "flow-bulk-rtt-ms-p99-map-bottleneck-rate-bottleneck-delay.png" in pngs
    for name in pngs:
        assert (finished / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "data:image/png;base64," in page and "Grid points" in page
    manifest = json.loads((finished / ".l4slab-manifest.json").read_text())
    assert manifest["files"]["report.html"] == "report"
    assert manifest["files"]["cells.parquet"] == "sweep"


def test_plot_sweep_draws_one_metric_and_a_heatmap(finished, capsys, tmp_path):
    code, out, _ = run_cli(
        capsys,
        "plot-sweep",
        finished,
        "flow/bulk/rtt_ms_p99",
        "--x",
        "bottleneck.rate",
        "--where",
        "bottleneck.delay=5ms",
    )
    assert code == 0, out
    figure = (
        finished / "figures" / "flow-bulk-rtt-ms-p99-vs-bottleneck-rate-bottleneck-delay-5ms.png"
    )
    assert figure.read_bytes()[:4] == b"\x89PNG"
    target = tmp_path / "map.svg"
    code, _, err = run_cli(
        capsys,
        "plot-sweep",
        finished,
        "queue/bottleneck.down/sojourn_ms_p99",
        "--x",
        "bottleneck.rate",
        "--y",
        "bottleneck.delay",
        "--where",
        "bottleneck.qdisc=dualpi2",
        "-o",
        target,
    )
    assert code == 0, err
    assert target.read_text().lstrip().startswith("<?xml")
    # A heatmap with another key still varying says which.
    code, _, err = run_cli(
        capsys,
        "plot-sweep",
        finished,
        "flow/bulk/goodput_bps",
        "--x",
        "bottleneck.rate",
        "--y",
        "bottleneck.delay",
    )
    assert code == 2 and "bottleneck.qdisc varies too" in flat(err)
    code, _, err = run_cli(capsys, "plot-sweep", finished, "flow/bulk/godput", "--x", "x")
    assert code == 2 and "not a metric column" in flat(err)


def test_plot_functions_draw_lines_with_seed_spread(native, scenario, tmp_path):
    from l4slab.plots import heatmap, metric_vs_param

    plan = sweep.plan(
        scenario, grid=["bottleneck.qdisc=dualpi2,fifo", "bottleneck.rate=5Mbit,10Mbit"], seeds=2
    )
    sweep.run_sweep(plan, tmp_path / "s", jobs=2, threads=True)
    data = sweep.load(tmp_path / "s")
    ax = metric_vs_param(None, data, "flow/bulk/goodput_bps", "bottleneck.rate")
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["dualpi2", "fifo"]
    # x in Mbit/s, y the mean over the two seeds in Mbit/s.
    assert list(lines[0].get_xdata()) == [5.0, 10.0]
    rows = data.rows({"bottleneck.qdisc": "dualpi2", "bottleneck.rate": "5Mbit"})
    mean = float(data.values("flow/bulk/goodput_bps", rows).mean()) * 1e-6
    assert lines[0].get_ydata()[0] == pytest.approx(mean)
    assert ax.get_xlabel() == "bottleneck.rate (Mbit/s)"
    ax = heatmap(None, data, "flow/bulk/goodput_bps", "bottleneck.rate", "bottleneck.qdisc")
    assert ax.images


def test_sweep_and_plot_sweep_help_teach_with_examples(capsys):
    code, out, _ = run_cli(capsys, "sweep", "--help")
    text = flat(out)
    assert code == 0
    for piece in (
        "--grid",
        "KEY=V1,V2,...",
        "--seeds",
        "--jobs",
        "--threads",
        "--dask",
        "tcp://",
        "Example: l4slab sweep sweep-aqm",
        "cells.parquet",
        "run the same command again",
        "docs/sweeps.md",
        # Square brackets survive rich's markup (unescaped, rich takes them for tags).
        "the scenario file's [sweep] table",
        "(its [sweep] table:",
        "pip install 'l4slab[dask]'",
    ):
        assert piece in text, piece
    assert " table gives that key" in text and "'s [sweep] table gives that key" in text
    code, out, _ = run_cli(capsys, "plot-sweep", "--help")
    text = flat(out)
    assert code == 0
    assert "Examples: l4slab plot-sweep results/sweeps/sweep-aqm --open" in text
    assert "--x" in text and "--where" in text and "heatmap" in text


def test_run_runs_the_base_scenario_of_a_file_with_a_sweep(native, with_table, capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", with_table, "-o", tmp_path / "one")
    assert code == 0
    assert "has a [sweep] grid; l4slab run runs its base scenario" in flat(err)
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert summary["scenario"]["bottleneck"]["down"]["qdisc"]["kind"] == "fifo"
    assert "sweep" not in summary["scenario"]


def test_the_shipped_sweep_example_measures_every_sender_after_its_ramp(native, tmp_path):
    """Its window teaches the steady state: the slowest sender to ramp up,
    Prague through DualPI2 at 50 Mbit/s and 50 ms, fills the link there (a 3 s
    warmup read 60 % and made the example's figure show L4S under-using it)."""
    example = Path(__file__).resolve().parents[1] / "scenarios" / "examples" / "sweep-aqm.toml"
    out = tmp_path / "slowest"
    sets = ["bottleneck.qdisc=dualpi2", "flows[0].cc=prague", "bottleneck.rate=50Mbit",
            "bottleneck.delay=25ms"]  # fmt: skip
    assert (
        main(["run", str(example), "-q", "-o", str(out), *(a for s in sets for a in ("--set", s))])
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["queues"]["bottleneck.down"]["utilization"] > 0.9
