"""The Python API over the simulator, end to end (needs ``l4slab._native``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import l4slab
from l4slab.results import PACKETS_FILE, SERIES_FILE, SUMMARY_FILE, OutputWarning

SHORT = ["duration=3s"]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_errors_and_version_are_the_native_ones(native):
    assert l4slab.ScenarioError is native.ScenarioError
    assert l4slab.SimulationError is native.SimulationError
    assert issubclass(l4slab.ScenarioError, ValueError)
    assert issubclass(l4slab.SimulationError, RuntimeError)
    assert l4slab.__version__ == native.__version__


def test_names_of_the_implemented_models(native):
    assert "reno" in native.cc_names()
    assert "fifo" in native.qdisc_names()


@pytest.mark.parametrize(
    ("seed", "problem"),
    [
        (-1, "out of range"),
        (2**63, "out of range"),
        (2**70, "out of range"),
        (True, "expected an integer"),
        ("7", "expected an integer"),
    ],
)
def test_a_bad_seed_is_a_scenario_error_naming_it(
    native, example_scenario, tmp_path, seed, problem
):
    with pytest.raises(l4slab.ScenarioError) as caught:
        l4slab.run(example_scenario, out=tmp_path / "o", seed=seed, overrides=SHORT)

    assert str(caught.value).startswith("seed: ")
    assert problem in str(caught.value)
    assert "seed=7" in str(caught.value), "the message shows a valid example"
    assert list(tmp_path.iterdir()) == []


def test_the_largest_seed_runs(native, example_scenario):
    assert l4slab.run(example_scenario, seed=2**63 - 1, overrides=["duration=1s"]).seed == 2**63 - 1


def test_a_run_past_the_limits_is_a_scenario_error_before_it_starts(
    native, example_scenario, tmp_path
):
    with pytest.raises(l4slab.ScenarioError, match=r"^sample_interval: .*--allow-large"):
        l4slab.run(example_scenario, out=tmp_path / "o", overrides=["sample_interval=1us"])
    assert list(tmp_path.iterdir()) == []


def test_estimate_counts_flows_samples_and_trace_rows(native, example_scenario):
    cost = l4slab.estimate(example_scenario, overrides=["flows[0].count=3", "duration=2s"])

    assert cost["flows"] == 3
    assert cost["samples"] == 20
    assert cost["series_rows"] == 20 * cost["rows_per_sample"]
    assert cost["trace_rows"] == 0
    assert cost["pcap_records"] == 0
    assert (cost["stations"], cost["calls"], cost["call_bytes"], cost["probes"]) == (0, 0, 0, 0)
    assert cost["limits"] == {
        "flows": 5_000,
        "stations": 1_000,
        "call_bytes": 1_500_000_000,
        "probes": 10_000_000,
        "series_rows": 20_000_000,
        "trace_rows": 250_000_000,
        "pcap_records": 25_000_000,
    }
    traced = l4slab.estimate(example_scenario, overrides=["packet_trace=true", "pcap=true"])
    # 20 Mbit/s for 30 s of 1500-byte packets and an ACK for every two: 1.5 packets,
    # four rows (send, enqueue, dequeue, deliver) and two pcap records (in, out) each.
    packets = 20_000_000 * 30 // 12_000 * 3 // 2
    assert traced["trace_rows"] == packets * 4
    assert traced["pcap_records"] == packets * 2
    assert l4slab.estimate(example_scenario, backend="emu")["limits"]["trace_rows"] == 4_000_000


def test_run_in_memory_writes_nothing(native, example_scenario, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    res = l4slab.run(example_scenario, seed=3, overrides=SHORT)

    assert res.path is None
    assert list(tmp_path.iterdir()) == []
    assert res.seed == 3
    assert res.flows()
    for flow in res.flows().values():
        assert flow["goodput_bps"] > 0
        assert set(flow["rtt_ms"]) >= {"min", "mean", "p50", "p90", "p99", "p999", "max"}
    assert res.queues()
    assert res.stats["wall_s"] > 0
    assert res.stats["events"] > 0


def test_series_of_a_real_run(native, example_scenario):
    res = l4slab.run(example_scenario, overrides=SHORT)
    flow = next(iter(res.flows()))

    t, goodput = res.series(f"flow/{flow}", "goodput_bps")

    assert len(t) > 0
    assert (t[1:] >= t[:-1]).all()
    assert t[-1] <= 3.0 + 1e-9
    assert goodput.max() > 0


def test_scenario_as_toml_text(native, example_scenario):
    text = example_scenario.read_text()

    from_text = l4slab.run(text, seed=9, overrides=SHORT)
    from_file = l4slab.run(example_scenario, seed=9, overrides=SHORT)

    # The name may come from the file name, so compare what was measured.
    assert from_text.flows() == from_file.flows()
    assert from_text.queues() == from_file.queues()


def test_validate_returns_the_resolved_scenario(native, example_scenario):
    resolved = l4slab.validate(example_scenario, overrides=["duration=4s"])

    assert resolved["duration"] == 4_000_000_000
    assert resolved["name"]


def test_scenario_error_names_the_key_path(native, example_scenario):
    with pytest.raises(l4slab.ScenarioError, match=r"bottleneck\.rate"):
        l4slab.validate(example_scenario, overrides=["bottleneck.rate=fast"])
    with pytest.raises(l4slab.ScenarioError, match=r"bottleneck\.rate"):
        l4slab.run(example_scenario, overrides=["bottleneck.rate=fast"])


def test_progress_reports_simulated_time(native, example_scenario):
    calls: list[tuple[float, float]] = []

    l4slab.run(
        example_scenario, overrides=["duration=60s"], progress=lambda s, d: calls.append((s, d))
    )

    for sim_s, duration_s in calls:
        assert duration_s == pytest.approx(60.0)
        assert 0.0 <= sim_s <= duration_s
    assert [s for s, _ in calls] == sorted(s for s, _ in calls)


def test_interrupt_from_progress_writes_nothing(native, example_scenario, tmp_path):
    calls = []

    def interrupt(sim_s: float, duration_s: float) -> None:
        calls.append(sim_s)
        raise KeyboardInterrupt

    try:
        l4slab.run(
            example_scenario, out=tmp_path / "out", overrides=["duration=60s"], progress=interrupt
        )
    except KeyboardInterrupt:
        pass
    else:
        assert not calls, "an exception from progress must stop the run"
        pytest.skip("the run finished before its first progress call")

    assert list(tmp_path.iterdir()) == []


def test_packet_trace_is_written_when_asked(native, example_scenario, tmp_path):
    res = l4slab.run(
        example_scenario, out=tmp_path / "out", overrides=[*SHORT, "packet_trace=true"]
    )

    assert (tmp_path / "out" / PACKETS_FILE).is_file()
    assert res.packets is not None and res.packets.num_rows > 0
    assert l4slab.load(tmp_path / "out").packets.num_rows == res.packets.num_rows


# The golden scenario has no random element, so to see the seed act on the series too,
# the seed tests also run it with random loss on the bottleneck.
RANDOM_LOSS = "bottleneck.loss=1%"


@pytest.mark.parametrize("overrides", [[], [RANDOM_LOSS]], ids=["golden", "golden+loss"])
def test_same_seed_gives_byte_identical_results(native, golden_scenario, tmp_path, overrides):
    """DESIGN §4: a run is a pure function of (scenario, seed, version)."""
    a = l4slab.run(golden_scenario, out=tmp_path / "a", seed=11, overrides=overrides).path
    b = l4slab.run(golden_scenario, out=tmp_path / "b", seed=11, overrides=overrides).path
    assert a is not None and b is not None

    for name in (SUMMARY_FILE, SERIES_FILE):
        assert digest(a / name) == digest(b / name), f"{name} differs between identical runs"


def test_different_seed_gives_different_results(native, golden_scenario, tmp_path):
    a = l4slab.run(golden_scenario, out=tmp_path / "a", seed=11, overrides=[RANDOM_LOSS]).path
    c = l4slab.run(golden_scenario, out=tmp_path / "c", seed=12, overrides=[RANDOM_LOSS]).path
    assert a is not None and c is not None

    for name in (SUMMARY_FILE, SERIES_FILE):
        assert digest(a / name) != digest(c / name), f"{name} ignores the seed"


def test_the_access_link_example_queues_at_the_access_links(native, tmp_path):
    """scenarios/examples/access-link.toml: each home's queue builds at its own
    access link, named access.<host>.<dir> in the bundle; the shared link idles."""
    example = Path(__file__).parents[1] / "scenarios" / "examples" / "access-link.toml"
    res = l4slab.load(l4slab.run(example, out=tmp_path / "o", overrides=["duration=12s"]).path)

    assert set(res.queues()) == {
        "bottleneck.down",
        "bottleneck.up",
        "access.bloated.down",
        "access.bloated.up",
        "access.managed.down",
        "access.managed.up",
    }
    bloated = res.queue("access.bloated.down")
    assert bloated["kind"] == "fifo" and res.queue("access.managed.down")["kind"] == "fq_codel"
    assert bloated["sojourn_ms"]["mean"] > 50 > res.queue("bottleneck.down")["sojourn_ms"]["max"]
    t, backlog = res.series("queue/access.bloated.down", "backlog_pkts")
    assert len(t) > 100 and backlog.max() > 100
    # The file waits behind the FIFO's queue, not beside fq_codel's.
    files = [res.flows()[f"{home}-file"]["completion_s"] for home in ("bloated", "managed")]
    assert files[0] > 2 * files[1]


def test_pcap_needs_a_results_folder(native, example_scenario):
    # The capture files are written into the bundle; without one, the run says so.
    with pytest.warns(OutputWarning, match="pcap = true"):
        res = l4slab.run(example_scenario, overrides=["pcap=true", "duration=200ms"])
    assert res.scenario["pcap"] is True
    # A scenario without the key resolves as before: no "pcap" in summary.json.
    plain = l4slab.run(example_scenario, overrides=["duration=200ms"])
    assert "pcap" not in plain.scenario
