#!/usr/bin/env python3
"""`l4slab send` on a busy machine (issue 25): pace, rate, verdict, start-up.

    sudo python3 bench/busy_send.py --l4slab 'l4slab' --runs 5 -o /tmp/busy
    python3 bench/busy_send.py --l4slab 'l4slab' --start-only

Starts ``--busy`` CPU-bound shell loops at normal priority (``while :; do :;
done``; six on a 2-core machine gives a load of about 7) and kills them at the
end, however the script ends. Then, for each of ``--runs`` rounds:

* **send alone**: ``check-l4s --only l4s`` (the 20 Mbit/s DualPI2 path, 20 ms
  RTT, captured at the bottleneck) with ``send --cc prague`` at normal
  priority, then the same run under ``chrt -f 10`` (real-time priority),
  alternated (10 s phases); from each summary.json: goodput (Mbit/s, of
  20; over the phase and over its second half), the packet-weighted mean
  burst at the queue, the phase's verdicts;
* **check-l4s**: the README's positive control, every phase (4 s each, as
  by default), normal priority; its exit code (0: judged L4S).

``--l4slab`` is the command that runs l4slab (e.g. ``'l4slab'`` for the
installed one, or a wrapper that puts a work tree first on ``PYTHONPATH``):
the emulator, the ``serve`` and the ``send`` all come from it (``l4slab`` on
the client's ``PATH`` is a script that runs it).

``--cgroup WEIGHT`` runs all of it (the loops, the emulator, ``serve`` and
``send``) in one new control group with that CPU weight (e.g. 10000: the
rest of the machine becomes background, so the experiment sees "six
CPU-bound processes on the cores" whatever else runs): cgroup v2's
``cpu.weight`` under ``/sys/fs/cgroup`` (``+cpu`` enabled in the root's
``subtree_control``), or on a cgroup v1 machine the ``cpu`` hierarchy's
``cpu.shares`` (``WEIGHT * 1024 / 100``: v2's weight 100 is v1's 1024) with
``cpu.rt_runtime_us`` so that real-time threads (``chrt``, the emulator's
forwarder) may run in it. The script moves itself in (its children
inherit the group), and back out and removes the group at the end.

**Start-up** (no root, no load): the time from starting ``send`` at a local
UDP socket to the first datagram it sends, ``--start-runs`` times; median and
max.

Prints a Markdown table per part; record it in docs/PERFORMANCE.md with the
command.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUSY_LOOP = "while :; do :; done"


def start_busy(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen(["sh", "-c", BUSY_LOOP]) for _ in range(n)]


def stop_busy(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


CGROUP_V2 = Path("/sys/fs/cgroup")
CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")


def enter_cgroup(weight: int) -> tuple[Path, Path]:
    """Make a CPU control group of ``weight`` (cgroup v2 ``cpu.weight``, or
    v1 ``cpu.shares``), move this process into it; (the group, the group
    to return to)."""
    name = f"l4slab-busy-send-{os.getpid()}"
    if (CGROUP_V2 / "cgroup.controllers").exists():
        root = CGROUP_V2
        ctl = (root / "cgroup.subtree_control").read_text().split()
        if "cpu" not in ctl:
            (root / "cgroup.subtree_control").write_text("+cpu")
        group = root / name
        group.mkdir()
        (group / "cpu.weight").write_text(str(weight))
    else:
        root = CGROUP_V1_CPU
        group = root / name
        group.mkdir()
        (group / "cpu.shares").write_text(str(weight * 1024 // 100))
        # RT group scheduling: a new group has no real-time budget (chrt and
        # the emulator's SCHED_FIFO forwarder would get EPERM).
        rt = group / "cpu.rt_runtime_us"
        if rt.exists():
            rt.write_text(str(int((root / "cpu.rt_runtime_us").read_text()) * 9 // 10))
    (group / "cgroup.procs").write_text(str(os.getpid()))
    return group, root


def leave_cgroup(group: Path, root: Path) -> None:
    """Move this process back and remove the group (its other members, the
    loops and the runs, are gone by now)."""
    (root / "cgroup.procs").write_text(str(os.getpid()))
    for _ in range(50):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.1)
    print(f"could not remove {group}: still in use", file=sys.stderr)


def check_l4s(l4slab: str, out: Path, seconds: int, only_l4s: bool, rt: bool) -> dict[str, object]:
    """One ``check-l4s`` run; its exit code and the l4s phase's figures."""
    # The client's own bundle per phase: its driver's wake-ups, lateness and CPU.
    send_out = out.parent / f"{out.name}-send"
    send = (
        "l4slab send '$L4SLAB_SERVER' --cc prague -t '$L4SLAB_CHECK_SECONDS' "
        f"-o {send_out}-$L4SLAB_CHECK_PHASE"
    )
    if rt:
        send = "chrt -f 10 " + send
    cmd = [*shlex.split(l4slab), "check-l4s", "-o", str(out), "--seconds", str(seconds)]
    if only_l4s:
        cmd += ["--only", "l4s"]
    t0 = time.monotonic()
    bindir = out.parent / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    script = bindir / "l4slab"
    script.write_text(f'#!/bin/sh\nexec {l4slab} "$@"\n')
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
    with (out.parent / f"{out.name}.log").open("w") as log:
        rc = subprocess.run(
            [*cmd, "--", *shlex.split(send)], stdout=log, stderr=log, env=env
        ).returncode
    row: dict[str, object] = {"rc": rc, "wall_s": round(time.monotonic() - t0, 1)}
    path = out / "summary.json"
    if path.exists():
        s = json.loads(path.read_text())
        ph = s.get("phases", {}).get("l4s", {})
        row["goodput_mbit"] = ph.get("goodput_mbit")
        row["late_mbit"] = ph.get("goodput_late_mbit")
        row["burst_mean"] = ph.get("burst_mean")
        checks = s.get("checks", [])
        row["not_pass"] = sorted(
            f"{c.get('id')}={c.get('verdict')}"
            for c in checks
            if c.get("verdict") not in ("PASS", "NOT OBSERVABLE", "NOT APPLICABLE")
        )
        scal = [c for c in checks if c.get("id") == "scalable"]
        if scal:
            row["scalable"] = scal[0].get("evidence", "")
    # The phase the row's figures are about: l4s, or the 2 % marking phase
    # (where a scalable sender's window is largest) for the whole check.
    phase = "l4s" if only_l4s else "mark-2%"
    row.update(client_driver(Path(f"{send_out}-{phase}")))
    return row


def client_driver(bundle: Path) -> dict[str, object]:
    """From the client's bundle: datagrams per timed wake-up, the wake-ups'
    lateness (µs, p50/p99), CPU per wake-up (µs) and its run-queue wait (ms)."""
    path = bundle / "summary.json"
    if not path.exists():
        return {}
    d = json.loads(path.read_text()).get("driver") or {}
    late = d.get("timer_lateness_us") or {}
    wakeups = max(int(d.get("wakeups", 0)), 1)
    return {
        "pkts_per_timeout": round(d.get("datagrams_sent", 0) / max(d.get("timeouts", 0), 1), 2),
        "late_p50_us": late.get("p50"),
        "late_p99_us": late.get("p99"),
        "cpu_us_per_wakeup": round(float(d.get("cpu_ms", 0.0)) * 1e3 / wakeups, 1),
        "rq_wait_ms": d.get("run_queue_wait_ms"),
    }


def first_packet_ms(l4slab: str) -> float:
    """Milliseconds from starting ``send`` to its first datagram."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        s.settimeout(10.0)
        port = s.getsockname()[1]
        cmd = [*shlex.split(l4slab), "send", f"127.0.0.1:{port}", "-t", "2"]
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            s.recvfrom(65536)
            return (time.monotonic() - t0) * 1e3
        finally:
            p.send_signal(signal.SIGKILL)
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--l4slab", default="l4slab", help="command that runs l4slab")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=10, help="phase length, send alone")
    ap.add_argument("--check-seconds", type=int, default=4, help="phase length, check-l4s")
    ap.add_argument("--busy", type=int, default=6, help="CPU-bound loops to run meanwhile")
    ap.add_argument("--start-runs", type=int, default=10)
    ap.add_argument("--start-only", action="store_true")
    ap.add_argument("--no-check", action="store_true", help="skip the full check-l4s runs")
    ap.add_argument("-o", "--out", type=Path, default=None)
    ap.add_argument(
        "--cgroup",
        type=int,
        default=None,
        metavar="WEIGHT",
        help="run loops and runs in a new CPU control group of this weight (e.g. 10000)",
    )
    a = ap.parse_args()

    starts = [first_packet_ms(a.l4slab) for _ in range(a.start_runs)]
    print(f"\n`{a.l4slab} send`: first packet after {statistics.median(starts):.0f} ms median,")
    print(f"{max(starts):.0f} ms max, over {len(starts)} starts (no load)\n")
    if a.start_only:
        return 0
    if os.geteuid() != 0:
        print("check-l4s needs root", file=sys.stderr)
        return 2
    out = a.out or Path(tempfile.mkdtemp(prefix="busy-send-"))
    cgroup = enter_cgroup(a.cgroup) if a.cgroup else None
    busy = start_busy(a.busy)
    rows: list[tuple[str, int, dict[str, object]]] = []
    try:
        for i in range(a.runs):
            for rt in (False, True):
                kind = "send alone, " + ("real-time" if rt else "normal")
                d = out / f"alone-{'rt' if rt else 'normal'}-{i}"
                rows.append((kind, i, check_l4s(a.l4slab, d, a.seconds, True, rt)))
                print(kind, i, rows[-1][2], flush=True)
            if not a.no_check:
                d = out / f"check-{i}"
                full = check_l4s(a.l4slab, d, a.check_seconds, False, False)
                rows.append(("check-l4s, normal", i, full))
                print("check-l4s", i, rows[-1][2], flush=True)
    finally:
        stop_busy(busy)
        if cgroup:
            leave_cgroup(*cgroup)
    where = f", in a control group of weight {a.cgroup}" if a.cgroup else ""
    print(f"\n{a.busy} busy loops, {os.cpu_count()} CPUs{where}; results in {out}\n")
    print("| run | # | exit | goodput Mbit/s (of 20) | 2nd half | mean burst | not PASS |")
    print("|---|---|---|---|---|---|---|")
    for kind, i, r in rows:
        nots = ", ".join(str(x) for x in r.get("not_pass", []))  # type: ignore[attr-defined]
        rate, late, burst = r.get("goodput_mbit"), r.get("late_mbit"), r.get("burst_mean")
        print(f"| {kind} | {i} | {r['rc']} | {rate} | {late} | {burst} | {nots} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
