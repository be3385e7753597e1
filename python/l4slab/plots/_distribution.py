"""A distribution of many samples in bounded memory: counts in log-spaced bins.

Used where the samples could be tens of millions (one RTT per segment of a
10-minute trace). The bins are 0.1 % wide (each edge 1.001 times the one below,
from 1 µs to 1000 s when the samples are in ms): a percentile read from the bins
is within 0.1 % of the exact one — as fine as the simulator's own histograms of
``rtt_ms`` and ``sojourn_ms`` (HdrHistogram, 3 significant digits). The smallest
and largest sample are kept exactly. The whole thing is about 21,000 counters
(166 kB), whatever the number of samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Distribution"]

#: Relative width of a bin: each edge is ``1 + RESOLUTION`` times the one below.
RESOLUTION = 1e-3
#: The range the bins cover, in the samples' unit; values outside go to the end bins.
LOWEST, HIGHEST = 1e-3, 1e6


def _bins() -> int:
    return math.ceil(math.log(HIGHEST / LOWEST) / math.log1p(RESOLUTION))


@dataclass
class Distribution:
    """Counts of samples in log-spaced bins (see the module header), plus exact extremes.

    ``add(values)`` as often as needed; read ``n``, ``min``, ``max``,
    :meth:`quantile` and :meth:`cdf`. Non-finite values are not counted.
    """

    counts: np.ndarray = field(default_factory=lambda: np.zeros(_bins(), dtype=np.int64))
    n: int = 0
    min: float = math.inf
    max: float = -math.inf

    @staticmethod
    def edges() -> np.ndarray:
        """The bin edges: ``len(counts) + 1`` values from LOWEST to about HIGHEST."""
        return np.asarray(LOWEST * np.exp(np.arange(_bins() + 1) * math.log1p(RESOLUTION)))

    @classmethod
    def of(cls, values: np.ndarray) -> Distribution:
        """A distribution holding ``values``."""
        dist = cls()
        dist.add(values)
        return dist

    def add(self, values: np.ndarray) -> None:
        """Count ``values`` (any shape; NaN and ±inf are skipped)."""
        data = np.asarray(values, dtype=np.float64).ravel()
        data = data[np.isfinite(data)]
        if not len(data):
            return
        index = np.floor(np.log(np.maximum(data, LOWEST) / LOWEST) / math.log1p(RESOLUTION))
        index = np.clip(index, 0, len(self.counts) - 1).astype(np.int64)
        self.counts += np.bincount(index, minlength=len(self.counts))
        self.n += len(data)
        self.min = min(self.min, float(data.min()))
        self.max = max(self.max, float(data.max()))

    def quantile(self, q: float) -> float:
        """The value below which a fraction ``q`` of the samples lie (NaN when empty).

        Within one bin (0.1 %) of the exact sample quantile; 0 gives ``min``, 1 ``max``.
        """
        if not self.n:
            return math.nan
        if q <= 0:
            return self.min
        if q >= 1:
            return self.max
        rank = int(np.searchsorted(np.cumsum(self.counts), q * self.n, side="left"))
        upper = float(self.edges()[rank + 1])
        return min(max(upper, self.min), self.max)

    def cdf(self) -> tuple[np.ndarray, np.ndarray]:
        """``(x, fraction)``: for each non-empty bin its upper edge (clipped to ``min`` and
        ``max``; the last x is ``max`` exactly) and the fraction of samples at or below it."""
        if not self.n:
            return np.array([], dtype=np.float64), np.array([], dtype=np.float64)
        used = np.flatnonzero(self.counts)
        x = np.clip(self.edges()[used + 1], self.min, self.max)
        x[-1] = self.max
        fraction = np.cumsum(self.counts[used]) / self.n
        return x, fraction
