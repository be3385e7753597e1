"""The ``cdf`` and ``bars`` figure kinds of study reports, drawn from a fake context."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest

from l4slab.studies.figures import FIGURES, DeclContext

CONTEXT = DeclContext(runs=["a", "b"], measures={"loss": ["a", "b"], "stall": ["a"]})


class _Series:
    def __init__(self, values: list[float]):
        self.t = np.arange(len(values), dtype=float)
        self.v = np.asarray(values, dtype=float)

    def series(self, series: str, key: str) -> tuple[np.ndarray, np.ndarray]:
        assert (series, key) == ("flow/call", "rtt_max_ms.down")
        return self.t, self.v


class _Context:
    def __init__(self) -> None:
        self.data = {"a": _Series([30, 10, 20, 40]), "b": _Series([5, 6, 7, 8])}

    def label(self, run: str) -> str:
        return f"run {run}"

    def results(self, run: str) -> Any:
        return self.data[run]

    def values(self, measure: str, run: str) -> tuple[float | None, list[float]]:
        return {"a": (4.0, [2.0, 6.0]), "b": (1.0, [1.0])}[run]

    def published(self, measure: str, run: str) -> float | str | None:
        return 40.0 if run == "a" else "nearly none"

    def measure_text(self, measure: str) -> tuple[str, str]:
        return (f"{measure} of the call", "%")


def test_cdf_draws_each_runs_sorted_values_from_after_s_on():
    kind = FIGURES["cdf"]
    args = kind.check(
        {"runs": ["a", "b"], "series": "flow/call", "key": "rtt_max_ms.down", "after_s": 1},
        CONTEXT,
    )
    fig, ax = plt.subplots()
    kind.draw(ax, _Context(), args)
    lines = {line.get_label(): line for line in ax.get_lines()}
    a = lines["run a"]
    # Intervals from t = 1 s: 10, 20, 40 — the first (30 at t = 0) is left out.
    assert list(a.get_xdata()) == [10, 20, 40]
    assert list(a.get_ydata()) == pytest.approx([1 / 3, 2 / 3, 1])
    assert list(lines["run b"].get_xdata()) == [6, 7, 8]
    assert "RTT" in ax.get_xlabel()
    plt.close(fig)


def test_bars_draw_the_mean_with_the_seed_spread_and_published_numbers():
    kind = FIGURES["bars"]
    args = kind.check({"measures": ["loss"], "runs": ["a", "b"], "ylabel": "%"}, CONTEXT)
    fig, ax = plt.subplots()
    kind.draw(ax, _Context(), args)
    heights = [p.get_height() for p in ax.patches]
    assert heights == [4.0, 1.0]
    # The published 40 for run a is a hollow marker; run b's text is not drawn.
    markers = [line for line in ax.get_lines() if line.get_marker() == "s"]
    assert [list(m.get_ydata()) for m in markers] == [[40.0]]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["loss of the call (%)"]
    plt.close(fig)


@pytest.mark.parametrize(
    ("kind", "raw", "message"),
    [
        ("cdf", {"runs": ["a"], "series": "s", "key": "k", "after_s": "5"}, "after_s"),
        ("cdf", {"runs": ["zz"], "series": "s", "key": "k"}, "runs: no run 'zz'"),
        ("bars", {"measures": [], "runs": ["a"]}, "measures"),
        ("bars", {"measures": ["nope"], "runs": ["a"]}, "'nope' is not a measure"),
        ("bars", {"measures": ["stall"], "runs": ["a", "b"]}, "not taken for run 'b'"),
    ],
)
def test_bad_arguments_name_the_argument(kind: str, raw: dict[str, Any], message: str):
    with pytest.raises(ValueError, match=message):
        FIGURES[kind].check(raw, CONTEXT)
