"""Sweeps on a Dask cluster give the local run's results, byte for byte.

Against a ``LocalCluster``, and against a scheduler and two workers started as separate
processes (``dask scheduler``, ``dask worker``), one of which is killed mid-sweep. Every
process is ended, and every wait bounded, whatever happens.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from l4slab import sweep
from l4slab.sweep.runner import CELLS_DIR, CELLS_PARQUET, SWEEP_JSON

if os.environ.get("L4SLAB_REQUIRE_DASK") == "1":
    import distributed
else:
    distributed = pytest.importorskip("distributed", reason="pip install 'l4slab[dask]'")

SCENARIO = """\
format = 1
duration = "60s"
warmup = "2s"
[bottleneck]
rate = "20Mbit"
delay = "5ms"
buffer = "50pkt"
[[flows]]
name = "bulk"
cc = "reno"
"""

GRID = ["bottleneck.qdisc=fifo,dualpi2", "flows[0].cc=reno,prague", "bottleneck.rate=40Mbit,80Mbit"]


@pytest.fixture(scope="module")
def plan(native, tmp_path_factory: pytest.TempPathFactory) -> sweep.Sweep:
    path = tmp_path_factory.mktemp("scenario") / "small.toml"
    path.write_text(SCENARIO, encoding="utf-8")
    return sweep.plan(path, grid=GRID)


@pytest.fixture(scope="module")
def local(plan: sweep.Sweep, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sweep run locally, once for every test here."""
    out = tmp_path_factory.mktemp("local") / "local"
    sweep.run_sweep(plan, out, jobs=2)
    return out


def same_results(a: Path, b: Path, keys: list[str]) -> None:
    assert (a / CELLS_PARQUET).read_bytes() == (b / CELLS_PARQUET).read_bytes()
    assert (a / SWEEP_JSON).read_bytes() == (b / SWEEP_JSON).read_bytes()
    for key in keys:
        for name in ("summary.json", "series.parquet", ".l4slab-manifest.json"):
            assert (a / CELLS_DIR / key / name).read_bytes() == (
                b / CELLS_DIR / key / name
            ).read_bytes(), (key, name)


def test_a_local_cluster_gives_the_local_bytes(plan, local, tmp_path):
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        with distributed.Client(cluster) as client:
            outcome = sweep.run_sweep(plan, tmp_path / "dask", dask=client)
    finally:
        cluster.close()
    assert (outcome.ran, outcome.failed) == (8, 0)
    same_results(local, tmp_path / "dask", plan.unique_keys)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """A scheduler and two single-threaded workers, each a process of its own (no nanny:
    killing a worker's process kills the worker)."""
    dask = str(Path(sys.executable).parent / "dask")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")}
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, *argv: str) -> subprocess.Popen[bytes]:
        log = (logs / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [dask, *argv], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path
        )
        processes.append(process)
        return process

    try:
        start(
            "scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"
        )
        workers = [
            start(
                f"worker{i}",
                "worker",
                address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
                "--name",
                f"w{i}",
            )
            for i in (1, 2)
        ]
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address, workers
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        for process in processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_separate_processes_with_a_worker_killed_mid_sweep(plan, local, tmp_path, cluster):
    address, workers = cluster
    victim = workers[0]

    class KillAfterFirst:
        killed = False

        def start(self, todo: int, total: int, reused: int, retrying: int) -> None:
            pass

        def done(self, cell, outcome) -> None:  # type: ignore[no-untyped-def]
            # The first cell is back (a cell takes a few tenths of a second): the victim is
            # running another one, or about to.
            if not self.killed:
                victim.kill()
                victim.wait(timeout=20)
                self.killed = True

    progress = KillAfterFirst()
    outcome = sweep.run_sweep(plan, tmp_path / "dask", dask=address, progress=progress)
    assert progress.killed and victim.returncode == -signal.SIGKILL
    assert (outcome.ran, outcome.failed) == (8, 0)
    same_results(local, tmp_path / "dask", plan.unique_keys)


def test_the_cli_runs_on_a_cluster(plan, local, tmp_path, cluster, capsys):
    from l4slab.cli import main

    address, _ = cluster
    argv = ["sweep", plan.source, "-o", str(tmp_path / "cli"), "--dask", address]
    for item in GRID:
        argv += ["--grid", item]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"on Dask cluster {address}" in err
    assert "8 cells: 8 ran" in out
    same_results(local, tmp_path / "cli", plan.unique_keys)


def test_an_unreachable_scheduler_is_a_cluster_error(tmp_path):
    from l4slab.sweep.pool import dask_client

    address = f"tcp://127.0.0.1:{_free_port()}"
    message = f"cannot reach the Dask scheduler at {address}"
    with pytest.raises(sweep.ClusterError, match=message), dask_client(address, timeout_s=1):
        pass


def test_a_study_on_a_local_cluster_gives_the_local_study_json(native, tmp_path):
    """``l4slab reproduce --dask``: the same simulations (a run with nothing random runs
    once for all its seeds there too) and the same study.json, byte for byte."""
    from l4slab import studies
    from test_study_run import SEEDS_STUDY, make_study

    folder = make_study(tmp_path / "studies", "seeds", SEEDS_STUDY)
    local = studies.reproduce(studies.load_study(folder), tmp_path / "local", workers=2)
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    seen: list[tuple[str, int, bool]] = []
    try:
        with distributed.Client(cluster) as client:
            remote = studies.reproduce(
                studies.load_study(folder),
                tmp_path / "dask",
                dask=client,
                on_done=lambda r: seen.append((r.run, r.seed, r.reused)),
            )
    finally:
        cluster.close()
    assert sorted(seen) == [("lossy", 1, False), ("lossy", 2, False), ("steady", 1, False)]
    a = (tmp_path / "local" / "seeds" / "study.json").read_bytes()
    assert (tmp_path / "dask" / "seeds" / "study.json").read_bytes() == a
    assert remote.count() == local.count()
    for run in ("lossy/seed-1", "lossy/seed-2", "steady/seed-1"):
        for name in ("summary.json", "series.parquet"):
            here = tmp_path / "local" / "seeds" / run / name
            assert (tmp_path / "dask" / "seeds" / run / name).read_bytes() == here.read_bytes()
    assert not (tmp_path / "dask" / ".seeds.cells").exists()
