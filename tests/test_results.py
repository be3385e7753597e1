"""The results bundle: files, determinism, atomicity, and the Results accessors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import l4slab
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

    monkeypatch.setattr(results_mod, "_write_parquet", fail)
    target = tmp_path / "run"

    with pytest.raises(OSError, match="disk full"):
        write_bundle(target, make_native_result())

    assert not target.exists()
    assert list(tmp_path.iterdir()) == [], "the staging directory is removed"


def test_ctrl_c_mid_write_leaves_no_target(tmp_path, make_native_result, monkeypatch):
    def interrupt(table: pa.Table, path: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(results_mod, "_write_parquet", interrupt)

    with pytest.raises(KeyboardInterrupt):
        write_bundle(tmp_path / "run", make_native_result())

    assert list(tmp_path.iterdir()) == []


def test_failure_keeps_the_previous_bundle(tmp_path, make_native_result, monkeypatch):
    target = write_bundle(tmp_path / "run", make_native_result(seed=1))
    before = {p.name: digest(p) for p in target.iterdir()}

    def fail(table: pa.Table, path: Path) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(results_mod, "_write_parquet", fail)
    with pytest.raises(OSError, match="disk full"):
        write_bundle(target, make_native_result(seed=2))

    assert {p.name: digest(p) for p in target.iterdir()} == before
    assert siblings(target) == ["run"]


def test_existing_bundle_is_replaced_after_success(tmp_path, make_native_result):
    target = write_bundle(tmp_path / "run", make_native_result(seed=1, packets=True))
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
    results_mod._write_parquet(series_table(columns), path)
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
