"""A mergeable summary of a score distribution: KLL quantile sketch, exact moments, exact top tail.

The same values, added and merged in the same order, give the same summary and the same bytes
(`kll.KllSketch` compacts deterministically).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field

import numpy as np

from calibsim_gui.core.calibration.kll import KllSketch, read_kll_layout

KLL_K = 2000          # normalized rank error ~0.15 %; ~35 KB per metric serialised
TOP_KEEP = 4096       # exact largest values kept for fitting the upper tail


@dataclass
class ScoreSketch:
    """Distribution of background scores ("higher = more similar" view), mergeable exactly.

    Moments merge exactly (Chan et al.), the top values merge exactly, and the KLL sketch merges
    within its stated rank error, so two sketches of two halves of a corpus merge into the
    sketch of the whole.
    """

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    min: float = np.inf
    max: float = -np.inf
    top: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kll: KllSketch = field(default_factory=lambda: KllSketch(KLL_K))

    @classmethod
    def of(cls, values) -> "ScoreSketch":
        sketch = cls()
        sketch.update(values)
        return sketch

    def update(self, values) -> None:
        """Add `values` (1-d, finite) to the summary."""
        values = np.asarray(values, dtype=np.float64).ravel()
        if not len(values):
            return
        if not np.isfinite(values).all():
            raise ValueError("background scores must be finite")
        self._merge_moments(len(values), values.mean(), ((values - values.mean()) ** 2).sum(),
                            values.min(), values.max())
        self._merge_top(values)
        self.kll.update(values)

    def merge(self, other: "ScoreSketch") -> None:
        """Fold `other` into this summary."""
        if other.n == 0:
            return
        self._merge_moments(other.n, other.mean, other.m2, other.min, other.max)
        self._merge_top(other.top)
        self.kll.merge(other.kll)

    def _merge_moments(self, n, mean, m2, lo, hi) -> None:
        total = self.n + n
        delta = mean - self.mean
        self.m2 = self.m2 + m2 + delta ** 2 * self.n * n / total
        self.mean = self.mean + delta * n / total
        self.n = total
        self.min = float(min(self.min, lo))
        self.max = float(max(self.max, hi))

    def _merge_top(self, values) -> None:
        merged = np.concatenate([self.top, np.asarray(values, dtype=np.float64)])
        if len(merged) > TOP_KEEP:
            merged = np.partition(merged, len(merged) - TOP_KEEP)[-TOP_KEEP:]
        self.top = np.sort(merged)

    @property
    def std(self) -> float:
        return float(np.sqrt(self.m2 / (self.n - 1))) if self.n > 1 else 0.0

    def quantile(self, q: float) -> float:
        return self.kll.quantile(q)

    def rank_error(self) -> float:
        """The sketch's normalized rank error (0 when it still holds every value)."""
        return self.kll.normalized_rank_error() if self.kll.is_estimation_mode() else 0.0

    def weighted_items(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted distinct retained values and their weights (numbers of background pairs)."""
        items, weights = self.kll.weighted_items()
        items, inverse = np.unique(items, return_inverse=True)
        return items, np.bincount(inverse, weights=weights)

    def to_dict(self) -> dict:
        return {"n": self.n, "mean": self.mean, "m2": self.m2, "min": self.min, "max": self.max,
                "top": self.top.tolist(),
                "kll_k": KLL_K, "kll": base64.b64encode(self.kll.serialize()).decode("ascii")}

    @classmethod
    def from_dict(cls, d: dict, *, checked: bool = False) -> "ScoreSketch":
        """The summary saved by `to_dict`; ValueError if it is damaged or inconsistent.

        The sketch bytes are checked (`read_kll_layout`) as they are read, and the sketch,
        moments and top values are checked against each other after, unless `checked` (`d`
        passed that check before: a `profile_cache` entry).
        """
        try:
            data = base64.b64decode(d["kll"], validate=True)
        except binascii.Error:
            raise ValueError("the quantile sketch is not base64 text") from None
        layout = read_kll_layout(data)
        if d.get("kll_k", layout.k) != layout.k:
            raise ValueError(f"the quantile sketch has k = {layout.k}, the summary says {d['kll_k']}")
        n = d["n"]
        if type(n) is not int or n != layout.n:
            raise ValueError(f"the quantile sketch holds {layout.n} values but the summary says {n!r}")
        sketch = cls(n, float(d["mean"]), float(d["m2"]), float(d["min"]), float(d["max"]),
                     np.asarray(d["top"], dtype=np.float64), KllSketch.from_layout(layout))
        if not checked:
            sketch._check()
        return sketch

    def _check(self) -> None:
        """Raise ValueError unless sketch, moments and top values describe one distribution."""
        kll, top = self.kll, self.top
        if self.n == 0:
            if len(top):
                raise ValueError("an empty summary lists top values")
            return
        low, high = self.min, self.max
        if (kll.min, kll.max) != (low, high):
            raise ValueError("the quantile sketch's range differs from the summary's min and max")
        quantiles = np.array([kll.quantile(q) for q in np.linspace(0, 1, 21)])
        if np.any(np.diff(quantiles) < 0) or quantiles[0] < low or quantiles[-1] > high:
            raise ValueError("the quantile sketch's quantiles are out of order")
        if (top.ndim != 1 or len(top) != min(self.n, TOP_KEEP) or not np.isfinite(top).all()
                or np.any(np.diff(top) < 0) or top[0] < low or top[-1] != high):
            raise ValueError("the top background values are not the sorted largest values")
        slack = 1e-9 * max(1.0, abs(low), abs(high))
        if not (low - slack <= self.mean <= high + slack
                and 0 <= self.m2 <= self.n * (high - low) ** 2 + slack):
            raise ValueError("the background mean or spread lies outside the background's range")
