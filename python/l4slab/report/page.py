"""The building blocks of l4slab's HTML pages: the page itself (inline CSS, no external
resources), tables, figure grids, sections, a fact list. The run report, the
comparison, the sweep and the study reports are made of them.
"""

from __future__ import annotations

import base64
import html
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from l4slab.report._format import _anchor
from l4slab.report.figures import RenderedFigure
from l4slab.tables import MISSING, TableData


def html_page(title: str, body: str, version: str) -> str:
    """Wrap a body in the report page (inline CSS, no external resources)."""
    folder = resources.files("l4slab") / "templates"
    page = Template((folder / "page.html").read_text(encoding="utf-8"))
    css = (folder / "report.css").read_text(encoding="utf-8")
    return page.substitute(title=_e(title), css=css, body=body, version=_e(version))


def html_table(data: TableData, *, caption: bool = True) -> str:
    """A :class:`~l4slab.tables.TableData` as an HTML table (same cells as the CLI)."""
    head = "".join(
        f'<th class="{"num" if column.numeric else "text"}"'
        + (f' title="{_e(column.tip)}"' if column.tip else "")
        + f">{'<br>'.join(_e(part) for part in column.header.split(chr(10)))}</th>"
        for column in data.columns
    )
    rows = []
    for row in data.rows:
        cells = "".join(
            f'<td class="{"num" if column.numeric else "text"}">{_e(cell)}</td>'
            for column, cell in zip(data.columns, row.cells, strict=False)
        )
        rows.append(f"<tr{' class=sub' if row.sub else ''}>{cells}</tr>")
    title = f"<caption>{_e(data.title)}</caption>" if caption and data.title else ""
    return (
        f'<div class="scroll"><table>{title}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def figures_html(figures: Sequence[RenderedFigure]) -> str:
    """The figures as a grid of ``<figure>``s with embedded PNGs and links to the files."""
    items = []
    for figure in figures:
        spec = figure.spec
        data = base64.b64encode(figure.png).decode("ascii")
        links = " · ".join(
            f'<a href="{_e(path)}">{_e(path.rsplit(".", 1)[-1].upper())}</a>'
            for path in figure.files
        )
        items.append(
            f'<figure id="fig-{_e(spec.slug)}"{" class=wide" if spec.wide else ""}>'
            f'<img src="data:image/png;base64,{data}" alt="{_e(spec.title)}">'
            f"<figcaption><strong>{_e(spec.title)}.</strong> {_e(spec.caption)}"
            f"{' ' + links if links else ''}</figcaption></figure>"
        )
    if not items:
        return '<p class="note">No figures.</p>'
    return f'<div class="figures">{"".join(items)}</div>'


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _section(title: str, body: str) -> str:
    return f'<section id="{_anchor(title)}"><h2>{_e(title)}</h2>\n{body}\n</section>'


def _nav(titles: Iterable[str]) -> str:
    links = "".join(f'<a href="#{_anchor(title)}">{_e(title)}</a>' for title in titles)
    return f"<nav>{links}</nav>"


def _facts(facts: Mapping[str, Any]) -> str:
    items = "".join(
        f"<dt>{_e(k)}</dt><dd>{_e(MISSING if v is None else str(v))}</dd>" for k, v in facts.items()
    )
    return f'<dl class="facts">{items}</dl>'


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)
