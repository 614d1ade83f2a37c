"""Calibrators: fitted on references, applied to "higher = more similar" scores.

scikit-learn habits: settings in ``__init__``, ``fit(...)`` returns ``self``, learned state in
attributes ending in ``_``, ``transform(scores)`` is pure, ``to_dict``/``from_dict`` for saving.
"""

from __future__ import annotations

import math

import numpy as np

from calibsim_gui.core.calibration.sketch import ScoreSketch
from calibsim_gui.core.errors import NotFittedError

MIN_BACKGROUND_PAIRS = 1000


class Calibrator:
    """Shared plumbing: fitted-state check, (de)serialisation of the ``_`` attributes."""

    _state: tuple[str, ...] = ()      # learned attributes, saved by to_dict
    _arrays: tuple[str, ...] = ()     # those of them that are ndarrays
    _settings: tuple[str, ...] = ()   # __init__ keywords

    def _check_fitted(self) -> None:
        if any(not hasattr(self, name) for name in self._state):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit() first")

    def to_dict(self) -> dict:
        self._check_fitted()
        out = {"type": type(self).__name__}
        out.update({k: getattr(self, k) for k in self._settings})
        for name in self._state:
            value = getattr(self, name)
            out[name] = value.tolist() if isinstance(value, np.ndarray) else value
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Calibrator":
        kind = CALIBRATORS.get(d.get("type"))
        if kind is None:
            raise ValueError(f"unknown calibrator type {d.get('type')!r}")
        obj = kind(**{k: d[k] for k in kind._settings})
        for name in kind._state:
            value = d[name]
            setattr(obj, name, np.asarray(value, dtype=np.float64) if name in kind._arrays else value)
        obj._validate()
        return obj

    def _validate(self) -> None:
        """Raise ValueError if loaded state could not have come from `fit` (hand-edited files)."""


def _as_scores(scores) -> np.ndarray:
    return np.asarray(scores, dtype=np.float64)


def is_finite_number(value) -> bool:
    """True for a finite real number (not a bool, a string or a list)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_finite_vector(value, *, empty: bool = False) -> bool:
    """True for a 1-d array of finite numbers (non-empty unless `empty`)."""
    return value.ndim == 1 and (empty or len(value) > 0) and bool(np.isfinite(value).all())


def check_outputs(calibrator: Calibrator, grid: np.ndarray, *, bounds=(-np.inf, np.inf),
                  strict: bool = True) -> None:
    """Raise ValueError unless `calibrator` maps the increasing, finite `grid` to finite,
    non-decreasing values within `bounds` (and, if `strict`, higher at the end than at the start).

    The meaning check of a loaded file: whatever its fields say, its calibrated scores must
    keep the order of the raw scores and stay on their declared scale.
    """
    with np.errstate(all="ignore"):
        out = calibrator.transform(grid)
    if not np.isfinite(out).all():
        raise ValueError("it gives scores that are not finite numbers")
    if np.any(np.diff(out) < 0) or (strict and not out[-1] > out[0]):
        raise ValueError("it does not rank higher raw scores higher")
    if out.min() < bounds[0] or out.max() > bounds[1]:
        raise ValueError(f"it gives scores outside {bounds[0]:g}-{bounds[1]:g}")


HUMAN_SHIFT = 0.042
"""How far below the straight line from a typical unrelated pair (0) to identical text (1)
people rate pairs, on a 0-1 scale: the median of (line - human score) over the training splits
of two labelled sources with different annotators (STS-B train+dev and SICK-R train+dev, each
weighted equally; all-MiniLM-L6-v2). `scripts/fit_human_shift.py` measures it."""


class ReferenceScaleCalibrator(Calibrator):
    """calibsim's default: where a score lies between a typical pair of unrelated sentences and
    identical text, read on people's 0-1 scale.

    With ``t = (s - unrelated_) / (identical_ - unrelated_)`` (0 = the median score of all pairs
    of calibsim's reference sentences, 1 = a text with itself: both measured on the model, so
    every model is equated onto one scale) the map is ``t - shift``, where `shift` is
    `HUMAN_SHIFT`, the same for every model; over the top ``FADE`` of the line the shift fades
    linearly to 0, so identical text stays at 1. Below ``LOW`` and above ``HIGH`` the line continues
    as hyperbolic tails towards 0 and 1 with the same slope, so the map is smooth, strictly
    increasing and never ties scores at either end.

    ``unrelated_by_language_`` holds the unrelated end measured on reference sentences in other
    languages (code -> median, then resampled medians): `transform` and `interval` use it for
    scores whose language is given as that code. Resampling the reference sentences gives ``unrelated_resampled_``:
    `interval` maps a score through each resampled line (the *reference uncertainty*; it says
    nothing about how people would rate the pair, see `AgreementBand`). ``violations_`` names
    anchor levels whose median scores fall out of order (the ladder is a check, not a fit).
    """

    _settings = ("n_resamples", "seed", "shift")
    _state = ("unrelated_", "identical_", "unrelated_resampled_", "unrelated_by_language_", "violations_")
    _arrays = ("unrelated_resampled_",)
    LOW, HIGH = 0.01, 0.999                        # where the line hands over to the tails
    FADE = 0.1                                     # the top tenth of t, where the shift fades out
    _INTERVAL_CHUNK = 2048           # scores mapped through every line at once (one 2-D array)

    def __init__(self, *, n_resamples: int = 200, seed: int = 0, shift: float = HUMAN_SHIFT):
        self.n_resamples, self.seed, self.shift = n_resamples, seed, shift

    def fit(self, scores, levels, targets: dict[str, float], *, unrelated, identical: float,
            unrelated_by_language: dict | None = None) -> "ReferenceScaleCalibrator":
        """Take the two ends of the scale, and check the anchor ladder's order.

        Parameters
        ----------
        scores : array-like of shape (n_pairs,), "higher = more similar"
            The anchor pairs' scores (only their order by level is checked).
        levels : sequence of str of shape (n_pairs,), each pair's level name
        targets : dict level name -> target value in [0, 1] (orders the levels)
        unrelated : array-like of shape (1 + n_resamples,)
            Median score of the reference sentences' pairs, then the same over resampled sentences
            (`reference_scale.unrelated_medians`).
        identical : float
            The score of a text with itself.
        unrelated_by_language : dict language code -> array-like of shape (1 + n_resamples,)
            The same medians on reference sentences in other languages.
        """
        scores, levels = _as_scores(scores), np.asarray(levels).astype(str)
        ends = {"": _as_scores(unrelated)} | {k: _as_scores(v) for k, v in (unrelated_by_language or {}).items()}
        for code, values in ends.items():
            if not identical > values.max():
                raise ValueError(f"identical texts ({identical:.4g}) must score above unrelated ones "
                                 f"({values.max():.4g}{' in ' + code if code else ''})")
        names = sorted(set(levels), key=targets.__getitem__)
        if len(names) < 2:
            raise ValueError("an anchor ladder needs pairs on at least two levels")
        medians = [np.median(scores[levels == name]) for name in names]
        self.violations_ = [f"{names[i + 1]} scores below {names[i]}"
                            for i in range(len(names) - 1) if medians[i + 1] <= medians[i]]
        main = ends.pop("")
        self.unrelated_, self.identical_ = float(main[0]), float(identical)
        self.unrelated_resampled_ = main[1:1 + self.n_resamples]
        self.unrelated_by_language_ = {code: values[:1 + self.n_resamples].tolist()
                                       for code, values in sorted(ends.items())}
        return self

    def languages(self) -> tuple[str, ...]:
        """Languages with an unrelated end of their own."""
        self._check_fitted()
        return tuple(self.unrelated_by_language_)

    def _ends(self, language: str | None) -> tuple[float, np.ndarray]:
        """The unrelated end and its resampled values for `language` (None or unknown: the main one)."""
        values = self.unrelated_by_language_.get(language) if language else None
        if values is None:
            return self.unrelated_, self.unrelated_resampled_
        return float(values[0]), np.asarray(values[1:], dtype=np.float64)

    def _validate(self) -> None:
        by_language = self.unrelated_by_language_
        if not (all(map(is_finite_number, (self.unrelated_, self.identical_, self.shift)))
                and is_finite_vector(self.unrelated_resampled_, empty=True)
                and isinstance(by_language, dict)
                and all(isinstance(k, str) and isinstance(v, list) and v and all(map(is_finite_number, v))
                        for k, v in by_language.items())
                and isinstance(self.violations_, list) and all(isinstance(v, str) for v in self.violations_)):
            raise ValueError("the calibrated scale's fields are not numbers")
        ends = np.concatenate([self.unrelated_resampled_, [self.unrelated_],
                               *[np.asarray(v, dtype=np.float64) for v in by_language.values()]])
        if not ((ends < self.identical_).all() and -0.5 < self.shift < 0.5):
            raise ValueError("the calibrated scale's ends or shift are inconsistent")

    def transform(self, scores, language=None) -> np.ndarray:
        """Calibrated scores of `scores`, each with the unrelated end of its language where it has
        one: `language` is one code for every score, or one per score ("" or None: the main end)."""
        self._check_fitted()
        s = _as_scores(scores)
        flat, out = s.reshape(-1), np.empty(s.size)
        for mask, code in self._groups(flat.size, language):
            out[mask] = self._line(flat[mask], self._ends(code)[0])
        return out.reshape(s.shape)

    def interval(self, scores, *, confidence: float = 0.95, language=None) -> tuple[np.ndarray, np.ndarray]:
        """Reference uncertainty: the `confidence` range of each calibrated score when the
        reference sentences are resampled (`language` as in `transform`).

        Returns
        -------
        lo, hi : ndarray of shape (n_scores,)
        """
        self._check_fitted()
        s = _as_scores(scores).reshape(-1)
        lo, hi = np.empty_like(s), np.empty_like(s)
        for mask, code in self._groups(s.size, language):
            lo[mask], hi[mask] = self._interval(s[mask], *self._ends(code), confidence)
        return lo, hi

    def _groups(self, n: int, language) -> list[tuple[np.ndarray, str | None]]:
        """(mask over the n scores, language) for each group of scores sharing an unrelated end."""
        if language is None or isinstance(language, str):
            return [(np.ones(n, dtype=bool), language)]
        language = np.asarray(language, dtype=object)
        own = [(language == code, code) for code in self.unrelated_by_language_]
        rest = np.ones(n, dtype=bool)
        for mask, _ in own:
            rest &= ~mask
        return [(rest, None)] + [(mask, code) for mask, code in own if mask.any()]

    def _interval(self, s: np.ndarray, main: float, resampled: np.ndarray, confidence: float):
        if not len(resampled):
            value = self._line(s, main)
            return value, value.copy()
        lo, hi, tail = np.empty_like(s), np.empty_like(s), 50 * (1 - confidence)
        lows = np.asarray(resampled, dtype=np.float64)[:, None]
        for start in range(0, len(s), self._INTERVAL_CHUNK):
            part = slice(start, start + self._INTERVAL_CHUNK)
            lines = self._line(s[None, part], lows)          # (resamples, scores): one line per row
            lo[part], hi[part] = np.percentile(lines, [tail, 100 - tail], axis=0)
        return lo, hi

    def _line(self, s: np.ndarray, low) -> np.ndarray:
        """`s` through the line with unrelated end `low` (a number, or an array broadcast with `s`)."""
        t = (s - low) / (self.identical_ - low)
        t = t - self.shift * np.clip((1 - t) / self.FADE, 0, 1)
        out = np.clip(t, self.LOW, self.HIGH)
        below, above = t < self.LOW, t > self.HIGH
        out[below] = self.LOW / (1 + (self.LOW - t[below]) / self.LOW)
        out[above] = 1 - (1 - self.HIGH) / (1 + (t[above] - self.HIGH) / (1 - self.HIGH))
        return np.where(np.isnan(s), np.nan, out)


class AgreementBand(Calibrator):
    """Where people's 0-1 scores fall for pairs with a given calibrated score (split conformal).

    Fitted on labelled pairs that the calibrated scale was not fitted on: within each quarter of
    the calibrated scale, the residuals ``human - calibrated`` give the range holding each
    `rates` share of the pairs (finite-sample conformal quantiles, ``ceil((n + 1) q)``-th); `band`
    interpolates linearly between the quarters' centres, so the band has no steps.
    ``lower_`` and ``upper_`` have shape (len(rates), n_bins); ``source_`` names the labelled
    file (name, sha256, pairs, scale) and ``model_`` the model it was measured with.
    """

    _settings = ("rates",)
    _state = ("edges_", "lower_", "upper_", "n_pairs_", "source_", "model_")
    _arrays = ("edges_", "lower_", "upper_")
    EDGES = (0.0, 0.25, 0.5, 0.75, 1.0)
    MIN_PER_BIN = 20

    def __init__(self, *, rates=(0.8, 0.95)):
        self.rates = [float(r) for r in rates]

    def fit(self, calibrated, human, *, source: dict, model: str, groups=None) -> "AgreementBand":
        """Residual quantiles of `human` (0-1) around `calibrated`, both of shape (n_pairs,).

        `groups` (shape (n_pairs,), e.g. each pair's source) measures the quantiles in each group
        on its own and keeps, per quarter, the widest: the band holds on every source, whichever
        has the most pairs (annotators of different sources agree with the scale differently).
        """
        c, y = _as_scores(calibrated), _as_scores(human)
        g = np.zeros(len(c), dtype=int) if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1]
        keep = np.isfinite(c) & np.isfinite(y)
        c, y, g = c[keep], y[keep], g[keep]
        edges = np.asarray(self.EDGES)
        bins = self._bins(c, edges)
        shape = (len(self.rates), len(edges) - 1)
        lower, upper = np.full(shape, np.inf), np.full(shape, -np.inf)
        for group in np.unique(g):
            if np.bincount(bins[g == group], minlength=len(edges) - 1).min() < self.MIN_PER_BIN:
                raise ValueError(f"every quarter of the calibrated scale needs {self.MIN_PER_BIN} labelled "
                                 "pairs of each source to measure where people's scores fall")
            for k in range(len(edges) - 1):
                r = np.sort(y[(bins == k) & (g == group)] - c[(bins == k) & (g == group)])
                n = len(r)
                for i, rate in enumerate(self.rates):
                    lower[i, k] = min(lower[i, k], r[max(math.floor((n + 1) * (1 - rate) / 2) - 1, 0)])
                    upper[i, k] = max(upper[i, k], r[min(math.ceil((n + 1) * (1 + rate) / 2) - 1, n - 1)])
        self.edges_, self.lower_, self.upper_ = edges, lower, upper
        self.n_pairs_, self.source_, self.model_ = int(len(c)), dict(source), str(model)
        return self

    def measured_on(self) -> str:
        """What the band was measured on, in words: its source's ``what`` and files."""
        self._check_fitted()
        files = ", ".join(str(f.get("name")) for f in self.source_.get("files", []) if isinstance(f, dict))
        what = str(self.source_.get("what") or self.source_.get("name") or "labelled pairs")
        return f"{what} ({files})" if files else what

    @staticmethod
    def _bins(c: np.ndarray, edges: np.ndarray) -> np.ndarray:
        return np.clip(np.searchsorted(edges[1:-1], np.nan_to_num(c), side="right"), 0, len(edges) - 2)

    def band(self, calibrated, rate: float) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper ends (0-1) of the range holding `rate` of people's scores.

        Returns
        -------
        lo, hi : ndarray of shape (n_scores,)
        """
        self._check_fitted()
        if rate not in self.rates:
            raise ValueError(f"this band was measured at {', '.join(f'{r:.0%}' for r in self.rates)}, not {rate:.0%}")
        c = _as_scores(calibrated)
        i, centres = self.rates.index(rate), (self.edges_[1:] + self.edges_[:-1]) / 2
        x = np.nan_to_num(c)                     # each quarter's range at its centre, linear between
        lo = np.clip(c + np.interp(x, centres, self.lower_[i]), 0, 1)
        hi = np.clip(c + np.interp(x, centres, self.upper_[i]), 0, 1)
        return np.where(np.isnan(c), np.nan, lo), np.where(np.isnan(c), np.nan, hi)

    def transform(self, scores) -> np.ndarray:
        """The middle of the widest band (a band is a range: see `band`)."""
        lo, hi = self.band(scores, self.rates[-1])
        return (lo + hi) / 2

    def _validate(self) -> None:
        shape = (len(self.rates), len(self.edges_) - 1)
        if not (all(map(is_finite_number, self.rates)) and all(0 < r < 1 for r in self.rates)
                and is_finite_vector(self.edges_) and self.lower_.shape == shape == self.upper_.shape
                and np.isfinite(self.lower_).all() and np.isfinite(self.upper_).all()
                and (self.lower_ <= self.upper_).all() and (np.abs(self.lower_) <= 1).all()
                and (np.abs(self.upper_) <= 1).all() and isinstance(self.source_, dict)
                and isinstance(self.model_, str) and type(self.n_pairs_) is int and self.n_pairs_ > 0):
            raise ValueError("the human agreement band's fields are malformed")


class MinMaxCalibrator(Calibrator):
    """Linear map sending a low reference to 0 and a high reference to 1 (not clipped)."""

    _state = ("low_", "high_")

    def fit(self, low: float, high: float) -> "MinMaxCalibrator":
        if not high > low:
            raise ValueError(f"the high reference ({high:.4g}) must score above the low one ({low:.4g})")
        self.low_, self.high_ = float(low), float(high)
        return self

    def _validate(self) -> None:
        if not (is_finite_number(self.low_) and is_finite_number(self.high_) and self.high_ > self.low_):
            raise ValueError("a min-max scale needs finite ends, the high one above the low one")

    def transform(self, scores) -> np.ndarray:
        self._check_fitted()
        return (_as_scores(scores) - self.low_) / (self.high_ - self.low_)


class ZScoreCalibrator(Calibrator):
    """Standard score against the background distribution."""

    _state = ("mean_", "std_")

    def fit(self, background: ScoreSketch) -> "ZScoreCalibrator":
        self.mean_, self.std_ = background.mean, background.std
        if not self.std_ > 0:
            raise ValueError("the background scores do not vary; a z-score is undefined")
        return self

    def _validate(self) -> None:
        if not (is_finite_number(self.mean_) and is_finite_number(self.std_) and self.std_ > 0):
            raise ValueError("a z-score needs a finite mean and a positive standard deviation")

    def transform(self, scores) -> np.ndarray:
        self._check_fitted()
        return (_as_scores(scores) - self.mean_) / self.std_


class _GridSearch:
    """``searchsorted(items, s, "left")`` and ``(..., "right")`` at once, for many queries.

    A uniform grid of cells over the sorted, distinct `items` gives each query the few items of
    its own cell to compare with: ~5x faster than two binary searches, with identical results
    (the cell of a value is a monotone function of it, so every item in a lower cell is smaller).
    """

    CELLS_PER_ITEM = 4
    MAX_DEPTH = 16      # items sharing a cell; beyond this plain binary search is faster
    CHUNK = 1 << 20     # queries at a time, to bound the temporaries

    def __init__(self, items: np.ndarray):
        self.items = items
        self.n_cells = self.CELLS_PER_ITEM * len(items)
        span = float(items[-1] - items[0])
        self.scale = self.n_cells / span if span > 0 else 0.0
        self.first = np.searchsorted(self._cells(items), np.arange(self.n_cells + 1))
        self.depth = int(np.diff(self.first).max())

    def _cells(self, s: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):             # inf * 0 and NaN: sent to cell 0
            k = (s - self.items[0]) * self.scale
        k = np.clip(np.nan_to_num(k, nan=0.0), 0, self.n_cells - 1)
        return k.astype(np.int64)

    def __call__(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.depth > self.MAX_DEPTH:
            return (np.searchsorted(self.items, s, side="left"),
                    np.searchsorted(self.items, s, side="right"))
        below, upto = np.empty(s.shape, dtype=np.int64), np.empty(s.shape, dtype=np.int64)
        flat_s, flat_below, flat_upto = s.reshape(-1), below.reshape(-1), upto.reshape(-1)
        last = len(self.items) - 1
        for start in range(0, flat_s.size, self.CHUNK):
            part = flat_s[start:start + self.CHUNK]
            k = self._cells(part)
            first, stop = self.first[k], self.first[k + 1]
            n_below, n_upto = first.copy(), first.copy()
            for offset in range(self.depth):
                index = first + offset
                inside = index < stop
                value = self.items[np.minimum(index, last)]
                n_below += inside & (value < part)
                n_upto += inside & (value <= part)
            flat_below[start:start + self.CHUNK] = n_below
            flat_upto[start:start + self.CHUNK] = n_upto
        return below, upto


class PercentileCalibrator(Calibrator):
    """Percentile of a score among background pairs, in [0, 100], ties counted as half.

    ``halfwidth_`` is the 95 % uncertainty of every percentile in percentage points: the
    Dvoretzky–Kiefer–Wolfowitz bound for the background size plus the sketch's rank error.
    It is the same for every score; report it once.
    """

    _settings = ("confidence",)
    _state = ("items_", "cum_", "n_", "halfwidth_")
    _arrays = ("items_", "cum_")

    def __init__(self, *, confidence: float = 0.95):
        self.confidence = confidence

    def fit(self, background: ScoreSketch) -> "PercentileCalibrator":
        items, weights = background.weighted_items()
        self.items_, self.cum_ = items, np.concatenate([[0.0], np.cumsum(weights)])
        self._search = None
        self.n_ = float(self.cum_[-1])
        dkw = math.sqrt(math.log(2 / (1 - self.confidence)) / (2 * background.n))
        self.halfwidth_ = 100 * (dkw + background.rank_error())
        return self

    def _validate(self) -> None:
        items, cum = self.items_, self.cum_
        if not (is_finite_vector(items) and is_finite_vector(cum) and len(cum) == len(items) + 1
                and cum[0] == 0 and np.all(np.diff(items) > 0) and np.all(np.diff(cum) > 0)
                and is_finite_number(self.n_) and self.n_ == cum[-1]
                and is_finite_number(self.halfwidth_) and 0 <= self.halfwidth_ <= 100):
            raise ValueError("the percentile table is not increasing or does not add up")

    def transform(self, scores) -> np.ndarray:
        self._check_fitted()
        s = _as_scores(scores)
        if getattr(self, "_search", None) is None:      # built on first use (also after from_dict)
            distinct = len(self.items_) > 1 and bool(np.all(np.diff(self.items_) > 0))
            self._search = _GridSearch(self.items_) if distinct else None
        if self._search is not None:
            left, right = self._search(s)
        else:
            left, right = (np.searchsorted(self.items_, s, side=side) for side in ("left", "right"))
        out = 100 * (self.cum_[left] + self.cum_[right]) / (2 * self.n_)
        return np.where(np.isnan(s), np.nan, out)


class TailSurpriseCalibrator(Calibrator):
    """Surprise ``-log10 P(random background pair >= s)``, ordered beyond the background sample.

    The body uses the background's empirical survival function, interpolated between sketch
    values; the top ``tail_fraction`` is a generalised Pareto fit (shape clipped at 0, i.e. an
    exponential tail when the fit says the tail is bounded), so scores above every background
    pair keep their order instead of tying. Below the lowest background score the survival
    approaches 1 smoothly.
    """

    _settings = ("tail_fraction",)
    _state = ("x_", "logsf_", "u_", "log_pu_", "sigma_", "xi_", "scale_")
    _arrays = ("x_", "logsf_")

    def __init__(self, *, tail_fraction: float = 0.05):
        self.tail_fraction = tail_fraction

    def fit(self, background: ScoreSketch) -> "TailSurpriseCalibrator":
        n = background.n
        top = self._tail(background)
        n_tail = len(top)
        if n_tail < 20:
            raise ValueError("too few background pairs to fit the upper tail")
        self.u_ = float(top[0])
        excess = top[1:] - self.u_
        from scipy import stats  # scipy.stats costs ~1 s to import; only fitting needs it

        xi, _, sigma = stats.genpareto.fit(excess, floc=0)
        if xi < 0 or not np.isfinite(xi):
            xi, sigma = 0.0, float(excess.mean())
        self.xi_, self.sigma_ = float(xi), float(max(sigma, 1e-12))
        self.log_pu_ = math.log10(n_tail / (n + 1))
        items, weights = background.weighted_items()
        keep = items < self.u_
        items, weights = items[keep], weights[keep]
        at_least = n - np.concatenate([[0.0], np.cumsum(weights)[:-1]])
        self.x_ = np.append(items, self.u_)
        logsf = np.append(np.log10(at_least / (n + 1)), self.log_pu_)
        self.logsf_ = np.minimum.accumulate(logsf)   # the sketch is approximate; keep it monotone
        self.scale_ = background.std or 1.0
        return self

    def _validate(self) -> None:
        x, logsf = self.x_, self.logsf_
        if not (all(map(is_finite_number, (self.u_, self.log_pu_, self.sigma_, self.xi_, self.scale_)))
                and is_finite_vector(x) and is_finite_vector(logsf) and len(x) == len(logsf)
                and np.all(np.diff(x) > 0) and np.all(np.diff(logsf) <= 0) and logsf[-1] <= self.log_pu_ <= 0
                and x[-1] == self.u_ and self.sigma_ > 0 and self.xi_ >= 0 and self.scale_ > 0):
            raise ValueError("the tail fit is not a decreasing survival function")

    def _tail(self, background: ScoreSketch) -> np.ndarray:
        """The largest background values the tail is fitted on."""
        return background.top[-int(min(len(background.top), max(20, round(self.tail_fraction * background.n)))):]

    def matches(self, background: ScoreSketch) -> bool:
        """Whether the values `fit` takes from `background` as they are agree with it."""
        top = self._tail(background)
        return (len(top) >= 20 and self.u_ == top[0] and self.x_[0] >= background.min
                and self.log_pu_ == math.log10(len(top) / (background.n + 1))
                and self.scale_ == (background.std or 1.0))

    def transform(self, scores) -> np.ndarray:
        self._check_fitted()
        s = _as_scores(scores)
        # each part held within the values at its ends, so that neither rounding (np.interp just
        # below a knot can pass the knot's value) nor a sketch whose last step fell below the
        # tail's start lets a higher score get a lower surprise
        step = np.clip(np.searchsorted(self.x_, s, side="right") - 1, 0, len(self.x_) - 2)
        logsf = np.clip(np.interp(s, self.x_, self.logsf_), self.logsf_[step + 1], self.logsf_[step])
        above, below = s > self.u_, s < self.x_[0]
        z = (s[above] - self.u_) / self.sigma_
        tail = -z / math.log(10) if self.xi_ == 0 else -np.log10(1 + self.xi_ * z) / self.xi_
        logsf[above] = np.minimum(self.log_pu_ + tail, self.logsf_[-1])
        sf0 = 10 ** self.logsf_[0]
        logsf[below] = np.maximum(np.log10(1 - (1 - sf0) * np.exp((s[below] - self.x_[0]) / self.scale_)),
                                  self.logsf_[0])
        return np.where(np.isnan(s), np.nan, -logsf)


CALIBRATORS = {c.__name__: c for c in (ReferenceScaleCalibrator, MinMaxCalibrator, ZScoreCalibrator,
                                       PercentileCalibrator, TailSurpriseCalibrator, AgreementBand)}
