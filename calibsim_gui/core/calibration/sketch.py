"""A mergeable summary of a score distribution: KLL quantile sketch, exact moments, exact top tail."""

from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass, field

import numpy as np

KLL_K = 2000          # normalized rank error ~0.15 % (datasketches); ~35 KB per metric serialised
TOP_KEEP = 4096       # exact largest values kept for fitting the upper tail

# DataSketches' KLL serialization (little-endian): preamble ints, serial version, family, flags,
# k (u16), m (u8), unused byte; unless empty or single-item then n (u64), min_k (u16), number of
# levels (u8), unused byte, the first `levels` level offsets (u32; the last, the capacity, is
# implied), min and max (f64) and the retained items (f64) from the first offset to the capacity.
_KLL_FAMILY = 15
_KLL_M = 8                                  # the only m the Python binding writes
_KLL_MIN_K, _KLL_MAX_K = 8, 65535
_KLL_MAX_LEVELS = 61                        # the library refuses depths above 60
_EMPTY, _LEVEL_ZERO_SORTED, _SINGLE_ITEM = 1, 2, 4
_KLL_HEADER = 20


@dataclass(frozen=True)
class KllLayout:
    """What a serialized KLL doubles sketch holds, read without the native library."""

    k: int
    n: int
    items: np.ndarray           # retained items, level 0 first
    levels: tuple[int, ...]     # level boundaries into `items`, from 0 to len(items)
    min: float
    max: float


def _level_capacity(k: int, num_levels: int, height: int) -> int:
    """Items level `height` of a `num_levels`-level sketch can hold (kll_helper::level_capacity)."""
    def shrink(k: int, depth: int) -> int:
        return ((2 * k << depth) // 3 ** depth + 1) >> 1

    depth = num_levels - height - 1
    half = depth // 2 if depth > 30 else 0
    return max(_KLL_M, shrink(shrink(k, half), depth - half))


def read_kll_layout(data: bytes) -> KllLayout:
    """Check a serialized KLL doubles sketch before the native library reads it.

    Raises ValueError unless header, sizes, level offsets and items are consistent with each
    other and with the byte length, k and m are within the library's limits, every item is
    finite and inside [min, max], the level weights add up to n and sorted levels are sorted.
    """
    if len(data) < 8:
        raise ValueError(f"the quantile sketch is {len(data)} bytes, too short for its header")
    preamble, serial, family, flags, k, m = struct.unpack_from("<BBBBHB", data)
    if family != _KLL_FAMILY or serial not in (1, 2) or flags & ~7 or m != _KLL_M \
            or not _KLL_MIN_K <= k <= _KLL_MAX_K:
        raise ValueError("the quantile sketch's header is not a KLL doubles sketch's")
    if flags & _EMPTY:
        if preamble != 2 or len(data) != 8 or flags & _SINGLE_ITEM:
            raise ValueError("the empty quantile sketch has a wrong size")
        return KllLayout(k, 0, np.zeros(0), (0, 0), math.inf, -math.inf)
    if flags & _SINGLE_ITEM:
        if preamble != 2 or len(data) != 16:
            raise ValueError("the one-value quantile sketch has a wrong size")
        items = np.frombuffer(data, "<f8", 1, 8).astype(np.float64)
        return _checked_layout(KllLayout(k, 1, items, (0, 1), float(items[0]), float(items[0])), flags)
    if preamble != 5 or len(data) < _KLL_HEADER:
        raise ValueError("the quantile sketch's header has a wrong size")
    n, min_k, num_levels = struct.unpack_from("<QHB", data, 8)
    if not 1 <= num_levels <= _KLL_MAX_LEVELS or not _KLL_MIN_K <= min_k <= k:
        raise ValueError("the quantile sketch's levels or min k are out of range")
    start = _KLL_HEADER + 4 * num_levels
    capacity = sum(_level_capacity(k, num_levels, h) for h in range(num_levels))
    if len(data) < start + 16:
        raise ValueError("the quantile sketch is cut short")
    offsets = struct.unpack_from(f"<{num_levels}I", data, _KLL_HEADER) + (capacity,)
    if any(a > b for a, b in zip(offsets, offsets[1:])) or offsets[0] >= capacity:
        raise ValueError("the quantile sketch's level offsets are out of order")
    n_items = capacity - offsets[0]
    if len(data) != start + 16 + 8 * n_items:
        raise ValueError(f"the quantile sketch is {len(data)} bytes; its header implies "
                         f"{start + 16 + 8 * n_items}")
    low, high = struct.unpack_from("<dd", data, start)
    items = np.frombuffer(data, "<f8", n_items, start + 16).astype(np.float64)
    levels = tuple(o - offsets[0] for o in offsets)
    return _checked_layout(KllLayout(k, n, items, levels, low, high), flags)


def _checked_layout(layout: KllLayout, flags: int) -> KllLayout:
    """`layout` if its values are finite, ordered and weigh n in all; else ValueError."""
    items, levels = layout.items, layout.levels
    if not (math.isfinite(layout.min) and math.isfinite(layout.max) and layout.min <= layout.max
            and np.isfinite(items).all() and (items >= layout.min).all() and (items <= layout.max).all()):
        raise ValueError("the quantile sketch holds values that are not finite or outside its own range")
    if sum((b - a) << h for h, (a, b) in enumerate(zip(levels, levels[1:]))) != layout.n:
        raise ValueError("the quantile sketch's levels do not add up to its number of values")
    first_sorted = 0 if flags & _LEVEL_ZERO_SORTED else 1
    for a, b in zip(levels[first_sorted:], levels[first_sorted + 1:]):
        if np.any(np.diff(items[a:b]) < 0):
            raise ValueError("a level of the quantile sketch is out of order")
    return layout


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
        """The summary saved by `to_dict`; ValueError if it is damaged or inconsistent.

        The sketch bytes are checked (`read_kll_layout`) before the native library reads them,
        and the sketch, moments and top values are checked against each other after.
        """
        from datasketches import kll_doubles_sketch

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
                     np.asarray(d["top"], dtype=np.float64), kll_doubles_sketch.deserialize(data))
        sketch._check(layout)
        return sketch

    def _check(self, layout: KllLayout) -> None:
        """Raise ValueError unless sketch, moments and top values describe one distribution."""
        kll, top = self.kll, self.top
        if kll.n != self.n or kll.num_retained != len(layout.items):
            raise ValueError("the quantile sketch does not read back as it was written")
        if self.n == 0:
            if len(top):
                raise ValueError("an empty summary lists top values")
            return
        low, high = self.min, self.max
        if (kll.get_min_value(), kll.get_max_value()) != (low, high):
            raise ValueError("the quantile sketch's range differs from the summary's min and max")
        quantiles = np.array([kll.get_quantile(q) for q in np.linspace(0, 1, 21)])
        if np.any(np.diff(quantiles) < 0) or quantiles[0] < low or quantiles[-1] > high:
            raise ValueError("the quantile sketch's quantiles are out of order")
        if (top.ndim != 1 or len(top) != min(self.n, TOP_KEEP) or not np.isfinite(top).all()
                or np.any(np.diff(top) < 0) or top[0] < low or top[-1] != high):
            raise ValueError("the top background values are not the sorted largest values")
        slack = 1e-9 * max(1.0, abs(low), abs(high))
        if not (low - slack <= self.mean <= high + slack
                and 0 <= self.m2 <= self.n * (high - low) ** 2 + slack):
            raise ValueError("the background mean or spread lies outside the background's range")
