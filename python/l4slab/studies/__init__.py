"""Studies: published experiments as runs, measures and machine-checked claims.

A study is a directory ``scenarios/studies/<id>/`` with scenario files, a README
and a ``study.toml`` (see docs/studies.md). ``l4slab reproduce <id>`` runs it::

    from l4slab import studies

    study = studies.load_study("scenarios/studies/litespeed-bbr-loss")
    outcome = studies.reproduce(study, "results/studies")
    outcome.passed, outcome.count()          # (True, (3, 3))

Modules: :mod:`~l4slab.studies.spec` (study.toml), :mod:`~l4slab.studies.expr`
(the claim language), :mod:`~l4slab.studies.metrics` (registered metric
functions), :mod:`~l4slab.studies.figures` (figure kinds),
:mod:`~l4slab.studies.runner` (running and study.json) and
:mod:`~l4slab.studies.report` (tables and the HTML page).
"""

from __future__ import annotations

from l4slab.studies.expr import ExprError, compile_expr
from l4slab.studies.runner import Outcome, check_scenarios, reproduce
from l4slab.studies.spec import Study, StudyError, find_studies, load_study

__all__ = [
    "ExprError",
    "Outcome",
    "Study",
    "StudyError",
    "check_scenarios",
    "compile_expr",
    "find_studies",
    "load_study",
    "reproduce",
]
