"""The results bundle: files, determinism, atomicity, and the Results accessors."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import l4slab
from l4slab import _parquet
from l4slab import output as output_mod
from l4slab import results as results_mod
from l4slab.results import (
    MANIFEST_FILE,
    PACKETS_FILE,
    RUN_FILE,
    SERIES_FILE,
    SERIES_SCHEMA,
    SUMMARY_FILE,
    Results,
    load,
    series_table,
    write_bundle,
)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def siblings(path: Path) -> list[str]:
    """Everything in the parent directory of ``path`` (to catch leftover temp dirs)."""
    return sorted(p.name for p in path.parent.iterdir())


# --------------------------------------------------------------------------- files


def test_bundle_has_the_documented_files(tmp_path, make_native_result):
    out = write_bundle(tmp_path / "run", make_native_result(), command=["l4slab", "run", "x"])

    assert out == tmp_path / "run"
    assert sorted(p.name for p in out.iterdir()) == [
        MANIFEST_FILE,
        RUN_FILE,
        SERIES_FILE,
        SUMMARY_FILE,
    ]
    assert siblings(out) == ["run"], "no temporary directory is left beside the bundle"
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["files"] == {RUN_FILE: "run", SERIES_FILE: "run", SUMMARY_FILE: "run"}
    assert manifest["written_by"] == "l4slab"


def test_summary_json_is_the_native_text_verbatim_plus_newline(tmp_path, make_native_result):
    native = make_native_result()
    out = write_bundle(tmp_path / "run", native)

    assert (out / SUMMARY_FILE).read_bytes() == (native["summary_json"] + "\n").encode()


def test_series_parquet_schema(tmp_path, make_native_result):
    out = write_bundle(tmp_path / "run", make_native_result(samples=7))
    table = pq.read_table(out / SERIES_FILE)
    meta = pq.ParquetFile(out / SERIES_FILE).metadata

    assert table.schema.equals(SERIES_SCHEMA)
    assert table.num_rows == 7 * 3
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert table.column("series").to_pylist()[:3] == [
        "flow/download",
        "flow/download",
        "queue/bottleneck.down",
    ]


def test_run_json_records_machine_facts(tmp_path, make_native_result):
    out = write_bundle(tmp_path / "run", make_native_result(), command=["l4slab", "run", "x"])
    run = json.loads((out / RUN_FILE).read_text())

    assert run["command"] == ["l4slab", "run", "x"]
    assert run["stats"]["wall_s"] == 0.25
    assert run["stats"]["events"] == 12345
    assert run["stats"]["packets"] == 6789
    assert run["stats"]["sim_wall_ratio"] == pytest.approx(5.0 / 0.25)
    assert run["host"]["python"]
    assert run["host"]["platform"]
    assert run["seed"] == 1


def test_packets_parquet_only_when_traced(tmp_path, make_native_result):
    out = write_bundle(tmp_path / "run", make_native_result(packets=True, samples=10))
    packets = pq.read_table(out / PACKETS_FILE)

    assert packets.num_rows == 10
    assert packets.column_names == ["t_s", "event", "flow", "seq", "retransmission"]
    assert packets.column("event").to_pylist()[:2] == ["send", "deliver"]
    assert load(out).packets is not None
    assert load(write_bundle(tmp_path / "plain", make_native_result())).packets is None


# --------------------------------------------------------------------------- determinism


def test_two_writes_of_the_same_result_are_byte_identical(tmp_path, make_native_result):
    a = write_bundle(tmp_path / "a", make_native_result(packets=True, samples=300))
    b = write_bundle(tmp_path / "b", make_native_result(packets=True, samples=300))

    for name in (SUMMARY_FILE, SERIES_FILE, PACKETS_FILE):
        assert digest(a / name) == digest(b / name), name


def test_different_data_gives_different_bytes(tmp_path, make_native_result):
    a = write_bundle(tmp_path / "a", make_native_result(seed=1))
    b = write_bundle(tmp_path / "b", make_native_result(seed=2))

    assert digest(a / SUMMARY_FILE) != digest(b / SUMMARY_FILE)
    assert digest(a / SERIES_FILE) != digest(b / SERIES_FILE)


def test_parquet_has_no_wall_clock_metadata(tmp_path, make_native_result):
    out = write_bundle(tmp_path / "run", make_native_result())
    meta = pq.ParquetFile(out / SERIES_FILE).metadata

    assert set(meta.metadata or {}) <= {b"ARROW:schema"}
    assert "parquet-cpp-arrow" in meta.created_by


def test_large_series_is_split_into_fixed_row_groups(tmp_path, make_native_result):
    native = make_native_result(samples=30_000)  # 90,000 rows
    out = write_bundle(tmp_path / "run", native)
    meta = pq.ParquetFile(out / SERIES_FILE).metadata

    assert meta.num_rows == 90_000
    assert meta.row_group(0).num_rows == results_mod.ROW_GROUP_SIZE
    assert meta.num_row_groups == 2


# --------------------------------------------------------------------------- atomicity


def test_failure_mid_write_leaves_no_target(tmp_path, make_native_result, monkeypatch):
    def fail(table: pa.Table, path: Path) -> None:
        path.write_bytes(b"half a parquet file")
        raise OSError("disk full")

    # What the bundle is written with (output.py imports it when it writes).
    monkeypatch.setattr(_parquet, "write_parquet", fail)
    target = tmp_path / "run"

    with pytest.raises(OSError, match="disk full"):
        write_bundle(target, make_native_result())

    assert not target.exists()
    assert list(tmp_path.iterdir()) == [], "the staging directory is removed"


def test_ctrl_c_mid_write_leaves_no_target(tmp_path, make_native_result, monkeypatch):
    def interrupt(table: pa.Table, path: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_parquet, "write_parquet", interrupt)

    with pytest.raises(KeyboardInterrupt):
        write_bundle(tmp_path / "run", make_native_result())

    assert list(tmp_path.iterdir()) == []


def test_failure_keeps_the_previous_bundle(tmp_path, make_native_result, monkeypatch):
    target = write_bundle(tmp_path / "run", make_native_result(seed=1))
    before = {p.name: digest(p) for p in target.iterdir()}

    def fail(table: pa.Table, path: Path) -> None:
        raise OSError("disk full")

    # What the bundle is written with (output.py imports it when it writes).
    monkeypatch.setattr(_parquet, "write_parquet", fail)
    with pytest.raises(OSError, match="disk full"):
        write_bundle(target, make_native_result(seed=2))

    assert {p.name: digest(p) for p in target.iterdir()} == before
    assert siblings(target) == ["run"]


def test_existing_bundle_is_replaced_after_success(tmp_path, make_native_result):
    target = write_bundle(tmp_path / "run", make_native_result(seed=1, packets=True))
    with pytest.warns(
        results_mod.OutputWarning, match=r"replaced .*run \(the results of scenario 'unit'"
    ):
        write_bundle(target, make_native_result(seed=2))

    assert load(target).seed == 2
    assert not (target / PACKETS_FILE).exists(), "files of the old bundle do not linger"
    assert siblings(target) == ["run"]


def test_empty_directory_is_an_acceptable_target(tmp_path, make_native_result):
    (tmp_path / "run").mkdir()
    write_bundle(tmp_path / "run", make_native_result())

    assert (tmp_path / "run" / SUMMARY_FILE).is_file()


def test_refuses_to_replace_a_directory_that_is_not_a_bundle(tmp_path, make_native_result):
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")

    with pytest.raises(FileExistsError, match="not an l4slab results directory"):
        write_bundle(precious, make_native_result())

    assert (precious / "thesis.tex").read_text() == "years of work"
    assert siblings(precious) == ["home"]


def test_refuses_a_file_as_target(tmp_path, make_native_result):
    (tmp_path / "out").write_text("x")

    with pytest.raises(FileExistsError, match="not a directory"):
        write_bundle(tmp_path / "out", make_native_result())


def test_creates_missing_parent_directories(tmp_path, make_native_result):
    out = write_bundle(tmp_path / "a" / "b" / "run", make_native_result())

    assert (out / SUMMARY_FILE).is_file()


def test_unequal_series_columns_are_rejected_before_writing(tmp_path, make_native_result):
    native = make_native_result()
    native["series"]["value"].pop()

    with pytest.raises(ValueError, match="different lengths"):
        write_bundle(tmp_path / "run", native)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- accessors


@pytest.fixture
def saved(tmp_path, make_native_result) -> Results:
    write_bundle(tmp_path / "run", make_native_result(samples=20))
    return load(tmp_path / "run")


def test_load_is_reexported(saved):
    assert l4slab.load is load
    assert l4slab.Results is Results


def test_summary_accessors(saved):
    assert saved.name == "unit"
    assert saved.seed == 1
    assert saved.tool_version == "0.1.0"
    assert saved.path is not None and saved.path.name == "run"
    assert list(saved.flows()) == ["download"]
    assert saved.flow("download")["cc"] == "reno"
    assert saved.queue("bottleneck.down")["utilization"] == pytest.approx(0.9731)
    assert saved.stats["events"] == 12345
    assert "Results(name='unit'" in repr(saved)


def test_unknown_names_say_what_exists(saved):
    with pytest.raises(KeyError, match="'download'"):
        saved.flow("upload")
    with pytest.raises(KeyError, match=r"'bottleneck\.down'"):
        saved.queue("bottleneck.up")
    with pytest.raises(KeyError, match="'flow/download'"):
        saved.series("flow/nope", "cwnd_bytes")
    with pytest.raises(KeyError, match="'cwnd_bytes'"):
        saved.series("flow/download", "nope")


def test_series_names_and_keys(saved):
    assert saved.series_names() == ["flow/download", "queue/bottleneck.down"]
    assert saved.series_keys("flow/download") == ["cwnd_bytes", "goodput_bps"]
    assert saved.series_keys("queue/bottleneck.down") == ["sojourn_ms"]


def test_series_returns_numpy_time_and_value(saved):
    t, v = saved.series("flow/download", "cwnd_bytes")

    assert isinstance(t, np.ndarray) and isinstance(v, np.ndarray)
    assert t.dtype == np.float64 and v.dtype == np.float64
    assert len(t) == len(v) == 20
    assert t[0] == pytest.approx(0.1) and t[-1] == pytest.approx(2.0)
    np.testing.assert_array_equal(v, 14480.0 + 1448 * np.arange(20))


def test_in_memory_results_match_loaded_ones(tmp_path, make_native_result):
    native = make_native_result(samples=20)
    memory = Results.from_native(native)
    disk = load(write_bundle(tmp_path / "run", native))

    assert memory.path is None
    assert memory.summary == disk.summary
    assert memory.series_table.equals(disk.series_table)
    for name in memory.series_names():
        for key in memory.series_keys(name):
            np.testing.assert_array_equal(memory.series(name, key)[1], disk.series(name, key)[1])


def test_save_of_a_loaded_bundle_reproduces_it(tmp_path, saved):
    copy = saved.save(tmp_path / "copy")

    for name in (SUMMARY_FILE, SERIES_FILE):
        assert digest(copy / name) == digest(tmp_path / "run" / name)


def test_load_of_something_else_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such results directory"):
        load(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no summary\.json"):
        load(tmp_path / "empty")


def test_empty_series_is_fine(tmp_path, make_native_result):
    native = make_native_result(samples=0)
    res = load(write_bundle(tmp_path / "run", native))

    assert res.series_table.num_rows == 0
    assert res.series_names() == []


# --------------------------------------------------------------------------- properties

names = st.sampled_from(["flow/a", "flow/b.0", "queue/bottleneck.down"])
keys = st.sampled_from(["goodput_bps", "cwnd_bytes", "sojourn_ms"])
rows = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=1e4, allow_nan=False),
        names,
        keys,
        st.floats(allow_nan=True, allow_infinity=True),
    ),
    max_size=200,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows)
def test_series_round_trip_through_parquet(tmp_path_factory, rows: list[tuple[Any, ...]]):
    columns = {
        "t_s": [r[0] for r in rows],
        "series": [r[1] for r in rows],
        "key": [r[2] for r in rows],
        "value": [r[3] for r in rows],
    }
    path = tmp_path_factory.mktemp("prop") / SERIES_FILE
    results_mod.write_parquet(series_table(columns), path)
    loaded = Results(json.dumps({"seed": 0}), pq.read_table(path))

    expected: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for t, s, k, v in rows:
        expected.setdefault((s, k), []).append((t, v))
    assert sorted({s for s, _ in expected}) == loaded.series_names()
    for (s, k), pairs in expected.items():
        pairs.sort(key=lambda p: p[0])  # stable, like Results.series
        t, v = loaded.series(s, k)
        np.testing.assert_array_equal(t, [p[0] for p in pairs])
        np.testing.assert_array_equal(v, [p[1] for p in pairs])


# --------------------------------------------------------------------------- streamed packet trace
#
# Issue 10: the packet trace streams into the bundle's staging directory in row groups,
# so a long traced run holds one chunk in memory, not the whole trace.

#: About 190,000 trace rows (three chunks) in a tenth of a second of simulation.
TRACED = [
    "duration=8s",
    "packet_trace=true",
    "bottleneck.rate=100Mbit",
    "bottleneck.buffer=60pkt",
]


def test_the_trace_is_written_while_the_simulation_runs(native, golden_scenario, tmp_path):
    seen: list[tuple[float, int]] = []

    def progress(sim_s: float, duration_s: float) -> None:
        staged = list(tmp_path.glob(f".run.tmp-*/{PACKETS_FILE}"))
        seen.append((sim_s, staged[0].stat().st_size if staged else -1))

    res = l4slab.run(golden_scenario, out=tmp_path / "run", overrides=TRACED, progress=progress)

    # packets.parquet appears in the staging directory with the first chunk, then grows.
    during = [size for sim_s, size in seen if sim_s < 8.0 and size > 0]
    assert len(set(during)) >= 2, f"packets.parquet grows while the run goes on: {seen}"
    meta = pq.ParquetFile(tmp_path / "run" / PACKETS_FILE).metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert len(groups) >= 3 and set(groups[:-1]) == {results_mod.ROW_GROUP_SIZE}, groups
    assert res.packet_rows == meta.num_rows == sum(groups)
    assert res.packets_file == tmp_path / "run" / PACKETS_FILE


def test_streamed_trace_is_byte_identical_run_to_run_and_to_a_saved_one(
    native, golden_scenario, tmp_path
):
    l4slab.run(golden_scenario, out=tmp_path / "a", overrides=TRACED)
    l4slab.run(golden_scenario, out=tmp_path / "b", overrides=TRACED)
    in_memory = l4slab.run(golden_scenario, overrides=TRACED)
    in_memory.save(tmp_path / "c")

    assert digest(tmp_path / "a" / PACKETS_FILE) == digest(tmp_path / "b" / PACKETS_FILE)
    assert digest(tmp_path / "a" / PACKETS_FILE) == digest(tmp_path / "c" / PACKETS_FILE)
    table = pq.read_table(tmp_path / "a" / PACKETS_FILE)
    assert table.schema.equals(results_mod.PACKETS_SCHEMA)
    assert table.num_rows == in_memory.packets.num_rows > 2 * results_mod.ROW_GROUP_SIZE


def test_native_chunks_are_buffers_not_per_row_objects(native, golden_scenario):
    chunks: list[dict[str, Any]] = []
    text = golden_scenario.read_text()

    result = native.run(text, str(golden_scenario), TRACED, None, None, chunks.append)

    assert result["packets"] is None, "the sink took the trace"
    assert [c["rows"] for c in chunks[:-1]] == [results_mod.ROW_GROUP_SIZE] * (len(chunks) - 1)
    first = chunks[0]
    rows = first["rows"]
    assert all(isinstance(first[k], bytes) for k in ("t_s", "event", "sack", "flags"))
    assert len(first["t_s"]) == 8 * rows and len(first["event"]) == rows
    assert len(first["sack_offsets"]) == 4 * (rows + 1)
    assert first["names"]["event"][:4] == ["send", "enqueue", "dequeue", "deliver"]
    assert first["names"]["queue"] == [None, "bottleneck.down", "bottleneck.up"]
    table = results_mod.chunk_table(first)  # type: ignore[arg-type]
    assert table.num_rows == rows
    assert set(table.column("side").to_pylist()) <= {"data", "ack", "dgram"}
    # Host events are at no queue (null), queue events name theirs; only a dequeue
    # has a sojourn.
    events = table.column("event").to_pylist()
    queues = table.column("queue").to_pylist()
    sojourn = table.column("sojourn_us").to_pylist()
    for event, queue, us in zip(events, queues, sojourn, strict=True):
        assert (queue is None) == (event in ("send", "deliver")), (event, queue)
        assert (us is not None) == (event == "dequeue"), (event, us)
    assert any("-" in s for s in table.column("sack").to_pylist()), "SACK blocks as l-r"


def test_a_bundle_answers_without_reading_the_trace(native, golden_scenario, tmp_path, monkeypatch):
    l4slab.run(golden_scenario, out=tmp_path / "run", overrides=TRACED)
    real_read_table = pq.read_table

    def no_packets(source: Any, *args: Any, **kwargs: Any) -> pa.Table:
        assert Path(source).name != PACKETS_FILE, "the whole trace was read"
        return real_read_table(source, *args, **kwargs)

    monkeypatch.setattr(pq, "read_table", no_packets)
    res = load(tmp_path / "run")

    assert res.summary and res.series_names() and res.flows()
    assert res.has_packets and res.packets_file == tmp_path / "run" / PACKETS_FILE
    total = 0
    for batch in res.iter_packets(columns=["t_s", "event"]):
        assert batch.schema.names == ["t_s", "event"]
        assert batch.num_rows <= results_mod.ROW_GROUP_SIZE
        total += batch.num_rows
    assert total == res.packet_rows > 0


def test_no_trace_no_packets(tmp_path, make_native_result):
    res = load(write_bundle(tmp_path / "plain", make_native_result()))

    assert not res.has_packets
    assert res.packets_file is None and res.packet_rows is None
    assert list(res.iter_packets()) == []


def test_emulator_columns_get_the_simulators_schema(make_native_result):
    native = make_native_result()
    native["packets"] = {
        "t_s": [0.5],
        "event": ["send"],
        "flow": [0],
        "side": ["data"],
        "seq": [0],
        "len": [1448],
        "ack": [1],
        "ecn": ["ect1"],
        "retransmission": [False],
        "wnd": [512],
        "sack": [""],
        "flags": ["."],
        # JSON keys come sorted: the table takes the schema's order.
        "pkt_id": [7],
        "queue": [None],
        "sojourn_us": [None],
        "subqueue": [None],
    }

    table = Results.from_native(native).packets

    assert table is not None and table.schema.equals(results_mod.PACKETS_SCHEMA)
    assert table.column("queue").to_pylist() == [None]


# --------------------------------------------------------------------------- never destroy
#
# Issue 10: "Never destroy what l4slab did not write". On the code before the fix each
# of these directories counted as a bundle and was swapped out whole.


@pytest.fixture
def bundle(tmp_path, make_native_result) -> Callable[..., Path]:
    """``bundle(**kwargs)``: a bundle at tmp_path/run of ``make_native_result(**kwargs)``."""
    return lambda **kwargs: write_bundle(tmp_path / "run", make_native_result(**kwargs))


def test_a_summary_json_alone_does_not_make_a_bundle(tmp_path, make_native_result):
    old = tmp_path / "run"
    old.mkdir()
    (old / SUMMARY_FILE).write_text("{}")
    (old / SERIES_FILE).write_bytes(b"mine")

    with pytest.raises(FileExistsError, match=r"no \.l4slab-manifest\.json") as info:
        write_bundle(old, make_native_result())

    assert "summary.json" in str(info.value) and "-o" in str(info.value)
    assert (old / SERIES_FILE).read_bytes() == b"mine"
    assert siblings(old) == ["run"]


def test_a_user_file_in_figures_is_never_replaced(tmp_path, make_native_result, bundle):
    target = bundle()
    (target / "figures").mkdir()
    (target / "figures" / "mine.png").write_bytes(b"my figure")

    with pytest.raises(FileExistsError, match=r"figures/mine\.png is not l4slab's"):
        write_bundle(target, make_native_result(seed=2))

    assert (target / "figures" / "mine.png").read_bytes() == b"my figure"
    assert load(target).seed == 1
    assert siblings(target) == ["run"]


def test_a_symlink_inside_a_bundle_is_refused(tmp_path, make_native_result, bundle):
    target = bundle()
    (tmp_path / "elsewhere").mkdir()
    (target / "link").symlink_to(tmp_path / "elsewhere")

    with pytest.raises(FileExistsError, match=r"link \(a symbolic link\) is not l4slab's"):
        write_bundle(target, make_native_result(seed=2))


def test_a_bundle_whose_files_the_manifest_lists_is_replaced(tmp_path, make_native_result, bundle):
    target = bundle(packets=True)
    manifest = json.loads((target / MANIFEST_FILE).read_text())
    manifest["files"]["figures/rtt.png"] = "report"
    (target / MANIFEST_FILE).write_text(json.dumps(manifest))
    (target / "figures").mkdir()
    (target / "figures" / "rtt.png").write_bytes(b"l4slab's figure")

    write_bundle(target, make_native_result(seed=2))

    assert load(target).seed == 2
    assert not (target / PACKETS_FILE).exists() and not (target / "figures").exists()
    assert siblings(target) == ["run"]


def test_the_manifest_records_the_scenario(native, example_scenario, tmp_path):
    l4slab.run(example_scenario, out=tmp_path / "run", overrides=["duration=1s"])

    manifest = results_mod.read_manifest(tmp_path / "run")

    assert manifest is not None and manifest.scenario is not None
    assert manifest.scenario["source"] == str(example_scenario.resolve())
    assert manifest.scenario["name"] == load(tmp_path / "run").name
    # A copy saved from the loaded bundle still knows where the scenario came from.
    load(tmp_path / "run").save(tmp_path / "copy")
    copied = results_mod.read_manifest(tmp_path / "copy")
    assert copied is not None and copied.scenario == manifest.scenario


def test_same_cleaned_name_of_another_scenario_is_refused(tmp_path, bundle):
    target = bundle(name="a b")

    results_mod.check_same_scenario(target, "a b", "<string>")  # the same scenario: fine
    with pytest.raises(FileExistsError, match=r"scenario 'a b'.*scenario 'a-b'.*-o"):
        results_mod.check_same_scenario(target, "a-b", "<string>")


# --------------------------------------------------------------------------- output dir checks


def test_an_unwritable_output_fails_before_simulating(native, example_scenario, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a directory")
    calls: list[float] = []

    with pytest.raises(results_mod.OutputDirError, match="cannot write results"):
        l4slab.run(
            example_scenario,
            out=blocker / "run",
            overrides=["duration=600s"],
            progress=lambda sim_s, _: calls.append(sim_s),
        )

    assert calls == [], "the simulation never started"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_parent_fails_before_simulating(native, example_scenario, tmp_path):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    calls: list[float] = []
    try:
        with pytest.raises(results_mod.OutputDirError, match="cannot write results"):
            l4slab.run(
                example_scenario,
                out=parent / "run",
                progress=lambda sim_s, _: calls.append(sim_s),
            )
    finally:
        parent.chmod(0o755)
    assert calls == []


def test_a_symlinked_output_is_followed_and_stays_a_link(tmp_path, make_native_result):
    real = tmp_path / "real"
    link = tmp_path / "link"
    write_bundle(real, make_native_result(seed=1))
    link.symlink_to(real, target_is_directory=True)

    out = write_bundle(link, make_native_result(seed=2))

    assert out == real
    assert link.is_symlink() and link.resolve() == real
    assert load(real).seed == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_a_symlink_to_an_empty_directory_receives_the_bundle(tmp_path, make_native_result):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")

    write_bundle(tmp_path / "link", make_native_result())

    assert (tmp_path / "link").is_symlink()
    assert (tmp_path / "real" / SUMMARY_FILE).is_file()


# --------------------------------------------------------------------------- leftovers


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_leftovers_of_killed_runs_are_cleaned_up_or_reported(tmp_path, make_native_result):
    pid = dead_pid()
    ours = tmp_path / f".run.tmp-{pid}-0123abcd"
    (ours / "figures").mkdir(parents=True)
    (ours / PACKETS_FILE).write_bytes(b"half")
    (ours / "figures" / "x.png").write_bytes(b"png")
    theirs = tmp_path / f".run.tmp-{pid}-4567abcd"
    theirs.mkdir()
    (theirs / "thesis.tex").write_text("years of work")
    running = tmp_path / f".run.tmp-{os.getppid()}-89abcdef"
    running.mkdir()
    other = tmp_path / f".other.tmp-{pid}-0123abcd"
    other.mkdir()

    with pytest.warns(results_mod.OutputWarning) as caught:
        l4slab_run_with(tmp_path / "run", make_native_result())

    notes = " | ".join(str(w.message) for w in caught)
    assert not ours.exists()
    assert "thesis.tex" in notes and (theirs / "thesis.tex").read_text() == "years of work"
    assert running.exists() and "still running" in notes
    assert other.exists(), "another target's leftovers are not ours to judge"
    assert (tmp_path / "run" / SUMMARY_FILE).is_file()


def l4slab_run_with(target: Path, native_result: dict[str, Any]) -> None:
    """What api.run does around the simulation, with a ready-made result."""
    for note in results_mod.clean_stale_staging(target):
        warnings.warn(note, results_mod.OutputWarning, stacklevel=2)
    write_bundle(target, native_result)


def test_an_old_bundle_left_aside_by_a_killed_run_is_put_back(tmp_path, make_native_result, bundle):
    target = bundle()
    aside = tmp_path / f".run.old-{dead_pid()}-0123abcd"
    target.rename(aside)

    notes = results_mod.clean_stale_staging(target)

    assert "put back" in " ".join(notes)
    assert load(target).seed == 1 and not aside.exists()


def test_a_report_cleans_what_a_killed_report_left(tmp_path, bundle):
    """A report killed by SIGKILL leaves its hidden staging directory beside the bundle;
    the next report removes it (l4slab's name with a dead writer's pid, only files l4slab
    writes), and leaves a look-alike holding a user's file where it is."""
    target = bundle()
    pid = dead_pid()
    ours = tmp_path / f".{target.name}.tmp-{pid}-0123abcd"
    (ours / "figures").mkdir(parents=True)
    (ours / "report.html").write_bytes(b"<html>half")
    (ours / "figures" / "rtt.png").write_bytes(b"png")
    theirs = tmp_path / f".{target.name}.tmp-{pid}-4567abcd"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")

    with pytest.warns(results_mod.OutputWarning) as caught:
        results_mod.write_files(target, "report", {"report.html": b"<html></html>"})

    notes = " | ".join(str(w.message) for w in caught)
    assert not ours.exists() and "removed" in notes
    assert (theirs / "notes.txt").read_text() == "mine" and "notes.txt" in notes
    assert (target / "report.html").read_bytes() == b"<html></html>"


def test_a_report_never_deletes_through_a_symlinked_figures_dir(tmp_path, bundle):
    target = bundle()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "rtt.png").write_bytes(b"someone else's")
    manifest = json.loads((target / MANIFEST_FILE).read_text())
    manifest["files"]["figures/rtt.png"] = "report"  # an earlier report drew rtt.png
    (target / MANIFEST_FILE).write_text(json.dumps(manifest))
    (target / "figures").symlink_to(elsewhere)

    results_mod.write_files(target, "report", {"report.html": b"<html></html>"})

    assert (elsewhere / "rtt.png").read_bytes() == b"someone else's"
    assert "figures/rtt.png" not in json.loads((target / MANIFEST_FILE).read_text())["files"]


def test_a_symlinked_study_directory_is_followed(tmp_path):
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir()
    link.symlink_to(real)

    for text in ("first", "second"):
        with output_mod.staging_dir(link) as tmp:  # how a study's results are written
            (tmp / "study.json").write_text(text)
            results_mod.write_manifest(tmp, "reproduce")

    assert link.is_symlink() and (real / "study.json").read_text() == "second"


def test_an_unreadable_manifest_is_refused_by_each_directory_check(tmp_path):
    from l4slab.sweep.runner import check_sweep_dir

    (tmp_path / output_mod.MANIFEST_FILE).write_text("{not json")

    with pytest.raises(FileExistsError, match=r"refusing to replace .*unreadable manifest.*-o"):
        output_mod.check_output_dir(tmp_path)
    with pytest.raises(FileExistsError, match=r"refusing to use .* for a sweep: .*unreadable"):
        check_sweep_dir(tmp_path)
    # Missing and empty directories may be used.
    output_mod.check_output_dir(tmp_path / "new")
    check_sweep_dir(tmp_path / "new")
