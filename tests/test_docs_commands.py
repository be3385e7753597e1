"""Docs that cannot rot: every shell command of README.md and docs/*.md runs here
(how they are read, changed and skipped: tests/doc_commands.py), each page's in order
from a fresh directory, and each must exit 0."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from doc_commands import (
    EXIT,
    PAGES,
    SKIP,
    SKIP_ROOT,
    Command,
    commands,
    missing_output,
    requote,
    run_commands,
    run_pages,
    runnable,
    shorter,
    write_quotes,
)


def test_every_page_has_its_commands_read() -> None:
    every = [c for p in PAGES for c in commands(p)]
    # The README's, and a continued line joined into one command.
    readme = [c.text for c in every if c.page == "README.md"]
    assert "l4slab run reno-20mbit" in " ".join(readme)
    assert any("--set bottleneck.rate=50Mbit --set duration=10s" in t for t in readme)
    # Output lines of a console block are not commands.
    assert not [c for c in every if c.text.startswith(("[", "PASS", "verdict"))]
    # Every skip entry still names a command (a stale one is removed, not kept).
    for page, head in SKIP:
        assert any(c.page == page and c.text.startswith(head) for c in every), (page, head)
    for page, head in EXIT:
        assert any(c.page == page and c.text.startswith(head) for c in every), (page, head)
    for head in SKIP_ROOT:
        assert any(c.text.startswith(head) for c in every), head


def test_commands_are_joined_and_shortened() -> None:
    assert shorter("l4slab run reno-20mbit   # results") == (
        "l4slab run reno-20mbit --set duration=5s  # results"
    )
    assert shorter("l4slab run reno-20mbit --set duration=10s") == (
        "l4slab run reno-20mbit --set duration=10s"
    )


PAGE = """\
```sh
echo one   # not quoted
printf 'flow  a  12.5 Mbit/s\\nqueue b\\nflow c  3.1 ms\\n'
```

Prose between them.

```text output
flow a 12.5 Mbit/s
...
flow c  3.1 ms
```
"""


def test_a_text_output_block_quotes_the_command_before_it(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    first, second = commands(page)
    assert first.output == ()
    assert second.output == ("flow a 12.5 Mbit/s", "flow c  3.1 ms")
    # Quoted commands run as written: never shortened.
    assert run_commands([second], tmp_path, {"PATH": "/usr/bin:/bin"}) == []
    page.write_text("Text.\n\n```text output\nx\n```\n")
    with pytest.raises(ValueError, match=r"page\.md:3: no command block right before"):
        commands(page)
    page.write_text("```python\nprint(1)\n```\n\n```text output\n1\n```\n")
    with pytest.raises(ValueError, match="no command block right before"):
        commands(page)


def test_a_quoted_number_must_be_the_one_printed(tmp_path: Path) -> None:
    out = "flow  a  12.5 Mbit/s\nqueue b\nflow c  3.1 ms\n"
    assert missing_output(("flow a 12.5 Mbit/s", "flow c 3.1 ms"), out) is None
    assert missing_output(("flow a 12.6 Mbit/s",), out) == "flow a 12.6 Mbit/s"
    assert missing_output(("flow a 12.5",), out) == "flow a 12.5"  # a whole line
    # In the order printed.
    assert missing_output(("flow c 3.1 ms", "flow a 12.5 Mbit/s"), out) == "flow a 12.5 Mbit/s"
    wrong = Command("page.md", 2, "printf 'rtt 4.0 ms\\n'", output=("rtt 4.1 ms",))
    (failure,) = run_commands([wrong], tmp_path, {"PATH": "/usr/bin:/bin"})
    assert "page.md:2: the page quotes a line its output lacks" in failure
    assert "quoted: rtt 4.1 ms" in failure


def test_quotes_are_rewritten_from_the_run(tmp_path: Path) -> None:
    # Only numbers may move; the quote keeps its own spacing and its selection of lines.
    out = "flow  a  13.0 Mbit/s\nqueue b\nflow c  2.9 ms\n"
    assert requote(("flow a 12.5 Mbit/s", "flow c   3.1 ms"), out) == [
        "flow a 13.0 Mbit/s",
        "flow c   2.9 ms",
    ]
    # Rows that differ only in numbers keep their own row (the one sharing most words).
    rows = "seed 1: 12.5 ms\nseed 2: 13.0 ms\nseed 3: 11.1 ms\n"
    assert requote(("seed 2: 14.0 ms", "seed 3: 9.9 ms"), rows) == [
        "seed 2: 13.0 ms",
        "seed 3: 11.1 ms",
    ]
    # A line whose words changed is not guessed at.
    assert requote(("flow a 12.5 Gbit/s",), out) == [None]
    page = tmp_path / "page.md"
    quote = "```text output\nflow a 12.5 Mbit/s\n...\nflow c  3.1 ms\n```"
    assert quote in PAGE
    page.write_text(PAGE.replace(quote, quote.replace("12.5", "11.0").replace("3.1", "4.2")))
    cmds = commands(page)
    outputs: dict[Command, str] = {}
    assert run_commands(cmds, tmp_path, {"PATH": "/usr/bin:/bin"}, outputs) != []  # stale
    assert write_quotes(cmds, outputs, root=tmp_path) == []
    assert page.read_text() == PAGE
    assert run_commands(commands(page), tmp_path, {"PATH": "/usr/bin:/bin"}) == []
    page.write_text(PAGE.replace(quote, quote.replace("flow c", "flow d")))
    cmds = commands(page)
    run_commands(cmds, tmp_path, {"PATH": "/usr/bin:/bin"}, outputs)
    (problem,) = write_quotes(cmds, outputs, root=tmp_path)
    assert "page.md:11: no output line has this shape: flow d  3.1 ms" in problem


def test_the_readme_quotes_outputs() -> None:
    readme = [c for c in commands(PAGES[0]) if c.output]
    assert readme, "README.md quotes no output: the check would check nothing"


@pytest.mark.slow
@pytest.mark.docs
def test_the_commands_of_the_docs_run(native: object, tmp_path: Path) -> None:
    failures = run_pages(runnable(root=False), tmp_path)
    assert not failures, "\n\n".join(failures)


@pytest.mark.slow
@pytest.mark.docs
@pytest.mark.skipif(sys.platform != "linux", reason="the emulator runs on Linux only")
@pytest.mark.skipif(os.geteuid() != 0, reason="root-only commands (the emulator)")
def test_the_root_commands_of_the_docs_run(native: object, tmp_path: Path) -> None:
    failures = run_pages(runnable(root=True), tmp_path)
    assert not failures, "\n\n".join(failures)
