"""Flent's named tests (``l4slab test``) and Flent data files (``l4slab flent``).

The data files are checked twice: their structure here, against Flent's format
(flent/resultset.py), and by the real ``flent`` plotting them when it is installed.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import emulator_or_skip

from l4slab import flent
from l4slab.cli import main

pytest.importorskip("l4slab._native")

#: A short rrul: 1 s of pings alone, then 2 s of load, sampled every 0.2 s.
SHORT = ["-l", "2", "--test-delay", "1", "--rate", "10Mbit", "--delay", "5ms", "-q"]


def _flent_binary() -> str | None:
    beside = Path(sys.executable).parent / "flent"
    return str(beside) if beside.exists() else shutil.which("flent")


def _read(path: Path) -> dict:
    with gzip.open(path, "rt") as fp:
        data: dict = json.load(fp)
    return data


@pytest.fixture(scope="module")
def rrul(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rrul") / "run"
    assert main(["test", "rrul", *SHORT, "-o", str(out)]) == 0
    return out


def test_rrul_writes_a_flent_file_with_rrul_series(rrul: Path) -> None:
    data = _read(rrul / "flent-rrul.flent.gz")

    assert data["version"] == flent.FORMAT_VERSION
    meta = data["metadata"]
    assert meta["NAME"] == "rrul"
    assert (meta["LENGTH"], meta["TOTAL_LENGTH"], meta["STEP_SIZE"]) == (2.0, 3.0, 0.2)
    # 3 s at 0.2 s: 15 samples, every series aligned with them.
    assert data["x_values"] == pytest.approx([0.2 * i for i in range(1, 16)])
    results = data["results"]
    for name in (
        "TCP upload BE",
        "TCP download EF",
        "Ping (ms) ICMP",
        "Ping (ms) UDP EF",
        "TCP upload sum",
        "TCP download sum",
        "TCP totals",
        "Ping (ms) avg",
    ):
        assert len(results[name]) == 15, name
    # The loads start at 1 s: no throughput before, some after; the pings from the start.
    down = results["TCP download sum"]
    assert all(v in (None, 0.0) for v in down[:4])
    assert max(v for v in down[6:] if v is not None) > 5.0  # Mbit/s of a 10 Mbit/s link
    assert all(v is not None and v >= 10.0 for v in results["Ping (ms) ICMP"][:5])  # 2 x 5 ms
    # The sums are the sums of the flows at each sample.
    flows = [results[f"TCP download {m}"] for m in ("BE", "BK", "CS5", "EF")]
    at = 10
    assert down[at] == pytest.approx(sum(f[at] or 0.0 for f in flows))
    assert meta["SERIES_META"]["TCP download BE"]["UNITS"] == "Mbits/s"
    assert meta["SERIES_META"]["Ping (ms) ICMP"]["UNITS"] == "ms"


def test_rrul_marks_become_wifi_access_categories() -> None:
    text = flent.scenario(flent.spec("rrul"), flent.Link())

    assert 'name = "tcp-up-ef"\nwifi_ac = "vo"' in text
    assert 'name = "tcp-down-bk"\nwifi_ac = "bk"' in text
    assert 'name = "tcp-up-cs5"\nwifi_ac = "vi"' in text


def test_flent_file_is_the_same_for_the_same_run(rrul: Path, tmp_path: Path) -> None:
    from l4slab import results as results_mod

    results = results_mod.load(rrul)
    one = flent.write(results, tmp_path / "a.flent.gz")
    two = flent.write(results, tmp_path / "b.flent.gz")

    assert one.read_bytes() == two.read_bytes()
    assert one.read_bytes() == (rrul / "flent-rrul.flent.gz").read_bytes()


def test_any_run_exports_as_rrul_be_nflows(tmp_path: Path) -> None:
    scenario = tmp_path / "two.toml"
    scenario.write_text(
        'format = 1\nduration = "2s"\n[bottleneck]\nrate = "10Mbit"\ndelay = "5ms"\n'
        'buffer = "50pkt"\n[[flows]]\nname = "down"\n[[flows]]\nname = "up"\n'
        'direction = "up"\n[[flows]]\nname = "p"\napp = { kind = "ping" }\n'
    )
    out = tmp_path / "run"
    assert main(["run", str(scenario), "-o", str(out), "-q"]) == 0
    assert main(["flent", str(out)]) == 0

    data = _read(out / "two.flent.gz")
    assert data["metadata"]["NAME"] == "rrul_be_nflows"
    assert data["metadata"]["TEST_PARAMETERS"] == {"upload_streams": "1", "download_streams": "1"}
    assert {"TCP download BE::down", "TCP upload BE::up", "Ping (ms) ICMP"} <= set(data["results"])
    manifest = json.loads((out / ".l4slab-manifest.json").read_text())
    assert manifest["files"]["two.flent.gz"] == "flent"
    # The directory is still l4slab's: running again replaces it.
    assert main(["run", str(scenario), "-o", str(out), "-q"]) == 0


@pytest.mark.parametrize(
    ("test", "flows"),
    [
        ("rrul_be", 12),
        ("tcp_nup", 4),
        ("tcp_ndown", 4),
        ("rtt_fair", 12),
        ("voip", 2),
    ],
)
def test_each_test_builds_a_valid_scenario(capsys, test: str, flows: int) -> None:
    from l4slab import api

    assert (
        main(
            ["test", test, "--streams", "3", "--show"]
            if test.startswith("tcp_n")
            else ["test", test, "--show"]
        )
        == 0
    )
    text = capsys.readouterr().out
    resolved = api.validate_text(text, "<string>")

    assert resolved["name"] == f"flent-{test}"
    assert len(resolved["flows"]) == flows


def test_a_shown_test_run_with_l4slab_run_exports_as_that_test(capsys, tmp_path: Path) -> None:
    assert main(["test", "tcp_ndown", "--streams", "3", "-l", "1", "-d", "0.2", "--show"]) == 0
    scenario = tmp_path / "tcp_3down.toml"
    scenario.write_text(capsys.readouterr().out)
    out = tmp_path / "run"
    assert main(["run", str(scenario), "-o", str(out), "-q"]) == 0
    assert main(["flent", str(out)]) == 0

    data = _read(out / "flent-tcp_ndown.flent.gz")
    assert data["metadata"]["NAME"] == "tcp_ndown"
    assert data["metadata"]["TEST_PARAMETERS"] == {"download_streams": "3"}
    assert sorted(k for k in data["results"] if "::" in k) == [
        "TCP download::1",
        "TCP download::2",
        "TCP download::3",
    ]
    assert set(data["raw_values"]) == {
        "TCP download::1",
        "TCP download::2",
        "TCP download::3",
        "Ping (ms) ICMP",
    }


def test_qdisc_takes_an_inline_table(capsys) -> None:
    assert main(["test", "tcp_nup", "--qdisc", '{ kind = "codel", target = "2ms" }', "--show"]) == 0
    assert 'qdisc = { kind = "codel", target = "2ms" }' in capsys.readouterr().out


def test_rtt_fair_hosts_are_further_away() -> None:
    text = flent.scenario(flent.spec("rtt_fair"), flent.Link())

    for host, delay in flent.RTT_FAIR_HOSTS:
        assert f'[hosts.{host}]\nside = "server"\naccess_delay = "{delay}"' in text


def test_unknown_test_lists_the_tests(capsys) -> None:
    assert main(["test", "rrull"]) == 2
    err = capsys.readouterr().err

    assert "unknown test 'rrull'" in err
    assert "rrul, rrul_be, tcp_nup, tcp_ndown, rtt_fair, voip" in err


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--rate", "fast"], "--rate"),
        (["--qdisc", "red-ish"], "--qdisc"),
        (["--cc", "vegas"], "--cc"),
        (["--delay", "-3ms"], "--delay"),
        (["--streams", "3"], "--streams"),
        (["-l", "0"], "--length"),
        (["--backend", "ns3"], "--backend"),
        (["-H", "flent-fremont.bufferbloat.net"], "-H flent-fremont"),
        (["--qdisc", '{ kind = "codel", target = "-1ms" }'], "--qdisc"),
        (["--buffer", 'x"\nname = "y'], "--buffer"),
    ],
)
def test_bad_options_exit_2_naming_them(capsys, args: list[str], named: str) -> None:
    assert main(["test", "rrul", *args, "--show"]) == 2
    assert named in capsys.readouterr().err


def test_flent_export_refuses_a_name_flent_would_not_read(rrul: Path, capsys) -> None:
    assert main(["flent", str(rrul), "-o", str(rrul / "x.json")]) == 2
    assert ".flent.gz" in capsys.readouterr().err


def test_flent_export_bad_input_exits_2(rrul: Path, tmp_path: Path, capsys) -> None:
    assert main(["flent", str(tmp_path / "none")]) == 2
    assert "no such results directory" in capsys.readouterr().err
    assert main(["flent", str(rrul), "-o", str(tmp_path / "no" / "x.flent.gz")]) == 2
    assert "--out" in capsys.readouterr().err


def _is_png(png: Path) -> bool:
    return png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


@pytest.mark.skipif(_flent_binary() is None, reason="flent is not installed (pip install flent)")
def test_real_flent_plots_every_test_and_an_exported_run(rrul: Path, tmp_path: Path) -> None:
    """The real ``flent -i FILE -p PLOT -o PNG``: rrul's throughput and ping plots, the
    default plot of the tests that name their series otherwise, and a plain ``l4slab run``
    exported with ``l4slab flent``.
    The flent processes run side by side (each spends a second or two starting up)."""
    files = {
        "rrul totals": (rrul / "flent-rrul.flent.gz", "totals"),
        "rrul ping_cdf": (rrul / "flent-rrul.flent.gz", "ping_cdf"),
    }
    # rrul_be and tcp_ndown name their series as rrul and tcp_nup do.
    for test in ("tcp_nup", "rtt_fair", "voip"):
        out = tmp_path / test
        assert main(["test", test, "-l", "2", "--test-delay", "0.4", "-q", "-o", str(out)]) == 0
        files[test] = (out / f"flent-{test}.flent.gz", flent.spec(test).plot)
    scenario = tmp_path / "mixed.toml"
    scenario.write_text(
        'format = 1\nduration = "3s"\n[bottleneck]\nrate = "10Mbit"\ndelay = "5ms"\n'
        'buffer = "50pkt"\n[[flows]]\nname = "bulk"\n[[flows]]\nname = "p"\n'
        'app = { kind = "ping", interval = "50ms" }\n'
    )
    assert main(["run", str(scenario), "-o", str(tmp_path / "mixed"), "-q"]) == 0
    assert main(["flent", str(tmp_path / "mixed"), "-o", str(tmp_path / "m.flent.gz")]) == 0
    files["exported run"] = (tmp_path / "m.flent.gz", "totals")

    env = {"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    running = {}
    for label, (data_file, plot) in files.items():
        png = tmp_path / f"{label.replace(' ', '-')}.png"
        command = [str(_flent_binary()), "-i", str(data_file), "-p", plot, "-o", str(png)]
        running[label] = (
            png,
            subprocess.Popen(
                command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
            ),
        )
    for label, (png, proc) in running.items():
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"{label}: {err}"
        assert png.exists() and _is_png(png), f"{label}: {err}"


def test_tcp_nup_runs_through_the_emulator(tmp_path: Path) -> None:
    emulator_or_skip()
    out = tmp_path / "emu"
    args = ["test", "tcp_nup", "--streams", "2", "-l", "2", "--test-delay", "0.5", "-q"]
    assert main([*args, "--backend", "emu", "-o", str(out)]) == 0

    data = _read(out / "flent-tcp_nup.flent.gz")
    assert data["metadata"]["NOTE"].split(": ")[1].startswith("emulated run of flent-tcp_nup")
    results = data["results"]
    # 2.5 s at 0.2 s; two kernel Cubic uploads share the 20 Mbit/s link after 0.5 s.
    assert len(data["x_values"]) == 12
    sums = [v for v in results["TCP upload sum"][5:] if v is not None]
    assert sums and max(sums) > 10.0
    assert all(v is not None and v >= 20.0 for v in results["Ping (ms) ICMP"][:2])
