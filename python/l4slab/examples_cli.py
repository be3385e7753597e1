"""``l4slab examples``: list the scenarios l4slab ships, or copy one out to edit.

The scenarios are package data (:mod:`l4slab.shipped`); any command that takes a
SCENARIO also takes one's name (``l4slab run reno-20mbit``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from l4slab._cli_base import EXIT_BAD_INPUT, _fail, _help, _stderr, _stdout, arg, errors, out_opt

__all__ = ["register"]

EXAMPLES_SHORT = "List the shipped example scenarios, or copy one out."
EXAMPLES_HELP = _help(
    "Without NAME: list the scenarios l4slab ships, each with the first line of its leading "
    "comment. Any command that takes a SCENARIO file also takes one of these names "
    "([bold]l4slab run reno-20mbit[/bold], [bold]l4slab sweep sweep-aqm[/bold]).",
    "With NAME: copy that scenario to ./NAME.toml (or into -o DIR) to edit it. A file "
    "already there is never overwritten: the copy is refused (exit 2) unless the file is "
    "the same.",
    "Exit codes: 0 done, 2 an unknown NAME or a different file already at the target.",
)


def examples_command(
    name: Annotated[
        str | None,
        arg(metavar="NAME", help="A shipped scenario to copy out, e.g. reno-20mbit."),
    ] = None,
    out: Annotated[
        Path | None,
        out_opt("DIR", "Where to copy NAME.toml (created if missing). Default: here."),
    ] = None,
) -> None:
    from l4slab import shipped

    with errors():
        found = shipped.examples()
    if name is None:
        if out is not None:
            raise _fail("-o/--out: give the NAME of the scenario to copy", EXIT_BAD_INPUT)
        width = max(len(n) for n in found)
        console = _stdout()
        for key, path in found.items():
            where = "" if path.parent.name == "examples" else "  (golden)"
            console.print(
                f"{key:<{width}}  {shipped.example_description(path)}{where}",
                markup=False,
                soft_wrap=True,
            )
        return
    source = found.get(name.removesuffix(".toml"))
    if source is None:
        raise _fail(
            f"{name}: not a shipped scenario; choose one of: {', '.join(found)}", EXIT_BAD_INPUT
        )
    target_dir = out if out is not None else Path()
    target = target_dir / source.name
    text = source.read_bytes()
    if target.exists():
        if target.is_file() and target.read_bytes() == text:
            _stderr().print(f"{target}: already there, the same", markup=False)
            return
        raise _fail(
            f"{target} exists and differs from the shipped {source.stem}; not overwritten "
            "(remove it, or copy elsewhere with -o DIR)",
            EXIT_BAD_INPUT,
        )
    with errors(writing=str(target)):
        target_dir.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text)
    _stderr().print(f"wrote {target}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("examples", help=EXAMPLES_HELP, short_help=EXAMPLES_SHORT, no_args_is_help=False)(
        examples_command
    )
