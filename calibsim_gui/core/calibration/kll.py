"""A KLL quantile sketch of doubles with deterministic compaction, in DataSketches' byte layout.

The sketch is Karnin, Lang and Liberty's (as in Apache DataSketches): level h holds items of
weight 2**h; a level that outgrows its capacity is sorted and every other item moves up one level.
Which half moves up is a coin flip; DataSketches draws it from a clock-seeded generator that its
Python binding cannot seed, so the same values gave different sketches run to run. Here the coin
is a hash of the sketch's count, the level and its size: independent of the values (the rank
error bound holds as for a random coin) and the same on every run, so the same updates and merges
in the same order give the same bytes.

Sketches are written and read in DataSketches' serialization of a ``kll_doubles_sketch`` (so
profiles written with the native library read here and the other way round): preamble ints,
serial version, family, flags, k (u16), m (u8), unused byte; unless empty or single-item then n
(u64), min_k (u16), number of levels (u8), unused byte, the first `levels` level offsets (u32; the
last, the capacity, is implied), min and max (f64) and the retained items (f64) from the first
offset to the capacity.
"""

from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

KLL_M = 8                                   # smallest level capacity (the only m DataSketches writes)
_KLL_FAMILY = 15
_KLL_MIN_K, _KLL_MAX_K = 8, 65535
_KLL_MAX_LEVELS = 61                        # the library refuses depths above 60
_EMPTY, _LEVEL_ZERO_SORTED, _SINGLE_ITEM = 1, 2, 4
_KLL_HEADER = 20


@dataclass(frozen=True)
class KllLayout:
    """What a serialized KLL doubles sketch holds."""

    k: int
    n: int
    items: np.ndarray           # retained items, level 0 first
    levels: tuple[int, ...]     # level boundaries into `items`, from 0 to len(items)
    min: float
    max: float
    min_k: int


def level_capacity(k: int, num_levels: int, height: int) -> int:
    """Items level `height` of a `num_levels`-level sketch can hold (kll_helper::level_capacity)."""
    def shrink(k: int, depth: int) -> int:
        return ((2 * k << depth) // 3 ** depth + 1) >> 1

    depth = num_levels - height - 1
    half = depth // 2 if depth > 30 else 0
    return max(KLL_M, shrink(shrink(k, half), depth - half))


def total_capacity(k: int, num_levels: int) -> int:
    return sum(level_capacity(k, num_levels, h) for h in range(num_levels))


def read_kll_layout(data: bytes) -> KllLayout:
    """Check a serialized KLL doubles sketch and read it.

    Raises ValueError unless header, sizes, level offsets and items are consistent with each
    other and with the byte length, k and m are within the library's limits, every item is
    finite and inside [min, max], the level weights add up to n and sorted levels are sorted.
    """
    if len(data) < 8:
        raise ValueError(f"the quantile sketch is {len(data)} bytes, too short for its header")
    preamble, serial, family, flags, k, m = struct.unpack_from("<BBBBHB", data)
    if family != _KLL_FAMILY or serial not in (1, 2) or flags & ~7 or m != KLL_M \
            or not _KLL_MIN_K <= k <= _KLL_MAX_K:
        raise ValueError("the quantile sketch's header is not a KLL doubles sketch's")
    if flags & _EMPTY:
        if preamble != 2 or len(data) != 8 or flags & _SINGLE_ITEM:
            raise ValueError("the empty quantile sketch has a wrong size")
        return KllLayout(k, 0, np.zeros(0), (0, 0), math.inf, -math.inf, k)
    if flags & _SINGLE_ITEM:
        if preamble != 2 or len(data) != 16:
            raise ValueError("the one-value quantile sketch has a wrong size")
        items = np.frombuffer(data, "<f8", 1, 8).astype(np.float64)
        return _checked_layout(KllLayout(k, 1, items, (0, 1), float(items[0]), float(items[0]), k), flags)
    if preamble != 5 or len(data) < _KLL_HEADER:
        raise ValueError("the quantile sketch's header has a wrong size")
    n, min_k, num_levels = struct.unpack_from("<QHB", data, 8)
    if not 1 <= num_levels <= _KLL_MAX_LEVELS or not _KLL_MIN_K <= min_k <= k:
        raise ValueError("the quantile sketch's levels or min k are out of range")
    start = _KLL_HEADER + 4 * num_levels
    capacity = total_capacity(k, num_levels)
    if len(data) < start + 16:
        raise ValueError("the quantile sketch is cut short")
    offsets = struct.unpack_from(f"<{num_levels}I", data, _KLL_HEADER) + (capacity,)
    if any(a > b for a, b in pairwise(offsets)) or offsets[0] >= capacity:
        raise ValueError("the quantile sketch's level offsets are out of order")
    n_items = capacity - offsets[0]
    if len(data) != start + 16 + 8 * n_items:
        raise ValueError(f"the quantile sketch is {len(data)} bytes; its header implies "
                         f"{start + 16 + 8 * n_items}")
    low, high = struct.unpack_from("<dd", data, start)
    items = np.frombuffer(data, "<f8", n_items, start + 16).astype(np.float64)
    levels = tuple(o - offsets[0] for o in offsets)
    return _checked_layout(KllLayout(k, n, items, levels, low, high, min_k), flags)


def _checked_layout(layout: KllLayout, flags: int) -> KllLayout:
    """`layout` if its values are finite, ordered and weigh n in all; else ValueError."""
    items, levels = layout.items, layout.levels
    if not (math.isfinite(layout.min) and math.isfinite(layout.max) and layout.min <= layout.max
            and np.isfinite(items).all() and (items >= layout.min).all() and (items <= layout.max).all()):
        raise ValueError("the quantile sketch holds values that are not finite or outside its own range")
    if sum((b - a) << h for h, (a, b) in enumerate(pairwise(levels))) != layout.n:
        raise ValueError("the quantile sketch's levels do not add up to its number of values")
    first_sorted = 0 if flags & _LEVEL_ZERO_SORTED else 1
    for a, b in pairwise(levels[first_sorted:]):
        if np.any(np.diff(items[a:b]) < 0):
            raise ValueError("a level of the quantile sketch is out of order")
    return layout


def _coin(n: int, level: int, size: int) -> int:
    """0 or 1: which half of a compacted level moves up, fixed by the sketch's state alone."""
    return hashlib.blake2b(struct.pack("<QQQ", n, level, size), digest_size=1).digest()[0] & 1


def _merged(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sort(np.concatenate([a, b])) if len(a) and len(b) else (a if len(a) else b)


class KllSketch:
    """A KLL sketch of doubles whose compaction depends only on what was added, in which order.

    Every level is kept sorted. Updates and merges are batched: the values join level 0 (the
    other sketch's levels join ours) and levels over capacity are compacted bottom-up, as
    DataSketches' merge does (kll_helper::general_compress), until the sketch fits.
    """

    def __init__(self, k: int):
        self.k = self.min_k = k
        self.n = 0
        self.min, self.max = math.inf, -math.inf
        self.levels: list[np.ndarray] = [np.zeros(0)]

    def update(self, values) -> None:
        """Add finite `values`."""
        values = np.asarray(values, dtype=np.float64).ravel() + 0.0       # -0.0 -> 0.0
        if not len(values):
            return
        self.levels[0] = _merged(self.levels[0], np.sort(values))
        self._add_count(len(values), values.min(), values.max())
        self._compress()

    def merge(self, other: KllSketch) -> None:
        """Fold `other` in; this sketch keeps its k."""
        if other.n == 0:
            return
        self.levels += [np.zeros(0)] * (len(other.levels) - len(self.levels))
        for h, level in enumerate(other.levels):
            self.levels[h] = _merged(self.levels[h], level)
        if other.is_estimation_mode():
            self.min_k = min(self.min_k, other.min_k)
        self._add_count(other.n, other.min, other.max)
        self._compress()

    def _add_count(self, n: int, low: float, high: float) -> None:
        self.n += n
        self.min, self.max = float(min(self.min, low)), float(max(self.max, high))

    def _compress(self) -> None:
        """Compact full levels, bottom-up, while the sketch holds more than its capacity."""
        count = self.num_retained
        target = total_capacity(self.k, len(self.levels))
        h = 0
        while h < len(self.levels):
            level = self.levels[h]
            if count > target and len(level) >= level_capacity(self.k, len(self.levels), h):
                if h == len(self.levels) - 1:
                    self.levels.append(np.zeros(0))
                    target += level_capacity(self.k, len(self.levels), 0)
                odd = len(level) % 2
                rest = level[odd:]
                self.levels[h] = level[:odd]
                self.levels[h + 1] = _merged(self.levels[h + 1], rest[_coin(self.n, h, len(level))::2])
                count -= len(rest) // 2
            h += 1

    @property
    def num_retained(self) -> int:
        return sum(map(len, self.levels))

    def is_estimation_mode(self) -> bool:
        return len(self.levels) > 1

    def normalized_rank_error(self) -> float:
        """DataSketches' single-rank error bound (99 % confidence) for this sketch's min k."""
        return 2.296 / self.min_k ** 0.9723

    def weighted_items(self) -> tuple[np.ndarray, np.ndarray]:
        """Every retained item, sorted, and its weight."""
        items = np.concatenate(self.levels)
        weights = np.concatenate([np.full(len(level), 1 << h, dtype=np.int64)
                                  for h, level in enumerate(self.levels)])
        order = np.argsort(items, kind="stable")
        return items[order], weights[order]

    def quantile(self, rank: float) -> float:
        """The first retained item whose cumulative weight exceeds `rank` of the total (exclusive,
        as the default of DataSketches' Python get_quantile)."""
        if self.n == 0:
            raise ValueError("an empty sketch has no quantiles")
        items, weights = self.weighted_items()
        index = np.searchsorted(np.cumsum(weights), int(rank * self.n), side="right")
        return float(items[min(index, len(items) - 1)])

    def rank(self, value: float) -> float:
        """Share of the weight strictly below `value` (exclusive, as DataSketches' get_rank)."""
        items, weights = self.weighted_items()
        return float(weights[items < value].sum() / self.n) if self.n else 0.0

    def serialize(self) -> bytes:
        header = struct.pack("<BBBBHBB", 2, 1, _KLL_FAMILY, _EMPTY, self.k, KLL_M, 0)
        if self.n == 0:
            return header
        if self.n == 1:
            return struct.pack("<BBBBHBBd", 2, 2, _KLL_FAMILY, _SINGLE_ITEM, self.k, KLL_M, 0,
                               self.levels[0][0])
        sizes = list(map(len, self.levels))
        first = total_capacity(self.k, len(sizes)) - sum(sizes)
        offsets = first + np.cumsum([0] + sizes[:-1], dtype=np.int64)
        return (struct.pack("<BBBBHBBQHBB", 5, 1, _KLL_FAMILY, _LEVEL_ZERO_SORTED, self.k, KLL_M, 0,
                            self.n, self.min_k, len(sizes), 0)
                + offsets.astype("<u4").tobytes() + struct.pack("<dd", self.min, self.max)
                + np.concatenate(self.levels).astype("<f8").tobytes())

    @classmethod
    def deserialize(cls, data: bytes) -> KllSketch:
        """The sketch `serialize` (or DataSketches) wrote; ValueError if the bytes are damaged."""
        return cls.from_layout(read_kll_layout(data))

    @classmethod
    def from_layout(cls, layout: KllLayout) -> KllSketch:
        sketch = cls(layout.k)
        sketch.n, sketch.min_k = layout.n, layout.min_k
        sketch.min, sketch.max = layout.min, layout.max
        bounds = layout.levels
        sketch.levels = [np.sort(layout.items[a:b]) for a, b in pairwise(bounds)]
        return sketch
