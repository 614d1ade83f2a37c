"""Plausibility of a profile's values (#43): checks that values a checksum cannot vouch for are
within what a build can give, beyond `MetricReference.check` (each calibrator is the one fitted).

A profile re-sealed with a recomputed ``content_sha256`` passes the integrity check; these catch
the hand edits that still moved numbers: a schema version that is not a whole number, a metric's
orientation flag turned over, a tail fit (shape and scale) that does not follow the background's
top values, moments that disagree with the quantile sketch, and a query reference (the sample of
background vectors) pointing away from the background's mean. Each returns a problem naming the
field, or None.
"""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.calibration.calibrators import TailSurpriseCalibrator
from calibsim_gui.core.calibration.sketch import ScoreSketch
from calibsim_gui.core.geometry.metrics import METRICS

TAIL_TOLERANCE = 1.0
"""Largest gap, in decades of probability, between a tail fit's survival and the background's
own at its top values (the last 5 left out: their counts are too small). Built profiles stay
within 0.53 (the built-in profile, every metric and geometry); a shape of 1e6 is 2 decades off."""
MOMENT_TOLERANCE = 0.2
"""A background's stored mean may differ from its quantile sketch's by this many spreads, and its
spread by this fraction (built profiles: within 0.003 and 0.016, the built-in one)."""
MIN_MEAN_COSINE = 0.5
"""Smallest cosine between the query reference's mean vector and the background mean a geometry
fix was fitted on (the same texts: 0.99 in the built-in profile; a negated sample gives -0.99)."""


def schema_problem(version, current: int) -> str | None:
    """Why `version` (a profile's ``schema_version``) is not a version number, or is newer
    than `current`; None for a whole number up to `current`."""
    if type(version) is not int:
        return (f"its schema_version is {version!r}, not a whole number, so it was not written by calibsim "
                "(hand-edited or damaged)")
    if version > current:
        return (f"it was made by a newer calibsim (profile schema version {version}; this calibsim reads "
                f"version {current}). Fix: upgrade calibsim (pip install -U calibsim) to read it")
    return None


def orientation_problem(name: str, stored: dict) -> str | None:
    """Why metric `name`'s stored ``orientation`` is not the metric's own, or None."""
    own = METRICS[name].orientation
    value = stored.get("orientation", own) if isinstance(stored, dict) else own
    if value != own:
        return f"its orientation is {value!r}, but {name} is {own!r} (higher = more similar or less)"
    return None


def background_problem(calibrator: TailSurpriseCalibrator, background: ScoreSketch) -> str | None:
    """Why `background`'s moments disagree with its quantile sketch, or the bg_surprise tail fit
    `calibrator` does not follow its top values; None when both hold."""
    items, weights = background.weighted_items()
    weights = np.asarray(weights, dtype=np.float64)
    if weights.sum() > 0:
        mean = float((weights * items).sum() / weights.sum())
        spread = float(np.sqrt((weights * (items - mean) ** 2).sum() / weights.sum()))
        if not (abs(background.mean - mean) <= MOMENT_TOLERANCE * spread
                and (1 - MOMENT_TOLERANCE) * spread <= background.std <= spread / (1 - MOMENT_TOLERANCE)):
            return (f"the background's mean {background.mean:.4g} and spread {background.std:.4g} disagree with "
                    f"its quantile sketch (mean {mean:.4g}, spread {spread:.4g})")
    top = np.asarray(background.top, dtype=np.float64)
    tail = top[top >= calibrator.u_]
    if len(tail) <= 5:
        return None
    empirical = np.log10((len(tail) - np.arange(len(tail))) / (background.n + 1))
    gap = float(np.abs(-calibrator.transform(tail) - empirical)[:-5].max())
    if not gap <= TAIL_TOLERANCE:
        return (f"the bg_surprise tail fit (shape xi_ {calibrator.xi_:.4g}, scale sigma_ {calibrator.sigma_:.4g}) "
                f"is {gap:.2g} decades of probability from the background's own top values (at most "
                f"{TAIL_TOLERANCE:g} for a fitted tail)")
    return None


def query_reference_problem(query_reference, geometries: dict) -> str | None:
    """Why the query reference points away from the background mean of a geometry fix (its
    ``mean_``, fitted on the same background texts), or None (also when no fix has a mean that
    stands clear of a random sample's: an isotropic model's)."""
    if query_reference is None or not len(query_reference):
        return None
    sample = np.asarray(query_reference, dtype=np.float64)
    mean = sample.mean(axis=0)
    noise = float(np.sqrt((sample ** 2).sum(axis=1).mean() / len(sample)))    # of a mean of random rows
    for name, reference in geometries.items():
        other = getattr(reference.transform, "mean_", None)
        if other is None or not np.linalg.norm(other) > 4 * noise:     # no clear mean: nothing to point at
            continue
        other = np.asarray(other, dtype=np.float64)
        norms = float(np.linalg.norm(mean) * np.linalg.norm(other))
        cosine = float(mean @ other) / norms if norms > 1e-12 else 1.0
        if not cosine >= MIN_MEAN_COSINE:
            return (f"the query reference (the sample of background vectors) points away from the background "
                    f"mean of geometry {name} (cosine {cosine:.2f} between their means, at least "
                    f"{MIN_MEAN_COSINE:g} when built from the same texts): it was negated or replaced")
    return None
