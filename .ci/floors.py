"""Print pip constraints pinning every declared dependency to its floor (``name==floor``).

The floors in pyproject.toml are versions l4slab is tested with: the test command
installs l4slab against exactly these and runs the Python suite there too.
Usage: python3 .ci/floors.py [EXTRA ...] > floors.txt
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

_FLOOR = re.compile(r"^\s*([A-Za-z0-9._-]+)\s*>=\s*([0-9][^,;\s]*)")


def floors(extras: list[str]) -> list[str]:
    project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    out = []
    for requirement in requirements:
        requirement, _, marker = requirement.partition(";")
        match = _FLOOR.match(requirement)
        if match is None:
            sys.exit(f"error: {requirement!r} declares no floor (write name>=version)")
        line = f"{match[1]}=={match[2]}"
        out.append(f"{line}; {marker.strip()}" if marker.strip() else line)
    return out


if __name__ == "__main__":
    print("\n".join(floors(sys.argv[1:])))
