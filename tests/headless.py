"""Headless Chromium for the report tests: is it installed, and a screenshot of a page."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path


def chromium() -> str | None:
    """The Chromium executable, or ``None`` when it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_screenshot(
    page: Path, shot: Path, size: tuple[int, int]
) -> subprocess.CompletedProcess[str]:
    """Load ``page`` in headless Chromium (a fresh profile, no network) and write a
    ``size`` (width, height) screenshot to ``shot``."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [
                str(chromium()),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                f"--screenshot={shot}",
                f"--window-size={size[0]},{size[1]}",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
