"""The shell commands of README.md and docs/*.md, and how tests run them
(tests/test_docs_commands.py here, tests/test_wheel.py from an installed wheel).

Each ```sh, ```bash, ```shell and ```console block is read (in a console block only the
``$ `` lines are commands; a trailing backslash continues a line), and the commands run
in order (the README's, then the pages of docs/), in one fresh directory (so a page may
use what an earlier command wrote, and a command an earlier page ran as it stands is
not run again), with
the ``l4slab`` of this interpreter first on PATH and ``scenarios`` linked to the tree's
(pages other than the README name tree paths; test_wheel.py runs the README's commands
again from an installed wheel, in a bare directory). Each must exit 0 (or as :data:`EXIT` says).

* ``sudo`` commands run only as root (with ``sudo`` taken off), in their own test.
* Long runs get a short ``--set duration=...`` (:data:`SHORTER`), the only change
  made to a command; a command that waits for a browser gets ``BROWSER=true``.
* A page quotes what a command prints in a fenced block whose info string is
  ``text output``, right after the block holding the command: each of its non-blank
  lines must be a line of the output (stdout, then stderr) of the last command before
  it, in the same order, with other lines allowed between them and a line of ``...``
  marking lines left out (see :func:`missing_output`). A quoted command is run as
  written (never shortened), so the numbers are the ones a reader gets.
* What cannot run in a test is in :data:`SKIP`, each with its reason; a whole
  page of developer benchmarks is in :data:`SKIP_PAGES`; a command the page says exits
  with another code (a verdict) is in :data:`EXIT`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("**/*.md"))]
SHELLS = ("sh", "bash", "shell", "console")

#: Pages whose commands are a developer's, not a user's: skipped whole, with the reason.
SKIP_PAGES = {
    "docs/PERFORMANCE.md": "benchmarks: minutes each, a second build, valgrind and chrt",
}

#: Commands that cannot run in a test: (page, the command's start) -> why.
SKIP = {
    ("README.md", "./run.sh"): "builds the project and reproduces every study (~2 min)",
    ("README.md", "./test.sh"): "the whole test suite itself",
    ("README.md", "l4slab reproduce all"): "~105 s; test_studies_* run each study",
    ("docs/cli.md", "l4slab reproduce all"): "~105 s; test_studies_* run each study",
    ("docs/studies.md", "l4slab reproduce all"): "~105 s; test_studies_* run each study",
    ("docs/cli.md", "l4slab sweep sweep-aqm --dask"): "needs a Dask cluster at that address",
    ("docs/sweeps.md", "l4slab sweep sweep-aqm --dask"): "needs a Dask cluster at that address",
    ("docs/sweeps.md", "dask "): "starts a Dask cluster (serves until stopped)",
    ("docs/apps.md", "python bench/apps_study.py"): "regenerates the figures (minutes)",
    ("docs/emulator.md", "cargo build"): "a release build of the emulator (minutes)",
    ("docs/emulator.md", "sudo L4SLAB_EMU_BIN="): "needs that release build (cargo build)",
    ("docs/emulator.md", "sudo python3 bench/emu/compare.py"): "a benchmark (minutes)",
    ("docs/emulator.md", "sudo bash bench/emu/two_paths_happy_eyeballs.sh"): (
        "a checkout's bench script (bench/ is not linked where commands run); needs nft and curl"
    ),
    ("docs/gateway.md", "sudo l4slab gateway --lan eth1"): "needs a real LAN interface (eth1)",
    ("docs/results.md", "l4slab run scenario.toml"): "names the reader's own scenario",
    ("docs/results.md", "tshark"): "reads the reader's own capture (results/x)",
    ("docs/results.md", "tcpdump"): "reads the reader's own capture (results/x)",
    ("docs/emulator.md", "tshark"): "reads the capture the root command above wrote (as root)",
    ("docs/send.md", "l4slab serve -o"): "serves until stopped; test_send.py runs it",
    ("docs/send.md", "l4slab send 192.0.2.10"): "a documentation address (RFC 5737)",
    ("docs/send.md", "l4slab send 127.0.0.1"): "needs an l4slab serve; test_send.py runs it",
    ("docs/check-l4s.md", "sudo l4slab check-l4s --server './my-quic-server'"): (
        "names the reader's own application"
    ),
    ("docs/emulator.md", "sudo l4slab emu --qdisc codel --qdisc-param ecn=true --report"): (
        "runs the reader's own ./my-app"
    ),
    ("docs/report.md", "chromium"): "a screenshot of the report: minutes on a busy machine",
    ("docs/studies.md", "chromium"): "a screenshot of the report: minutes on a busy machine",
}

#: Root commands that take a minute or more: the tests that run the same thing.
SKIP_ROOT = {
    "sudo l4slab check-l4s": "nine emulated phases, ~1 min each run; test_check_l4s.py",
}

#: Commands the page says end with another exit code than 0: (page, start) -> code.
EXIT = {
    ("docs/emulator.md", "sudo l4slab emu --ecn-path bleach ecn-check"): 3,  # unfit for L4S
    ("docs/emulator.md", "sudo l4slab emu --ecn-path-up remark ecn-check"): 3,
    # Bad input: exit 2, with the error the page quotes.
    ("docs/cli.md", "l4slab run reno-20mbit --set bottleneck.rate=fast"): 2,
    ("docs/flent.md", "l4slab test rrul --rate fast"): 2,
    ("docs/sweeps.md", "for g in bottleneck.qdsic=fifo"): 2,
    ("docs/scenarios.md", "for s in bottleneck.down.rate=fast"): 2,
}


def expected_exit(cmd: Command) -> int:
    """The exit code ``cmd`` should end with (0 unless :data:`EXIT` says otherwise)."""
    return next(
        (
            code
            for (page, head), code in EXIT.items()
            if cmd.page == page and cmd.text.startswith(head)
        ),
        0,
    )


#: A run longer than a few seconds of wall time: what is added to make it short.
SHORTER = (
    # Past its 10 s warmup.
    (re.compile(r"^l4slab sweep sweep-aqm\b"), "12s"),
    (re.compile(r"^l4slab (run|sweep) reno-20mbit\b"), "5s"),
)


#: The info string of a fenced block quoting the output of the command before it.
OUTPUT_BLOCK = "text output"


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str
    #: The lines the page quotes from this command's output (a ``text output`` block).
    output: tuple[str, ...] = ()
    #: The page's line number of each of those lines (for :func:`write_quotes`).
    output_at: tuple[int, ...] = ()

    @property
    def root(self) -> bool:
        return self.text.startswith("sudo ")


def commands(page: Path) -> list[Command]:
    """The shell commands of a Markdown page, in order."""
    name = page.relative_to(REPO).as_posix() if page.is_relative_to(REPO) else page.name
    found: list[Command] = []
    block: str | None = None
    pending: list[str] = []
    start = 0
    quoted: list[str] = []
    quoted_at: list[int] = []
    previous = ""  # the kind of the last fenced block that ended
    opened = 0  # the line the current block opens on
    for number, raw in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()  # a block in a list item is indented
        if line.startswith("```"):
            if block == OUTPUT_BLOCK:  # the block ends: it quotes the command before it
                if previous not in SHELLS or not found or pending:
                    raise ValueError(f"{name}:{opened}: no command block right before")
                last = found[-1]
                found[-1] = replace(
                    last,
                    output=last.output + tuple(quoted),
                    output_at=last.output_at + tuple(quoted_at),
                )
                quoted, quoted_at = [], []
            if block is not None:
                previous = block
            block, opened = (line[3:].strip(), number) if block is None else (None, opened)
            continue
        if block == OUTPUT_BLOCK:
            if line and line != "...":
                quoted.append(line)
                quoted_at.append(number)
            continue
        if block not in SHELLS:
            continue
        if not pending:
            if block == "console" and not line.startswith("$ "):
                continue
            text = line.removeprefix("$ ").strip()
            if not text or text.startswith("#"):
                continue
            start = number
            pending.append(text)
        else:
            pending.append(line.strip())
        if pending[-1].endswith("\\"):
            pending[-1] = pending[-1][:-1].rstrip()
            continue
        found.append(Command(name, start, " ".join(pending)))
        pending = []
    return found


def skip_reason(cmd: Command) -> str | None:
    if cmd.page in SKIP_PAGES:
        return SKIP_PAGES[cmd.page]
    for (page, head), why in SKIP.items():
        if cmd.page == page and cmd.text.startswith(head):
            return why
    for head, why in SKIP_ROOT.items():
        if cmd.text.startswith(head):
            return why
    return None


def missing_output(quoted: tuple[str, ...], output: str) -> str | None:
    """The first quoted line not found in ``output`` (after the one before it), or None.

    Lines compare with runs of spaces as one, so a quote may be re-indented or its
    columns narrowed; nothing else is loose: a number must be the one printed."""
    lines = iter(" ".join(line.split()) for line in output.splitlines())
    for want in quoted:
        if " ".join(want.split()) not in lines:  # consumes up to the match: in order
            return want
    return None


def shorter(text: str) -> str:
    for pattern, duration in SHORTER:
        if pattern.search(text) and "duration=" not in text:
            # Before a trailing comment, which the shell would otherwise swallow it into.
            code, hash_, comment = text.partition(" #")
            return f"{code.rstrip()} --set duration={duration}" + (f"  #{comment}" if hash_ else "")
    return text


def environment(bin_dir: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default this process's environment) with ``bin_dir`` first on PATH."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["BROWSER"] = "true"  # --open: a browser that opens nothing, at once
    env["COLUMNS"] = "120"
    return env


def run_pages(pages: dict[str, list[Command]], tmp_path: Path) -> list[str]:
    """Run the pages' commands in order, all in one new directory under ``tmp_path``
    (with ``scenarios`` linked to the tree's), so that a run, a sweep or a study one page
    made is resumed, not made again, by the next; the failures, as messages."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "scenarios").symlink_to(REPO / "scenarios")
    failures = run_commands(
        [c for cmds in pages.values() for c in cmds],
        work,
        environment(Path(sys.executable).parent),
    )
    shutil.rmtree(work, ignore_errors=True)
    return failures


def run_commands(
    cmds: list[Command],
    work: Path,
    env: dict[str, str],
    outputs: dict[Command, str] | None = None,
) -> list[str]:
    """Run ``cmds`` in order in ``work``; the failures, as messages. With ``outputs``, the
    output of each command that ran as the page expects is kept there."""
    failures = []
    done_before: dict[str, str] = {}  # command -> its output
    for cmd in cmds:
        text = cmd.text.removeprefix("sudo ") if cmd.root else cmd.text
        if not cmd.output:  # a quoted output is the unshortened command's
            text = shorter(text)
        key = text.partition(" #")[0].rstrip()
        if key in done_before:
            # An earlier page ran the same command here: its results are here.
            failures += quote_failures(cmd, text, done_before[key])
            if outputs is not None:
                outputs[cmd] = done_before[key]
            continue
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", text],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,  # `-- bash` then ends at once
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        want = expected_exit(cmd)
        if done.returncode == want:
            done_before[key] = done.stdout + done.stderr
            failures += quote_failures(cmd, text, done_before[key])
            if outputs is not None:
                outputs[cmd] = done_before[key]
        else:
            failures.append(
                f"{cmd.page}:{cmd.line}: exit {done.returncode} (not {want}): {text}\n"
                f"{done.stdout[-1500:]}{done.stderr[-1500:]}"
            )
    return failures


def quote_failures(cmd: Command, text: str, output: str) -> list[str]:
    """A failure message when the page's quoted output of ``cmd`` is not in ``output``."""
    wrong = missing_output(cmd.output, output)
    if wrong is None:
        return []
    return [
        f"{cmd.page}:{cmd.line}: the page quotes a line its output lacks: {text}\n"
        f"quoted: {wrong}\noutput:\n{output[-3000:]}"
    ]


def runnable(root: bool) -> dict[str, list[Command]]:
    """The commands to run, by page: the root-only ones (``sudo``) or the others."""
    pages: dict[str, list[Command]] = {}
    for page in PAGES:
        for cmd in commands(page):
            if cmd.root == root and skip_reason(cmd) is None:
                pages.setdefault(cmd.page, []).append(cmd)
    return pages


# ------------------------------------------------------------------ quotes from runs
#: A number as printed (``12``, ``-0.85``, ``1,024``, ``2.5e-4``): what may change between runs
#: of a changed model; everything else in a quoted line is its shape.
NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?")


def shape(line: str) -> str:
    """A line with its numbers taken out and runs of spaces folded: what a quote and the
    output line it stands for share when only the numbers moved."""
    return " ".join(NUMBER.sub("#", line).split())


def requote(quoted: tuple[str, ...], output: str) -> list[str | None]:
    """Each quoted line as the output prints it now: the next output line (in order) of the
    same :func:`shape`, written in the quote's spacing (its words replaced one for one), or
    None where no output line has that shape (the page needs a person)."""
    lines = [" ".join(line.split()) for line in output.splitlines()]
    at = 0
    new: list[str | None] = []
    for want in quoted:
        target, words = shape(want), want.split()
        # Of the lines of that shape, the one sharing most words with the quote (rows that
        # differ only in numbers, e.g. "seed 2: 13.0", keep their own row), the first of equals.
        same = [i for i in range(at, len(lines)) if shape(lines[i]) == target]
        if not same:
            new.append(None)
            continue
        hit = max(
            same,
            key=lambda i: (sum(a == b for a, b in zip(lines[i].split(), words, strict=True)), -i),
        )
        at = hit + 1
        # The quote's own spacing kept: each word replaced by the printed one (a shape has
        # as many words as the line it was taken from).
        parts = re.split(r"(\s+)", want.strip())
        parts[::2] = lines[hit].split()
        new.append("".join(parts))
    return new


def write_quotes(cmds: list[Command], outputs: dict[Command, str], root: Path = REPO) -> list[str]:
    """Rewrite every ``text output`` block of ``cmds`` from ``outputs`` (the commands' runs),
    in place in the pages (``root / page``); what could not be requoted, as messages."""
    problems: list[str] = []
    edits: dict[str, dict[int, str]] = {}
    for cmd in cmds:
        if not cmd.output:
            continue
        if cmd not in outputs:
            problems.append(f"{cmd.page}:{cmd.line}: did not run as the page expects: {cmd.text}")
            continue
        for old, new, number in zip(
            cmd.output, requote(cmd.output, outputs[cmd]), cmd.output_at, strict=True
        ):
            if new is None:
                problems.append(f"{cmd.page}:{number}: no output line has this shape: {old}")
            elif new != old:
                edits.setdefault(cmd.page, {})[number] = new
    for page, lines_at in edits.items():
        path = root / page
        text = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for number, new in lines_at.items():
            raw = text[number - 1]
            indent = raw[: len(raw) - len(raw.lstrip())]
            text[number - 1] = indent + new + "\n"
        path.write_text("".join(text), encoding="utf-8")
    return problems


def main(argv: list[str]) -> int:
    """``python3 tests/doc_commands.py --write [--root]``: run the pages' commands as the
    docs test does and rewrite each quoted output from what its command printed."""
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(prog="doc_commands.py", description=main.__doc__)
    parser.add_argument("--write", action="store_true", required=True)
    parser.add_argument("--root", action="store_true", help="the sudo commands (run as root)")
    args = parser.parse_args(argv)
    pages = runnable(root=args.root)
    cmds = [c for page in pages.values() for c in page]
    outputs: dict[Command, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        (work / "scenarios").symlink_to(REPO / "scenarios")
        failures = run_commands(cmds, work, environment(Path(sys.executable).parent), outputs)
    failures = [f for f in failures if "the page quotes a line its output lacks" not in f]
    problems = failures + write_quotes(cmds, outputs)
    for problem in problems:
        print(problem, file=sys.stderr)
    quoted = sum(len(c.output) for c in cmds)
    blocks = sum(1 for c in cmds if c.output)
    print(f"{quoted} quoted lines in {blocks} blocks; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
