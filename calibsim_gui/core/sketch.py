"""A mergeable summary of a score distribution: KLL quantile sketch, exact moments, exact top tail."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

import numpy as np

KLL_K = 2000          # normalized rank error ~0.15 % (datasketches); ~35 KB per metric serialised
TOP_KEEP = 4096       # exact largest values kept for fitting the upper tail


def _new_kll():
    from datasketches import kll_doubles_sketch

    return kll_doubles_sketch(KLL_K)


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
    kll: object = field(default_factory=_new_kll)

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
        return float(self.kll.get_quantile(q))

    def rank_error(self) -> float:
        """The sketch's normalized rank error (0 when it still holds every value)."""
        return 0.0 if not self.kll.is_estimation_mode() else float(self.kll.normalized_rank_error(False))

    def weighted_items(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted distinct retained values and their weights (numbers of background pairs)."""
        pairs = np.array([(item, weight) for item, weight in self.kll], dtype=np.float64)
        items, inverse = np.unique(pairs[:, 0], return_inverse=True)
        return items, np.bincount(inverse, weights=pairs[:, 1])

    def to_dict(self) -> dict:
        return {"n": self.n, "mean": self.mean, "m2": self.m2, "min": self.min, "max": self.max,
                "top": self.top.tolist(),
                "kll_k": KLL_K, "kll": base64.b64encode(self.kll.serialize()).decode("ascii")}

    @classmethod
    def from_dict(cls, d: dict) -> "ScoreSketch":
        from datasketches import kll_doubles_sketch

        kll = kll_doubles_sketch.deserialize(base64.b64decode(d["kll"]))
        sketch = cls(int(d["n"]), float(d["mean"]), float(d["m2"]), float(d["min"]),
                     float(d["max"]), np.asarray(d["top"], dtype=np.float64), kll)
        if kll.n != sketch.n:
            raise ValueError(f"sketch holds {kll.n} values but the summary says {sketch.n}")
        return sketch
