"""A Wi-Fi interface as ``l4slab gateway --lan`` (docs/gateway.md, gateway_wifi.py).

This machine has no radio (and no mac80211_hwsim): the tests give the gateway a fake
sysfs (``gateway_state.SYS_NET``) in which ``wlan0`` is wireless, and replace ``ip``,
``iw`` and ``nft`` with a recorder and hostapd's start with a fake process, then check
the commands in order, the hostapd.conf written and the refusals.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from l4slab import gateway, gateway_state, gateway_wifi
from l4slab.gateway_options import Options

NS = "l4slab-77-c"
HOST = f"/proc/{os.getpid()}/ns/net"


class FakeProcess:
    """hostapd as started: its command line; it keeps running."""

    pid = 2**22 + 1  # above pid_max's default: never a live process
    returncode = None

    def __init__(self, argv: list[str], **_: Any) -> None:
        self.argv = argv

    def poll(self) -> int | None:
        return None


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A fake sysfs (``wlan0`` on radio ``phy7``, wired ``eth1``), a recorder for the
    commands, a fake hostapd, the state files in ``tmp_path``."""
    sysfs = tmp_path / "sys"
    (sysfs / "wlan0" / "phy80211").mkdir(parents=True)
    (sysfs / "wlan0" / "phy80211" / "name").write_text("phy7\n")
    (sysfs / "eth1").mkdir()
    monkeypatch.setattr(gateway_state, "SYS_NET", sysfs)
    state_dir = tmp_path / "run"
    state_dir.mkdir()
    monkeypatch.setattr(gateway_state, "STATE_DIR", state_dir)
    monkeypatch.setattr(gateway, "STATE_DIR", state_dir)
    ran: list[str] = []

    def record(*args: str, netns: str | None = None) -> str:
        ran.append(f"[{netns}] " * (netns is not None) + " ".join(args))
        return ""

    monkeypatch.setattr(gateway, "sh", record)
    monkeypatch.setattr(gateway_state, "sh", record)
    started: list[FakeProcess] = []

    def popen(argv: list[str], **kwargs: Any) -> FakeProcess:
        started.append(FakeProcess(argv, **kwargs))
        return started[-1]

    monkeypatch.setattr(gateway_wifi.subprocess, "Popen", popen)
    return {"ran": ran, "started": started, "state_dir": state_dir, "tmp": tmp_path}


def _gateway(said: list[str], **wifi: Any) -> gateway.Gateway:
    """A gateway past its checks, with the state its start records before any change."""
    gw = gateway.Gateway(Options(lan=wifi.pop("lan", "wlan0"), wan="eth0", **wifi), said.append)
    gw.state = {
        "owner_pid": 1,
        "owner_start": -1,  # never a live process's start time: a dead owner
        "lan": gw.opts.lan,
        "lan_addrs": ["10.1.2.3/24"],
        "lan_up": True,
        "sysctls": {},
        "client_ns": "",
    }
    return gw


def test_the_radio_moves_whole_hostapd_runs_in_the_namespace_and_cleanup_moves_it_back(
    world: dict[str, Any],
) -> None:
    said: list[str] = []
    gw = _gateway(said, ssid="l4s lab", passphrase="correct horse", channel=36, country="de")
    gw._lan_into(NS)
    assert world["ran"] == [
        f"iw phy phy7 set netns name {NS}",
        f"[{NS}] ip addr add 192.168.77.1/24 dev wlan0",
        f"[{NS}] ip link set dev wlan0 up",
    ]
    (ap,) = world["started"]
    conf = gw.tmp / "hostapd.conf"
    assert ap.argv == ["nsenter", f"--net=/run/netns/{NS}", "hostapd", str(conf)]
    assert conf.read_text().splitlines() == [
        "interface=wlan0",
        "driver=nl80211",
        "ssid=l4s lab",
        "utf8_ssid=1",
        "hw_mode=a",
        "channel=36",
        "country_code=DE",
        "ieee80211d=1",
        "ieee80211n=1",
        "wmm_enabled=1",
        "auth_algs=1",
        "wpa=2",
        "wpa_key_mgmt=WPA-PSK",
        "rsn_pairwise=CCMP",
        "wpa_passphrase=correct horse",
    ]
    assert conf.stat().st_mode & 0o777 == 0o600  # it holds the passphrase
    assert said == ["Wi-Fi: access point 'l4s lab' (WPA2-PSK) on wlan0 (phy7)"]
    # The state file says the LAN is a radio, and hostapd's pid: a SIGKILLed gateway's
    # reaper (or `l4slab gateway cleanup`) moves the radio back, not `ip link`.
    state = json.loads(gw.path.read_text())
    assert state["lan_phy"] == "phy7" and state["lan_moved"] is True
    assert state["processes"] == [[FakeProcess.pid, None]]
    netns = world["tmp"] / "netns"
    netns.touch()  # the client namespace, still there
    gw.path.write_text(json.dumps({**state, "client_ns": str(netns)}))
    world["ran"].clear()
    assert gateway_state.cleanup() == ["wlan0"]
    assert world["ran"] == [
        f"[{netns}] ip link set dev wlan0 down",
        f"[{netns}] iw phy phy7 set netns name {HOST}",
        "ip addr add 10.1.2.3/24 dev wlan0",
        "ip link set dev wlan0 up",
    ]
    assert not gw.path.exists()
    shutil.rmtree(gw.tmp)


def test_without_ssid_the_radio_moves_and_the_user_is_told_how_to_run_hostapd(
    world: dict[str, Any],
) -> None:
    said: list[str] = []
    gw = _gateway(said)
    gw._lan_into(NS)
    assert world["ran"][0] == f"iw phy phy7 set netns name {NS}"
    assert world["started"] == []
    assert said == [
        f"Wi-Fi: radio phy7 (wlan0) is in namespace {NS}; run your access point there: "
        f"sudo ip netns exec {NS} hostapd YOUR.conf (interface=wlan0)"
    ]
    # 2.4 GHz by default.
    conf = gateway_wifi.hostapd_conf(Options(lan="wlan0", wan="eth0", ssid="x", passphrase="p" * 8))
    assert "hw_mode=g\nchannel=6\n" in conf and "country_code" not in conf
    shutil.rmtree(gw.tmp)


def test_a_wired_lan_still_moves_with_ip_link(world: dict[str, Any]) -> None:
    gw = _gateway([], lan="eth1")
    gw._lan_into(NS)
    assert world["ran"][0] == f"ip link set dev eth1 netns {NS}"
    assert json.loads(gw.path.read_text())["lan_phy"] is None
    shutil.rmtree(gw.tmp)


@pytest.mark.parametrize(
    ("wifi", "error"),
    [
        ({"lan": "eth1", "ssid": "x", "passphrase": "p" * 8},
         "--ssid: --lan eth1 is not a wireless interface"),
        ({"ssid": "x", "passphrase": "p" * 7},
         "--passphrase: 7 characters; WPA2 needs 8 to 63 printable ASCII"),
        ({"ssid": "x", "passphrase": "p" * 64}, "--passphrase: 64 characters"),
        ({"ssid": "x", "passphrase": "pässword"}, "--passphrase: 8 characters"),
        ({"ssid": "x"}, "--ssid needs --passphrase"),
        ({"passphrase": "p" * 8}, "--passphrase is for the access point: it needs --ssid"),
        ({"ssid": "x" * 33, "passphrase": "p" * 8}, "1 to 32 bytes"),
        ({"ssid": "a\nb", "passphrase": "p" * 8}, "1 to 32 bytes"),
        ({"ssid": "x", "passphrase": "p" * 8, "channel": 15}, "--channel 15: not a Wi-Fi"),
        ({"ssid": "x", "passphrase": "p" * 8, "country": "DEU"}, "--country DEU"),
        ({"ssid": "x", "passphrase": "p" * 8, "tools": ["iw"]},
         "it needs hostapd, which is not installed"),
        ({"tools": ["hostapd"]}, "--lan wlan0 is wireless (phy7): it needs iw"),
    ],
)  # fmt: skip
def test_refusals_before_anything_changes(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, wifi: dict[str, Any], error: str
) -> None:
    tools = wifi.pop("tools", ["iw", "hostapd"])
    monkeypatch.setattr(gateway_wifi, "_installed", lambda tool: tool in tools)
    links = [{"ifname": n} for n in ("lo", "eth0", "eth1", "wlan0")]
    monkeypatch.setattr(gateway, "ip_json", lambda *args, **_: links if "link" in args else [])
    opts = Options(lan=wifi.pop("lan", "wlan0"), wan="eth0", **wifi)
    with pytest.raises(gateway.GatewayInputError, match=re.escape(error)):
        gateway.check(opts)
    assert world["ran"] == [] and world["started"] == []


def test_the_wifi_check_gives_the_radio_and_none_for_a_wired_lan(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gateway_wifi, "_installed", lambda tool: True)
    ap = {"ssid": "x", "passphrase": "p" * 63, "channel": 11, "country": "us"}
    assert gateway_wifi.check(Options(lan="wlan0", wan="eth0", **ap)) == "phy7"
    assert gateway_wifi.check(Options(lan="eth1", wan="eth0")) is None


def test_the_command_line_refuses_a_short_passphrase_with_exit_2() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "l4slab", "gateway", "--lan", "lo", "--wan", "lo",
         "--ssid", "lab", "--passphrase", "short"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "300"},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "--passphrase: 5 characters; WPA2 needs 8 to 63" in proc.stderr, proc.stderr
