"""Tables and the HTML page of a study: published vs measured, and the claims' verdicts.

The cells are computed once (:func:`measures_data`, :func:`claims_data`) and
rendered for the terminal (rich), for HTML (``report.html``, the look of
``l4slab report``) and as Markdown (``table.md``, for a study's README).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from l4slab.output import staging_dir
from l4slab.report import (
    FIGURES_DIR,
    FigureSpec,
    figures_html,
    html_page,
    html_table,
    render_figure,
    write_text_atomic,
)
from l4slab.results import Results, load
from l4slab.studies.figures import FIGURES
from l4slab.studies.runner import Outcome
from l4slab.tables import MISSING, Column, Row, TableData, plain_table

__all__ = [
    "REPORT_FILE",
    "claims_data",
    "claims_table",
    "group_tables",
    "markdown_tables",
    "measures_data",
    "measures_tables",
    "pivot_data",
    "summary_table",
    "write_study_report",
]

REPORT_FILE = "report.html"
#: Groups with at most this many runs get a side-by-side table (table.md, report.html).
PIVOT_RUNS = 10
#: The same in the terminal, which is narrower.
TERMINAL_PIVOT_RUNS = 4


# --------------------------------------------------------------------------- cells


def number(value: Any, digits: int = 3) -> str:
    """A value for a table: ``digits`` decimals (thousands separators), booleans as words."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    number = float(value)
    if number != number:
        return MISSING
    return f"{number:,.{digits}f}"


def _claim_value(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return number(value)
    magnitude = abs(float(value))
    if magnitude >= 1000 or magnitude == 0:
        return f"{float(value):,.0f}"
    return f"{float(value):.3g}"


def measures_data(outcome: Outcome, *, group: str | None = None) -> TableData:
    """Published vs measured: one row per measure and run (the measure named once).

    ``group`` keeps only the runs of that group (e.g. ``"main"``).
    """
    study = outcome.study
    groups = {run.name: run.group for run in study.runs}
    chosen = {name for name, g in groups.items() if group is None or g == group}
    show_group = group is None and len(set(groups.values())) > 1
    show_spread = any(len(run.seeds) > 1 for run in study.runs if run.name in chosen)
    columns = [
        Column("measure", numeric=False),
        Column("run", numeric=False, no_wrap=True),
        *([Column("group", numeric=False)] if show_group else []),
        Column("published"),
        Column("measured"),
        *([Column("over seeds\nmin to max")] if show_spread else []),
    ]
    rows = []
    for measure in study.measures:
        title = f"{measure.label} ({measure.unit})" if measure.unit else measure.label
        for i, run in enumerate(r for r in measure.runs if r in chosen):
            value = outcome.values[(measure.name, run)]
            spread = value.spread
            cells = [
                title if i == 0 else "",
                run,
                *([groups[run]] if show_group else []),
                number(value.published, measure.digits) if value.published is not None else "",
                number(value.value, measure.digits),
            ]
            if show_spread:
                if spread is not None:
                    cells.append(
                        f"{number(spread[0], measure.digits)} to "
                        f"{number(spread[1], measure.digits)} (n={len(value.seeds)})"
                    )
                elif not outcome.seed_matters(run) and len(study.run(run).seeds) > 1:
                    cells.append("same for every seed")
                else:
                    cells.append("")
            rows.append(Row(tuple(cells)))
    title = f"{study.id}: published vs measured" + (f" ({group} runs)" if group else "")
    return TableData(title, tuple(columns), tuple(rows))


def pivot_data(outcome: Outcome, group: str) -> TableData:
    """The runs of one group side by side: a row per measure, a column per run.

    A cell is the measured value, with the published one in brackets. A measure that
    applies to none of the group's runs (its ``runs`` are elsewhere) has no row.
    """
    study = outcome.study
    runs = [run for run in study.runs if run.group == group]
    columns = (Column("measure", numeric=False), *(Column(run.name) for run in runs))
    rows = []
    for measure in study.measures:
        if not any((measure.name, run.name) in outcome.values for run in runs):
            continue
        cells = [f"{measure.label} ({measure.unit})" if measure.unit else measure.label]
        for run in runs:
            value = outcome.values.get((measure.name, run.name))
            if value is None:
                cells.append("")
                continue
            text = number(value.value, measure.digits)
            if value.published is not None:
                text += f" [{number(value.published, measure.digits)}]"
            cells.append(text)
        rows.append(Row(tuple(cells)))
    title = f"{study.id}: {group} runs side by side (published in brackets)"
    return TableData(title, columns, tuple(rows))


def robust_text(outcome: Outcome, claim_id: str) -> str:
    """``--robust``'s word on a claim: ``FRAGILE: rate x0.8 FAIL (1.2), ...`` with the
    variants that flip its verdict, else that none does."""
    robust = outcome.robust

    def listed(results: list[tuple[str, str, Any]]) -> str:
        return "; ".join(
            f"{name} {verdict.upper()} ({_claim_value(value)})" for name, verdict, value in results
        )

    flips, outside = robust.flips(outcome, claim_id), robust.outside(outcome, claim_id)
    beyond = f"; outside its stated range: {listed(outside)}" if outside else ""
    if flips:
        return f"FRAGILE: {listed(flips)}{beyond}"
    inside = len(robust.variants) - len(outside)
    if outside:
        return f"steady in the {inside} within its stated range{beyond}"
    return f"steady in all {inside}"


def claims_data(outcome: Outcome) -> TableData:
    """One row per claim: id, the publication's words, the check, the value, the verdict
    (and, after ``--robust``, whether a variant flips it)."""
    columns: tuple[Column, ...] = (
        Column("id", numeric=False, no_wrap=True),
        Column("claim", numeric=False),
        Column("check", numeric=False),
        Column("value"),
        Column("verdict", numeric=False, no_wrap=True),
    )
    if outcome.robust is not None:
        names = ", ".join(variant.name for variant, _ in outcome.robust.variants)
        columns += (Column(f"robust ({names})", numeric=False),)
    rows = []
    for result in outcome.claims:
        check = f"{result.claim.expr.text} {result.claim.bound_text}"
        value = _claim_value(result.value)
        if result.detail:
            value = f"{value} ({result.detail})" if result.value is not None else result.detail
        text = result.claim.text
        if result.verdict == "gap":
            text = f"{text} — model gap: {result.claim.gap}"
        if (param := outcome.study.calibration(result.claim.id)) is not None:
            text = f"{text} — {param.parameter} = {param.value} was fitted to this claim"
        cells = [result.claim.id, text, check, value, result.verdict.upper()]
        if outcome.robust is not None:
            cells.append(robust_text(outcome, result.claim.id))
        rows.append(Row(tuple(cells)))
    return TableData(f"{outcome.study.id}: claims — {holds_text(outcome)}", columns, tuple(rows))


def holds_text(outcome: Outcome, noun: str = "") -> str:
    """``3 of 4 [claims] hold`` (``, 1 calibrated`` and ``, 1 a model gap`` when there
    are such claims)."""
    passed, total = outcome.count()
    gaps, calibrated = outcome.gaps(), outcome.calibrated()
    fragile = len(outcome.robust.fragile(outcome)) if outcome.robust is not None else 0
    return (
        f"{passed} of {total} {noun}hold"
        + (f", {calibrated} calibrated" if calibrated else "")
        + (f", {gaps} a model gap" if gaps else "")
        + (f", {fragile} FRAGILE" if fragile else "")
    )


# --------------------------------------------------------------------------- terminal


def _table(title: str) -> Table:
    return plain_table(title, padding=(0, 1))


def _rich(data: TableData, *, verdict_column: int | None = None) -> Table:
    table = _table(data.title)
    for column in data.columns:
        table.add_column(
            Text(column.header),
            justify="right" if column.numeric else "left",
            no_wrap=column.no_wrap,
            overflow="fold",
        )
    for row in data.rows:
        cells = [Text(cell) for cell in row.cells]  # plain text: no rich markup in claims
        if verdict_column is not None:
            verdict = row.cells[verdict_column]
            cells[verdict_column] = Text(verdict, style=_RICH_STYLE.get(verdict, "bold red"))
        table.add_row(*cells)
    return table


def measures_tables(outcome: Outcome) -> list[Table]:
    """Published vs measured, per group of runs, for the terminal."""
    return [_rich(data) for data in group_tables(outcome, pivot_runs=TERMINAL_PIVOT_RUNS)]


def claims_table(outcome: Outcome) -> Table:
    """The claims with PASS (green) / FAIL (red), for the terminal."""
    return _rich(claims_data(outcome), verdict_column=4)


def summary_table(outcomes: Sequence[Outcome]) -> Table:
    """One row per study: runs, claims that hold, verdict (``l4slab reproduce all``)."""
    table = _table("studies")  # titles are plain text: see _rich
    for header, numeric in (
        ("study", False),
        ("title", False),
        ("runs", True),
        ("claims\nhold", True),
        ("verdict", False),
    ):
        table.add_column(header, justify="right" if numeric else "left")
    for outcome in outcomes:
        passed, total = outcome.count()
        gaps, calibrated = outcome.gaps(), outcome.calibrated()
        notes = [f"{calibrated} calibrated"] if calibrated else []
        notes += [f"{gaps} gap"] if gaps else []
        if outcome.robust is not None and (fragile := outcome.robust.fragile(outcome)):
            notes.append(f"{len(fragile)} FRAGILE")
        verdict = outcome.verdict.upper()
        table.add_row(
            Text(outcome.study.id),
            Text(outcome.study.title),
            str(outcome.study.jobs),
            f"{passed} of {total}" + (f" ({', '.join(notes)})" if notes else ""),
            Text(verdict, style=_RICH_STYLE[verdict]),
        )
    return table


# --------------------------------------------------------------------------- markdown


def _markdown(data: TableData) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(cell(c.header) for c in data.columns) + " |"
    rule = "|" + "|".join("---:" if c.numeric else "---" for c in data.columns) + "|"
    body = ["| " + " | ".join(cell(c) for c in row.cells) + " |" for row in data.rows]
    return "\n".join([f"**{data.title}**", "", head, rule, *body])


def group_tables(outcome: Outcome, *, pivot_runs: int = PIVOT_RUNS) -> list[TableData]:
    """Published vs measured per group of runs, main first: side by side (a column per
    run) when the group has at most ``pivot_runs`` runs, else a row per run."""
    groups: list[str] = []
    for run in outcome.study.runs:
        if run.group not in groups:
            groups.append(run.group)
    groups.sort(key=lambda g: g != "main")
    tables = []
    for group in groups:
        count = sum(run.group == group for run in outcome.study.runs)
        tables.append(
            pivot_data(outcome, group)
            if count <= pivot_runs
            else measures_data(outcome, group=group)
        )
    return tables


def markdown_tables(outcome: Outcome) -> str:
    """The tables as Markdown (table.md), for a study's README: :func:`group_tables`,
    then the claims."""
    parts = [_markdown(data) for data in [*group_tables(outcome), claims_data(outcome)]]
    return "\n\n".join(parts) + "\n"


# --------------------------------------------------------------------------- HTML


class _Context:
    """What figures draw from: the outcome's values and the runs' bundles (first seed)."""

    def __init__(self, outcome: Outcome, root: Path):
        self.outcome = outcome
        self.root = root
        self._results: dict[str, Results] = {}

    def label(self, run: str) -> str:
        return self.outcome.study.run(run).label

    def results(self, run: str) -> Results:
        if run not in self._results:
            self._results[run] = load(self.root / self.outcome.study.run(run).dirs()[0])
        return self._results[run]

    def values(self, measure: str, run: str) -> tuple[float | None, list[float]]:
        value = self.outcome.values[(measure, run)]
        return value.value, [v for v in value.seeds.values() if v is not None]

    def published(self, measure: str, run: str) -> float | str | None:
        return self.outcome.values[(measure, run)].published

    def measure_text(self, measure: str) -> tuple[str, str]:
        spec = self.outcome.study.measure(measure)
        return spec.label, spec.unit


def study_figures(outcome: Outcome, root: Path) -> list[FigureSpec]:
    """The declared figures as report figure specs."""
    context = _Context(outcome, root)
    specs = []
    for decl in outcome.study.figures:
        kind = FIGURES[decl.kind]

        def draw(ax: Any, kind: Any = kind, decl: Any = decl) -> None:
            kind.draw(ax, context, decl.args)

        specs.append(FigureSpec(decl.name, decl.title, decl.caption, draw, wide=decl.wide))
    return specs


def write_study_report(outcome: Outcome, directory: Path) -> Path:
    """Write ``report.html`` and ``figures/`` of a study into ``directory``."""
    rendered = [render_figure(spec) for spec in study_figures(outcome, directory)]
    with staging_dir(directory / FIGURES_DIR) as tmp:
        for figure in rendered:
            (tmp / f"{figure.spec.slug}.png").write_bytes(figure.png)
            (tmp / f"{figure.spec.slug}.svg").write_text(figure.svg, encoding="utf-8")
            figure.files.extend(
                [f"{FIGURES_DIR}/{figure.spec.slug}.png", f"{FIGURES_DIR}/{figure.spec.slug}.svg"]
            )
    return write_text_atomic(directory / REPORT_FILE, study_html(outcome, rendered))


def study_html(outcome: Outcome, figures: Sequence[Any]) -> str:
    """The study report page."""
    study = outcome.study
    verdict = (
        f'<p class="verdict" style="{_VERDICT_STYLE[outcome.verdict]}">'
        f"{_e(holds_text(outcome, 'claims '))} — {outcome.verdict.upper()}</p>"
    )
    parts = [
        f'<h1>{_e(study.title)} <span class="kind">— l4slab study {_e(study.id)}</span></h1>',
        f'<p class="lead">{_e(study.description)}</p>' if study.description else "",
        f"<p><strong>Source:</strong> {_e(study.source)}</p>",
        verdict,
        '<nav><a href="#claims">Claims</a><a href="#measures">Published vs measured</a>'
        '<a href="#figures">Figures</a><a href="#runs">Runs</a></nav>',
        _section("claims", "Claims", _claims_html(outcome)),
        _section(
            "measures",
            "Published vs measured",
            "".join(html_table(data) for data in group_tables(outcome))
            + '<p class="note">Measured: the measure over the run\'s seeds (its stat; mean '
            "unless the study says otherwise), with the range over seeds when there are "
            "several; published values in brackets in the side-by-side tables. A run whose "
            "first seed drew no random number ran once: every seed gives its results "
            "(&ldquo;same for every seed&rdquo;).</p>",
        ),
        _section("figures", "Figures", figures_html(figures)),
        _section("runs", "Runs", _runs_html(outcome)),
    ]
    return html_page(
        f"{study.id} — l4slab study", "\n".join(p for p in parts if p), outcome.tool_version or "?"
    )


_VERDICT_STYLE = {
    "pass": "font-weight:600;color:#1b7f3b",
    "calibrated": "font-weight:600;color:#1f5f9a",
    "gap": "font-weight:600;color:#9a6700",
    "fail": "font-weight:600;color:#b3261e",
}
_RICH_STYLE = {
    "PASS": "bold green",
    "CALIBRATED": "bold cyan",
    "GAP": "bold yellow",
    "FAIL": "bold red",
}


def _claims_html(outcome: Outcome) -> str:
    rows = []
    for result in outcome.claims:
        claim = result.claim
        verdict = result.verdict.upper()
        value = _claim_value(result.value)
        detail = f"<br><span class=note>{_e(result.detail)}</span>" if result.detail else ""
        if result.verdict == "gap":
            detail += f"<br><span class=note>model gap: {_e(claim.gap or '')}</span>"
        if outcome.robust is not None:
            detail += f"<br><span class=note>robust: {_e(robust_text(outcome, claim.id))}</span>"
        if (param := outcome.study.calibration(claim.id)) is not None:
            detail += (
                f"<br><span class=note>calibrated: {_e(param.parameter)} = {_e(param.value)} "
                f"was fitted to this claim ({_e(param.what)})</span>"
            )
        rows.append(
            "<tr>"
            f'<td class="text">{_e(claim.id)}</td>'
            f'<td class="text">{_e(claim.text)}<br><span class="note">{_e(claim.why)}</span></td>'
            f'<td class="text"><code>{_e(claim.expr.text)}</code> {_e(claim.bound_text)}</td>'
            f'<td class="num">{_e(value)}{detail}</td>'
            f'<td class="text" style="{_VERDICT_STYLE[result.verdict]}">{verdict}</td>'
            "</tr>"
        )
    head = "".join(
        f'<th class="{cls}">{name}</th>'
        for name, cls in (
            ("id", "text"),
            ("claim (and why this bound)", "text"),
            ("check", "text"),
            ("value", "num"),
            ("verdict", "text"),
        )
    )
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def seeds_text(outcome: Outcome, run: str) -> str:
    """The seeds a run ran, e.g. ``1, 2, 3``, or ``1 (nothing random: stands for 1 to 10)``."""
    ran = [job.seed for job in outcome.jobs if job.run == run]
    text = ", ".join(str(seed) for seed in ran)
    declared = [s for s in outcome.study.run(run).seeds if s is not None]
    if len(declared) > len(ran) and not outcome.seed_matters(run):
        text += f" (nothing random: stands for {', '.join(str(s) for s in declared)})"
    return text


def _runs_html(outcome: Outcome) -> str:
    dirs: dict[str, list[str]] = {}
    for job in outcome.jobs:
        dirs.setdefault(job.run, []).append(job.directory)
    rows = []
    for run in outcome.study.runs:
        links = ", ".join(
            f'<a href="{_e(d)}/summary.json">{_e(d)}</a>' for d in dirs.get(run.name, [])
        )
        rows.append(
            "<tr>"
            f'<td class="text">{_e(run.name)}</td><td class="text">{_e(run.group)}</td>'
            f'<td class="text">{_e(run.scenario_name)}</td>'
            f'<td class="text"><code>{_e(" ".join(run.sets))}</code></td>'
            f'<td class="text">{_e(seeds_text(outcome, run.name))}</td>'
            f'<td class="text">{links}</td></tr>'
        )
    head = "".join(
        f"<th>{name}</th>" for name in ("run", "group", "scenario", "--set", "seeds", "results")
    )
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{_e(title)}</h2>\n{body}\n</section>'


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)
