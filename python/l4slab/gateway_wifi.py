"""A Wi-Fi interface as the gateway's LAN: its radio moves, and optionally an access point.

Linux marks a wireless interface local to its namespace (``NETIF_F_NETNS_LOCAL``, a
net_device flag ``netns_local`` since Linux 6.12, set by net/wireless/core.c),
so ``ip link set wlan0 netns NS`` fails for it. The whole radio moves instead
(nl80211 ``NL80211_CMD_SET_WIPHY_NETNS``, iw phy.c ``handle_netns``: ``iw phy PHY set
netns name NS``), its interfaces with it, and back the same way. A namespace that is
deleted gives its radios back to the initial namespace by itself (net/wireless/core.c
``cfg80211_pernet_exit``: ``cfg80211_switch_netns(rdev, &init_net)``).

With ``--ssid`` the gateway runs hostapd inside the client namespace as a WPA2-PSK
access point (:func:`hostapd_conf`); without it the user runs their own
(:func:`own_ap_hint`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from l4slab.gateway_options import Options
from l4slab.gateway_state import GatewayInputError, ns_path, sys_net

__all__ = ["check", "check_options", "hostapd_conf", "own_ap_hint", "phy_of", "start_hostapd"]

#: 2.4 GHz channels (hw_mode=g) and the 5/6 GHz channel numbers (hw_mode=a).
CHANNELS_24 = range(1, 15)
CHANNELS_5 = range(32, 178)


def phy_of(iface: str) -> str | None:
    """The radio (``phy0``) of a wireless interface, ``None`` for any other: cfg80211
    links ``/sys/class/net/IF/phy80211`` to its wiphy (net/wireless/sysfs.c)."""
    link = sys_net() / iface / "phy80211"
    if not link.exists():
        return None
    return (link / "name").read_text().strip()


def check_options(opts: Options) -> None:
    """Refuse bad access-point options (exit 2), whatever the interfaces."""
    if opts.ssid is None:
        for given, key in ((opts.passphrase, "--passphrase"), (opts.country, "--country")):
            if given is not None:
                raise GatewayInputError(f"{key} is for the access point: it needs --ssid")
        if opts.channel is not None:
            raise GatewayInputError("--channel is for the access point: it needs --ssid")
        return
    # hostapd.conf: an SSID is 1..32 octets (IEEE 802.11-2020 9.4.2.2), one line.
    if not 1 <= len(opts.ssid.encode()) <= 32 or not opts.ssid.isprintable():
        raise GatewayInputError(f"--ssid {opts.ssid!r}: 1 to 32 bytes of printable characters")
    if opts.passphrase is None:
        raise GatewayInputError("--ssid needs --passphrase (the access point is WPA2-PSK)")
    # IEEE 802.11-2020 J.4.1: a pass-phrase is 8..63 printable ASCII characters (32..126).
    p = opts.passphrase
    if not 8 <= len(p) <= 63 or not all(32 <= ord(ch) <= 126 for ch in p):
        raise GatewayInputError(
            f"--passphrase: {len(p)} characters; WPA2 needs 8 to 63 printable ASCII characters"
        )
    if opts.channel is not None and opts.channel not in (*CHANNELS_24, *CHANNELS_5):
        raise GatewayInputError(
            f"--channel {opts.channel}: not a Wi-Fi channel (1-14 at 2.4 GHz, 32-177 at 5 GHz)"
        )
    if opts.country is not None and not (
        len(opts.country) == 2 and opts.country.isascii() and opts.country.isalpha()
    ):
        raise GatewayInputError(f"--country {opts.country}: an ISO 3166-1 code of two letters")


def _installed(tool: str) -> bool:
    return any(Path(d, tool).exists() for d in [*os.get_exec_path(), "/usr/sbin", "/sbin"])


def check(opts: Options) -> str | None:
    """The LAN's radio (``None``: not wireless); refuses (exit 2) --ssid on a wired LAN
    and a missing ``iw`` or ``hostapd``. Nothing has changed yet."""
    phy = phy_of(opts.lan)
    if phy is None:
        if opts.ssid is not None:
            raise GatewayInputError(
                f"--ssid: --lan {opts.lan} is not a wireless interface (no "
                f"{sys_net() / opts.lan / 'phy80211'})"
            )
        return None
    needed = ["iw", *(["hostapd"] if opts.ssid is not None else [])]
    for tool in needed:
        if not _installed(tool):
            raise GatewayInputError(
                f"--lan {opts.lan} is wireless ({phy}): it needs {tool}, which is not "
                f"installed (Debian: apt-get install -y {tool})"
            )
    return phy


def hostapd_conf(opts: Options) -> str:
    """hostapd's configuration for ``--ssid``: WPA2-PSK (RSN, CCMP) on ``opts.lan``
    (hostapd/hostapd.conf documents every key)."""
    assert opts.ssid is not None and opts.passphrase is not None
    channel = 6 if opts.channel is None else opts.channel
    lines = [
        f"interface={opts.lan}",
        "driver=nl80211",
        f"ssid={opts.ssid}",
        "utf8_ssid=1",
        f"hw_mode={'g' if channel in CHANNELS_24 else 'a'}",
        f"channel={channel}",
        *([f"country_code={opts.country.upper()}", "ieee80211d=1"] if opts.country else []),
        "ieee80211n=1",
        "wmm_enabled=1",
        "auth_algs=1",
        "wpa=2",
        "wpa_key_mgmt=WPA-PSK",
        "rsn_pairwise=CCMP",
        f"wpa_passphrase={opts.passphrase}",
    ]
    return "\n".join(lines) + "\n"


def start_hostapd(opts: Options, netns: str, tmp: Path) -> subprocess.Popen[bytes]:
    """hostapd in namespace ``netns`` with :func:`hostapd_conf` written to ``tmp``
    (mode 0600: it holds the passphrase); its log is ``tmp/hostapd.log``."""
    conf = tmp / "hostapd.conf"
    conf.touch(mode=0o600)
    conf.write_text(hostapd_conf(opts))
    with (tmp / "hostapd.log").open("wb") as log:
        return subprocess.Popen(
            ["nsenter", f"--net={ns_path(netns)}", "hostapd", str(conf)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def own_ap_hint(lan: str, phy: str, netns: str) -> str:
    """What to run for an access point of one's own (no ``--ssid``)."""
    return (
        f"Wi-Fi: radio {phy} ({lan}) is in namespace {netns}; run your access point there: "
        f"sudo ip netns exec {netns} hostapd YOUR.conf (interface={lan})"
    )
