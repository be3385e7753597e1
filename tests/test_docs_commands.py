"""Docs that cannot rot: every shell command of README.md and docs/*.md runs here
(how they are read, changed and skipped: tests/doc_commands.py), each page's in order
from a fresh directory, and each must exit 0."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from doc_commands import EXIT, PAGES, SKIP, SKIP_ROOT, commands, run_pages, runnable, shorter


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
