"""The OS boundary (ARCHITECTURE.md, DESIGN.md §1): ``unsafe`` only in l4slab-sys.

The compiler enforces it through the workspace lints (``unsafe_code = "deny"``),
but only in a crate that takes them (``[lints] workspace = true``): a crate
added without that line could use ``unsafe`` unnoticed, and an
``#[allow(unsafe_code)]`` turns the lint off where it stands. These tests make
both visible.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import tomllib

REPO = Path(__file__).resolve().parents[1]
#: The one crate that may use ``unsafe``.
OS_CRATE = "l4slab-sys"
#: Where the lint is turned off outside the OS crate, and why: a counting
#: global allocator must implement the unsafe ``GlobalAlloc`` trait.
ALLOWED = {"crates/l4slab-quic/tests/alloc.rs"}


def _manifest(path: Path) -> dict[str, Any]:
    with path.open("rb") as f:
        return tomllib.load(f)


def test_the_workspace_denies_unsafe_code() -> None:
    lints = _manifest(REPO / "Cargo.toml")["workspace"]["lints"]
    assert lints["rust"]["unsafe_code"] == "deny"


def test_every_crate_but_the_os_crate_takes_the_workspace_lints() -> None:
    crates = sorted((REPO / "crates").glob("*/Cargo.toml"))
    assert len(crates) > 10
    without = [
        p.parent.name
        for p in crates
        if p.parent.name != OS_CRATE and _manifest(p).get("lints") != {"workspace": True}
    ]
    assert without == [], f"add `[lints] workspace = true` to {without}"
    os_lints = _manifest(REPO / "crates" / OS_CRATE / "Cargo.toml")["lints"]
    assert os_lints["rust"]["unsafe_code"] == "allow"
    # Each of its unsafe blocks says why it is sound.
    assert os_lints["clippy"]["undocumented_unsafe_blocks"] == "deny"


def test_the_lint_is_turned_off_only_where_listed() -> None:
    allow = re.compile(r"allow\([^)]*\bunsafe_code\b")
    found = {
        str(p.relative_to(REPO))
        for p in (REPO / "crates").rglob("*.rs")
        if not p.is_relative_to(REPO / "crates" / OS_CRATE) and allow.search(p.read_text())
    }
    assert found == ALLOWED
