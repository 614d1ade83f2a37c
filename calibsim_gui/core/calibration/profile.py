"""Reference profiles: everything needed to calibrate one model's scores, in one JSON file.

A profile holds the model fingerprint, per metric the background distribution (mergeable
sketch + exact moments) and the fitted calibrators, the anchor ladder with its scores, a small
sample of background embeddings for query-relative scores, and provenance. No pickle, no
corpus text.

Geometry fixes (`calibsim_gui.core.geometry.transforms`) are optional: for each one the profile holds the
transform fitted on the background texts and, for the metrics it was built for (cosine by
default), the same references computed on transformed embeddings, so a score under a fix is
calibrated against the background under the same fix. Profiles written before geometry fixes
existed have no ``"geometries"`` entry and offer only "none".

Schema 2 (calibsim 0.2) adds the two ends of the default calibrated scale per metric: the median
score of calibsim's reference sentence pairs ("unrelated") and a text's score with itself
("identical"). Schema 3 (calibsim 0.3) drops the anchor-fitted exponent of the calibrated scale
(a straight line read on people's scale, `calibrators.ReferenceScaleCalibrator`), adds the
unrelated end per reference language and, where labelled pairs were given, the human agreement
band (`calibrators.AgreementBand`). Older profiles are refused with the command that upgrades them.

Profiles are files people share, so loading one checks it for meaning, not only syntax: every
sketch's bytes are checked as they are read (`kll.read_kll_layout`), every calibrator must be the one
fitted on the profile's own references and keep scores in order on its declared scale, and a
``content_sha256`` written at save time must match. Profiles saved before the checksum existed
carry none; they are accepted, because the checks of meaning run on every profile and a checksum
anyone can recompute proves no authorship, only that nothing changed by accident.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from calibsim_gui.core.calibration import profile_cache
from calibsim_gui.core.calibration.calibrators import (
    MIN_BACKGROUND_PAIRS,
    AgreementBand,
    Calibrator,
    MinMaxCalibrator,
    PercentileCalibrator,
    ReferenceScaleCalibrator,
    TailSurpriseCalibrator,
    ZScoreCalibrator,
    check_outputs,
    is_finite_number,
    is_finite_vector,
)
from calibsim_gui.core.calibration.profile_values import (
    background_problem,
    orientation_problem,
    query_reference_problem,
    schema_problem,
)
from calibsim_gui.core.calibration.sketch import ScoreSketch
from calibsim_gui.core.embedding.model_folders import ModelFingerprint
from calibsim_gui.core.errors import ProfileError
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.geometry.transforms import (
    FIXES,
    GeometryTransform,
    apply_geometry,
    decode_array,
    encode_array,
    get_geometries,
)
from calibsim_gui.core.io.atomic import write_text_atomic
from calibsim_gui.core.io.files import (
    MAX_JSON_BYTES,
    NUMBER_LIMIT,
    number_out_of_range,
    parse_user_json,
    read_user_bytes,
)
from calibsim_gui.core.references.anchors import AnchorSet

FORMAT = "calibsim-profile"
SCHEMA_VERSION = 3
UPGRADABLE_SCHEMAS = (1, 2)
SUFFIX = ".calibsim-profile"
DIGEST_KEY = "content_sha256"
REBUILD = "rebuild it with `calibsim profile build`, or get an undamaged copy."

ANCHOR_FORMS = ("calibrated", "anchor_minmax")
BACKGROUND_FORMS = ("bg_minmax", "bg_percentile", "bg_zscore", "bg_surprise")
FORM_DESCRIPTIONS = {
    "raw": "the model's own score, in the metric's orientation",
    "calibrated": "similarity on people's 0-1 scale: where the pair lies between a typical pair of "
                  "unrelated sentences and identical text, measured on the model, less the 0.04 by "
                  "which people rate below that line (fading out so that identical text stays 1; "
                  "higher = more similar)",
    "calibrated_lo": "reference uncertainty, low end: 2.5th percentile of the calibrated score when the "
                     "reference sentences are resampled (not where people's scores fall)",
    "calibrated_hi": "reference uncertainty, high end: 97.5th percentile of the calibrated score when the "
                     "reference sentences are resampled (not where people's scores fall)",
    "calibrated_band80_lo": "human agreement band, low end: 80 % of people's scores (0-1) for pairs "
                            "with this calibrated score lie between band80_lo and band80_hi",
    "calibrated_band80_hi": "human agreement band, high end of the 80 % range of people's scores",
    "calibrated_band95_lo": "human agreement band, low end: 95 % of people's scores (0-1) for pairs "
                            "with this calibrated score lie between band95_lo and band95_hi",
    "calibrated_band95_hi": "human agreement band, high end of the 95 % range of people's scores",
    "anchor_minmax": "0 at the lowest anchor level, 1 at the highest (higher = more similar; not clamped)",
    "bg_minmax": "0 at the least similar background pair, 1 at the most similar (higher = more similar); "
                 "not clamped: above 1 = more similar than every background pair, below 0 = less "
                 "similar than all of them",
    "bg_percentile": "percent of random background pairs scoring below (0-100; higher = more similar)",
    "bg_zscore": "standard deviations above the mean random background pair (higher = more similar)",
    "bg_surprise": "-log10 P(random pair scores at least this), tail fitted (higher = more similar)",
    "query_zscore": "z-score against each text's own similarities to background texts (higher = more similar)",
    "human": "expected human similarity on a 0-1 scale (isotonic map fitted to labelled pairs; "
             "higher = more similar)",
    "csls": "cosine minus each text's mean cosine to its 10 nearest background texts, "
            "hubness-corrected (CSLS; higher = more similar)",
}
FORM_CALIBRATORS = {"calibrated": ReferenceScaleCalibrator, "anchor_minmax": MinMaxCalibrator,
                    "bg_minmax": MinMaxCalibrator, "bg_percentile": PercentileCalibrator,
                    "bg_zscore": ZScoreCalibrator, "bg_surprise": TailSurpriseCalibrator}
FORM_BOUNDS = {"calibrated": (0.0, 1.0), "bg_percentile": (0.0, 100.0), "bg_surprise": (0.0, math.inf)}
"""Declared ranges of the bounded forms; the others are unbounded but increasing."""
PROBE_POINTS = 401
IDENTICAL_SCORES = {"cosine": 1.0, "euclidean": 0.0, "manhattan": 0.0, "angular": 0.0, "wrd": 0.0, "radial": 0.0}
"""What a text scores with itself ("higher = more similar"), for the metrics where that is fixed."""
IDENTICAL_TOLERANCE = 1e-3          # float32 vectors: the angle of a vector with itself is ~3e-4


def content_digest(d: dict) -> str:
    """sha256 of the canonical JSON of profile document `d`, leaving out its own digest."""
    body = {key: value for key, value in d.items() if key != DIGEST_KEY}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class MetricReference:
    """One metric's references: anchor scores, the ends of the calibrated scale, background
    sketch, fitted calibrators (all scores "higher = more similar")."""

    anchor_scores: np.ndarray                 # one per anchor pair
    unrelated: np.ndarray                     # median reference-pair score, then resampled medians
    identical: float                          # a text's score with itself
    background: ScoreSketch | None = None
    calibrators: dict[str, Calibrator] = field(default_factory=dict)
    unrelated_by_language: dict[str, np.ndarray] = field(default_factory=dict)   # as `unrelated`
    band: AgreementBand | None = None         # where people's scores fall (labelled pairs given)

    def fit(self, anchors: AnchorSet) -> "MetricReference":
        """(Re)fit every calibrator from the anchor scores, the scale's ends and the background."""
        self.calibrators = {"calibrated": self._scale(anchors), **self._closed_form_calibrators(anchors)}
        if self.background is not None:
            self.calibrators["bg_surprise"] = TailSurpriseCalibrator().fit(self.background)
        return self

    def refit_scale(self, anchors: AnchorSet) -> None:
        """Refit the calibrated scale alone (after its ends changed, e.g. a language was added)."""
        self.calibrators["calibrated"] = self._scale(anchors)

    def _scale(self, anchors: AnchorSet) -> ReferenceScaleCalibrator:
        return ReferenceScaleCalibrator().fit(
            self.anchor_scores, [p.level for p in anchors.pairs], anchors.targets, unrelated=self.unrelated,
            identical=self.identical, unrelated_by_language=self.unrelated_by_language)

    def _closed_form_calibrators(self, anchors: AnchorSet) -> dict[str, Calibrator]:
        """The calibrators fitted without a search: anchor and background min-max, percentile, z."""
        levels = np.array([p.level for p in anchors.pairs])
        order = sorted(set(levels.tolist()), key=anchors.targets.get)
        low, high = (float(np.median(self.anchor_scores[levels == name])) for name in (order[0], order[-1]))
        if not high > low:
            raise ProfileError(f"the anchors' lowest level “{order[0]}” scores {low:.4g} and their highest "
                               f"level “{order[-1]}” {high:.4g}: the ends of a scale must score apart. Fix: "
                               f"give “{order[-1]}” pairs more alike than those of “{order[0]}”.")
        out = {"anchor_minmax": MinMaxCalibrator().fit(low, high)}
        if self.background is not None:
            bg = self.background
            out.update({"bg_minmax": MinMaxCalibrator().fit(bg.min, bg.max),
                        "bg_percentile": PercentileCalibrator().fit(bg),
                        "bg_zscore": ZScoreCalibrator().fit(bg)})
        return out

    def check(self, anchors: AnchorSet, metric: str | None = None) -> None:
        """Raise ValueError unless these references mean something: finite, one score per anchor
        pair, identical above unrelated, every calibrator the one fitted on them (the tail fit in
        the values it takes from the background), and every calibrated form increasing on its scale.
        """
        if not (is_finite_vector(self.anchor_scores) and len(self.anchor_scores) == len(anchors.pairs)
                and is_finite_vector(self.unrelated) and is_finite_number(self.identical)
                and all(is_finite_vector(v) for v in self.unrelated_by_language.values())):
            raise ValueError("the anchor scores or the scale's ends are not finite numbers, one per anchor pair")
        if metric in IDENTICAL_SCORES and abs(self.identical - IDENTICAL_SCORES[metric]) > IDENTICAL_TOLERANCE:
            raise ValueError(f"a text with itself scores {self.identical:.4g}, not {IDENTICAL_SCORES[metric]:g}")
        if not all(self.identical > v.max() for v in (self.unrelated, *self.unrelated_by_language.values())):
            raise ValueError("identical texts do not score above unrelated ones")
        forms = ANCHOR_FORMS + (BACKGROUND_FORMS if self.background is not None else ())
        if (set(self.calibrators) != set(forms)
                or any(type(self.calibrators[f]) is not FORM_CALIBRATORS[f] for f in forms)):
            raise ValueError(f"the calibrated forms are not {', '.join(forms)}")
        for form, fresh in self._closed_form_calibrators(anchors).items():
            stored = self.calibrators[form]
            if not all(np.array_equal(getattr(stored, a), getattr(fresh, a))
                       for a in fresh._state if a != "halfwidth_"):
                raise ValueError(f"the {form} form was not fitted on the profile's own references")
        self._check_curve(anchors)
        if self.background is not None and not self.calibrators["bg_surprise"].matches(self.background):
            raise ValueError("the bg_surprise form was not fitted on the profile's own background")
        bg = self.background
        if bg is not None and (problem := background_problem(self.calibrators["bg_surprise"], bg)):
            raise ValueError(problem)
        grid = self._probe_grid()
        for form in forms:
            try:
                check_outputs(self.calibrators[form], grid, bounds=FORM_BOUNDS.get(form, (-math.inf, math.inf)))
            except ValueError as exc:
                raise ValueError(f"the {form} form is broken: {exc}") from None

    def _check_curve(self, anchors: AnchorSet) -> None:
        """The calibrated scale must be the one `fit` makes of this reference's ends and anchors."""
        curve, fresh = self.calibrators["calibrated"], self._scale(anchors)
        if not (curve.shift == fresh.shift
                and all(np.array_equal(getattr(curve, a), getattr(fresh, a)) for a in curve._state)):
            raise ValueError("the calibrated form was not fitted on the profile's anchors and scale ends")

    def _probe_grid(self) -> np.ndarray:
        """Raw scores ("higher = more similar") from well below to well above every reference."""
        bg = self.background
        values = np.concatenate([self.anchor_scores, self.unrelated, [self.identical],
                                 [] if bg is None else [bg.min, bg.max]])
        low, high = float(values.min()), float(values.max())
        return np.linspace(low - (high - low), high + (high - low), PROBE_POINTS)

    def to_dict(self) -> dict:
        return {"anchor_scores": self.anchor_scores.tolist(), "unrelated": self.unrelated.tolist(),
                "identical": self.identical,
                "unrelated_by_language": {k: v.tolist() for k, v in self.unrelated_by_language.items()},
                "band": None if self.band is None else self.band.to_dict(),
                "background": None if self.background is None else self.background.to_dict(),
                "calibrators": {k: c.to_dict() for k, c in self.calibrators.items()}}

    @classmethod
    def from_dict(cls, d: dict, *, checked: bool = False) -> "MetricReference":
        """`checked`: `d` passed every check before (see `ReferenceProfile.from_dict`)."""
        bg = d.get("background")
        return cls(np.asarray(d["anchor_scores"], dtype=np.float64),
                   np.asarray(d["unrelated"], dtype=np.float64), float(d["identical"]),
                   None if bg is None else ScoreSketch.from_dict(bg, checked=checked),
                   {k: Calibrator.from_dict(c) for k, c in d["calibrators"].items()},
                   {str(k): np.asarray(v, dtype=np.float64) for k, v in d["unrelated_by_language"].items()},
                   None if d.get("band") is None else AgreementBand.from_dict(d["band"]))


@dataclass
class GeometryReference:
    """One geometry fix: its transform, fitted on the background texts, and the metric
    references (anchor scores, background sketch, calibrators) computed under it."""

    transform: GeometryTransform
    metrics: dict[str, MetricReference]

    def to_dict(self) -> dict:
        return {"transform": self.transform.to_dict(),
                "metrics": {name: {"orientation": METRICS[name].orientation, **ref.to_dict()}
                            for name, ref in self.metrics.items()}}

    @classmethod
    def from_dict(cls, d: dict, *, checked: bool = False) -> "GeometryReference":
        return cls(GeometryTransform.from_dict(d["transform"]),
                   {name: MetricReference.from_dict(m, checked=checked) for name, m in d["metrics"].items()})


@dataclass
class ReferenceProfile:
    """All references for one model; see the module docstring.

    `metrics` are the references of the model's own embeddings (geometry "none");
    `geometries` maps a geometry fix name ("center", "whiten", "abtt") to its references.
    """

    fingerprint: ModelFingerprint
    dimension: int
    anchors: AnchorSet
    metrics: dict[str, MetricReference]
    query_reference: np.ndarray | None = None     # (k, dim) float32 background embeddings
    provenance: dict = field(default_factory=dict)
    geometries: dict[str, GeometryReference] = field(default_factory=dict)

    @property
    def has_background(self) -> bool:
        return all(m.background is not None for m in self.metrics.values())

    @property
    def background_pairs(self) -> int:
        return min((m.background.n for m in self.metrics.values() if m.background), default=0)

    def forms(self) -> tuple[str, ...]:
        return ANCHOR_FORMS + (BACKGROUND_FORMS if self.has_background else ())

    @property
    def precision(self) -> str:
        """The precision the profile's model ran in when it was built (float32 before it was recorded)."""
        return (self.provenance.get("model") or {}).get("precision", "float32")

    @property
    def prompt(self) -> str:
        """The prompt the anchors and background were encoded with ("" for none, and for profiles
        made before prompts were recorded)."""
        model = self.provenance.get("model")
        prompt = model.get("prompt", "") if isinstance(model, dict) else ""
        return prompt if isinstance(prompt, str) else str(prompt)

    def warnings(self, *, precision: str | None = None) -> list[str]:
        """Plain-language caveats about these references (and about using them in `precision`)."""
        out = []
        if precision is not None and precision != self.precision:
            change = "~0.1" if "int8" in (precision, self.precision) else "~0.003"
            out.append(f"the reference was built in {self.precision} but these scores were computed "
                       f"in {precision}: calibrated values can differ by {change} from a run in "
                       f"{self.precision}; use --precision {self.precision} (or rebuild the profile "
                       f"in {precision}) for matching numbers")
        if self.provenance.get("geometries_dropped"):
            out.append(f"geometry fixes ({', '.join(self.provenance['geometries_dropped'])}) were "
                       "dropped when profiles were merged; build one profile from all the "
                       "background files to have them")
        if not self.has_background:
            out.append("no background profile: only anchor-based calibrations are available "
                       "(build one with `calibsim profile build --background FILES`)")
        elif self.background_pairs < MIN_BACKGROUND_PAIRS:
            out.append(f"the background has only {self.background_pairs} pairs (< "
                       f"{MIN_BACKGROUND_PAIRS}); percentiles are coarse")
        for geometry in self.geometry_names():
            suffix = "" if geometry == "none" else f" (geometry {geometry})"
            for name, ref in self.references(geometry).items():
                for violation in ref.calibrators["calibrated"].violations_:
                    out.append(f"{name}{suffix}: anchor ladder not monotone ({violation}); "
                               "those levels were pooled")
        for name, ref in self.geometries.items():
            if getattr(ref.transform, "warning_", None):
                out.append(f"geometry {name}: {ref.transform.warning_}")
        return out

    def geometry_names(self) -> tuple[str, ...]:
        """Geometries this profile can calibrate: "none" first, then its fixes."""
        return ("none",) + tuple(self.geometries)

    def references(self, geometry: str = "none") -> dict[str, MetricReference]:
        """Metric references under `geometry` (only the metrics the fix was built for).

        Raises InputError for an unknown name, ProfileError when this profile lacks the fix.
        """
        get_geometries(geometry)
        if geometry == "none":
            return self.metrics
        if geometry not in self.geometries:
            raise ProfileError(
                f"this profile has no references for geometry fix {geometry!r} (it has "
                f"{', '.join(self.geometry_names())}); rebuild it with `calibsim profile build`.")
        return self.geometries[geometry].metrics

    def transform(self, geometry: str = "none") -> GeometryTransform | None:
        """The fitted transform of `geometry` (None for "none")."""
        self.references(geometry)
        return None if geometry == "none" else self.geometries[geometry].transform

    def transformed(self, embeddings, geometry: str = "none") -> np.ndarray:
        """`embeddings` under `geometry` (unchanged for "none")."""
        return apply_geometry(self.transform(geometry), embeddings)

    def check_model(self, fingerprint: ModelFingerprint, *, source="this profile",
                    prompt: str | None = None) -> None:
        """Refuse to apply the profile to a model other than the one it was built with, or (when
        `prompt` is given) to scores encoded with another prompt than its references."""
        if fingerprint.digest != self.fingerprint.digest:
            raise ProfileError(
                f"{source} was built with model {self.fingerprint.id}, but the model in use is "
                f"{fingerprint.id}; scores of different models are not comparable. Use "
                f"--model to pick {self.fingerprint.name}, or build a profile for this model "
                "with `calibsim profile build`.")
        if prompt is not None:
            self.check_prompt(prompt, source=source)

    def check_prompt(self, prompt: str, *, source="this profile") -> None:
        """Refuse scores encoded with `prompt` when the references were encoded with another."""
        if prompt == self.prompt:
            return
        built = f"the prompt {self.prompt!r}" if self.prompt else "no prompt"
        used = f"the prompt {prompt!r}" if prompt else "no prompt"
        match = ("--no-prompt" if not self.prompt else
                 "--prompt-name with the model's prompt of that text (or leave out --no-prompt)")
        raise ProfileError(
            f"{source} was built with {built}, but the model is used with {used}; scores encoded "
            f"with different prompts are not comparable. Fix: pass {match} to match the profile, "
            "or rebuild the profile with this prompt (`calibsim profile build` with the same "
            "prompt options).")

    def calibrate(self, metric: str, raw, geometry: str = "none", languages=None) -> dict[str, np.ndarray]:
        """Every calibrated form of `raw` scores of `metric` (raw in the metric's orientation,
        computed on embeddings under `geometry`); the calibrated form of pairs whose language
        (`languages`, one code or "" per score) has reference sentences uses that language's
        unrelated end."""
        sim = METRICS[metric].as_similarity(raw)
        references = self.references(geometry)
        if metric not in references:
            raise ProfileError(f"this profile has no {metric} references under geometry "
                               f"{geometry!r} (it has {', '.join(references)}).")
        return {form: cal.transform(sim, language=languages) if form == "calibrated" else cal.transform(sim)
                for form, cal in references[metric].calibrators.items()}

    def to_dict(self) -> dict:
        qr = None if self.query_reference is None else encode_array(self.query_reference)
        return {"format": FORMAT, "schema_version": SCHEMA_VERSION,
                "model": {**self.fingerprint.to_dict(), "dimension": self.dimension},
                "anchors": self.anchors.to_dict(),
                "metrics": {name: {"orientation": METRICS[name].orientation, **ref.to_dict()}
                            for name, ref in self.metrics.items()},
                "query_reference": qr,
                "geometries": {name: ref.to_dict() for name, ref in self.geometries.items()},
                "provenance": self.provenance}

    def save(self, path) -> Path:
        """Write the profile atomically (temporary file, then rename), with its content digest."""
        path = Path(path)
        document = self.to_dict()
        document[DIGEST_KEY] = content_digest(document)
        write_text_atomic(path, json.dumps(document, allow_nan=False))
        return path

    @classmethod
    def from_dict(cls, d: dict, *, path=None, checked: bool = False) -> "ReferenceProfile":
        """The profile of document `d`, refused (ProfileError) unless it passes every check;
        `checked`: `d` already passed them (a `profile_cache` entry), so only its shape is."""
        where = f"{path}: " if path else ""
        if not isinstance(d, dict):
            raise ProfileError(f"{where}not a calibsim profile (a JSON {type(d).__name__}, not an object).")
        if d.get("format") != FORMAT:
            raise ProfileError(f"{where}not a calibsim profile (format is {d.get('format')!r}).")
        if problem := schema_problem(d.get("schema_version"), SCHEMA_VERSION):
            raise ProfileError(f"{where}{problem}" + ("." if "Fix:" in problem else f". Fix: {REBUILD}"))
        if d.get("schema_version") in UPGRADABLE_SCHEMAS:
            raise ProfileError(f"{where}profile was made by calibsim 0.{d['schema_version']}, whose calibrated "
                               "scale is retired; upgrade it in seconds (backgrounds kept) with `calibsim "
                               "profile upgrade FILE --out NEW`.")
        if d.get("schema_version") != SCHEMA_VERSION:
            raise ProfileError(f"{where}profile schema version {d.get('schema_version')!r} is not "
                               f"supported (this calibsim reads version {SCHEMA_VERSION}); rebuild "
                               "the profile with `calibsim profile build`.")
        if not checked and DIGEST_KEY in d and d[DIGEST_KEY] != content_digest(d):
            raise ProfileError(f"{where}this profile was modified or damaged after it was saved (its "
                               f"content does not match its checksum). Fix: {REBUILD}")
        huge = None if checked else number_out_of_range(d)
        if huge:
            raise ProfileError(f"{where}profile is damaged or hand-edited: a number is beyond "
                               f"±{NUMBER_LIMIT:g}, out of any sane range, at {huge}. Fix: {REBUILD}")
        try:
            model = d["model"]
            if not (isinstance(model.get("name"), str) and isinstance(model.get("digest"), str)
                    and type(model["dimension"]) is int and model["dimension"] > 0
                    and isinstance(d.get("provenance", {}), dict)):
                raise ValueError("the model's name, digest or dimension, or the provenance, is malformed")
            qr = d.get("query_reference")
            profile = cls(ModelFingerprint.from_dict(model), model["dimension"],
                          AnchorSet.from_dict(d["anchors"], path=path),
                          {name: MetricReference.from_dict(m, checked=checked)
                           for name, m in d["metrics"].items()},
                          None if qr is None else decode_array(qr), d.get("provenance", {}),
                          {name: GeometryReference.from_dict(g, checked=checked)
                           for name, g in d.get("geometries", {}).items()})
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            detail = str(exc) if type(exc) is ValueError else repr(exc)
            raise ProfileError(f"{where}profile is damaged or hand-edited ({detail}). Fix: {REBUILD}") from None
        unknown = sorted(set(profile.metrics) - set(METRICS))
        unknown += sorted({m for g in profile.geometries.values() for m in g.metrics} - set(METRICS))
        if unknown or not profile.metrics:
            raise ProfileError(f"{where}profile has unknown or no metrics {unknown}.")
        qr = profile.query_reference
        if qr is not None and (qr.ndim != 2 or qr.shape[1] != profile.dimension):
            raise ProfileError(f"{where}background sample has dimension {qr.shape[-1]}, the "
                               f"model has {profile.dimension}.")
        bad = sorted(name for name, g in profile.geometries.items()
                     if name not in FIXES or g.transform.dimension != profile.dimension)
        if bad:
            raise ProfileError(f"{where}profile has unknown geometry fixes or fixes for another "
                               f"dimension ({', '.join(bad)}); rebuild it with `calibsim profile build`.")
        if not checked:
            turned = [f"{name}: {problem}" for part in [d, *d.get("geometries", {}).values()]
                      for name, m in part["metrics"].items() if (problem := orientation_problem(name, m))]
            if turned:
                raise ProfileError(f"{where}profile is damaged or hand-edited: {turned[0]}. Fix: {REBUILD}")
            profile._check_meaning(where)
        return profile

    def _check_meaning(self, where: str) -> None:
        """Raise ProfileError unless every metric reference passes `MetricReference.check` and
        the warnings can be written (they read the provenance)."""
        for geometry in self.geometry_names():
            suffix = "" if geometry == "none" else f" under geometry {geometry}"
            for name, ref in self.references(geometry).items():
                try:
                    ref.check(self.anchors, name)
                except (ValueError, TypeError) as exc:
                    raise ProfileError(f"{where}profile is damaged or hand-edited: {name}{suffix}: {exc}. "
                                       f"Fix: {REBUILD}") from None
        if problem := query_reference_problem(self.query_reference, self.geometries):
            raise ProfileError(f"{where}profile is damaged or hand-edited: {problem}. Fix: {REBUILD}")
        try:
            self.warnings()
        except (TypeError, AttributeError, ValueError) as exc:
            raise ProfileError(f"{where}profile's provenance is damaged or hand-edited ({exc}). "
                               f"Fix: {REBUILD}") from None

    @classmethod
    def load(cls, path) -> "ReferenceProfile":
        """Read and check a profile file; every problem raises ProfileError or InputError.

        A file read and checked before is taken from its checked parse in the cache
        (`profile_cache`, keyed by the file's sha256).
        """
        path = Path(path)
        data = read_user_bytes(path, limit=MAX_JSON_BYTES, what="profile", fix=REBUILD)
        key = hashlib.sha256(data).hexdigest()
        document = profile_cache.load(key)
        if document is not None:
            return cls.from_dict(document, path=path, checked=True)
        document = parse_user_json(data, path, what="profile", fix=REBUILD)
        profile = cls.from_dict(document, path=path)
        profile_cache.store(key, document)
        return profile


def background_digests(provenance: dict) -> set[str]:
    """The sha256 of every background file a profile was built from, merged parts included."""
    files = (provenance.get("background") or {}).get("files") or []
    digests = {f["sha256"] for f in files if isinstance(f, dict) and isinstance(f.get("sha256"), str)}
    for part in provenance.get("merged_from") or []:
        if isinstance(part, dict):
            digests |= background_digests(part)
    return digests


def _same_exact_parts(a: ScoreSketch, b: ScoreSketch) -> bool:
    """The sketches' exact parts (count, moments, extremes, top tail) are equal (their KLL parts
    are not compared: sketches of the same values added in another order differ)."""
    return ((a.n, a.mean, a.m2, a.min, a.max) == (b.n, b.mean, b.m2, b.min, b.max)
            and np.array_equal(a.top, b.top))


def _check_disjoint(first: ReferenceProfile, second: ReferenceProfile, second_name: str) -> None:
    """Refuse two profiles whose backgrounds share texts, as far as their content tells: the same
    background file in both, or the very same background (a profile given twice)."""
    shared = background_digests(first.provenance) & background_digests(second.provenance)
    same = all(_same_exact_parts(first.metrics[m].background, second.metrics[m].background)
               for m in first.metrics)
    if shared or same:
        why = (f"both were built from the same background file (sha256 {sorted(shared)[0][:12]}…)" if shared
               else f"{second_name} holds the very same background as the first profile")
        raise ProfileError(f"merging would count the same background pairs twice: {why}. Merge profiles "
                           "built from different parts of a corpus, each given once.")


def merge_profiles(first: ReferenceProfile, second: ReferenceProfile) -> ReferenceProfile:
    """One profile from two built with the same model, anchors and metrics on different texts.

    Geometry fixes are not kept: each part's transform was fitted on its own texts, so their
    background scores are not on one scale. The merged provenance lists the dropped fixes.
    """
    second_name = second.provenance.get("name", "the second profile")
    first.check_model(second.fingerprint, source=second_name)
    if first.prompt != second.prompt:
        raise ProfileError(f"the two profiles were built with different prompts ({first.prompt!r} and "
                           f"{second.prompt!r}); build both with the same prompt options.")
    if first.anchors.to_dict() != second.anchors.to_dict():
        raise ProfileError("the two profiles use different anchors; build both with the same --anchors.")
    if first.precision != second.precision:
        raise ProfileError(f"the two profiles were built in different precisions ({first.precision} and "
                           f"{second.precision}); build both with the same --precision.")
    if set(first.metrics) != set(second.metrics) or not (first.has_background and second.has_background):
        raise ProfileError("both profiles need background statistics for the same metrics.")
    _check_disjoint(first, second, second_name)
    metrics = {}
    for name, ref in first.metrics.items():
        background = ScoreSketch.from_dict(ref.background.to_dict())
        background.merge(second.metrics[name].background)
        metrics[name] = MetricReference(ref.anchor_scores, ref.unrelated, ref.identical,
                                        background).fit(first.anchors)
    samples = [p.query_reference for p in (first, second) if p.query_reference is not None]
    query_reference = None
    if samples:
        cap = max(len(s) for s in samples)
        query_reference = np.concatenate(samples)[:: math.ceil(sum(map(len, samples)) / cap)]
    provenance = {
        "merged_from": [first.provenance, second.provenance],
        "background_pairs": metrics[next(iter(metrics))].background.n,
    }
    dropped = sorted(set(first.geometries) | set(second.geometries))
    if dropped:
        provenance["geometries_dropped"] = dropped
    return ReferenceProfile(first.fingerprint, first.dimension, first.anchors, metrics,
                            query_reference, provenance)
