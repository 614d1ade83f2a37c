"""Project files (`.calibsim`): what a user set up, so it can be re-opened as it was.

A project stores choices and file locations, not results: re-opening it re-runs the analysis
(cheap with the embedding cache). Two things are stored whole because they are the user's work
and cost time to redo: the anchor ladder and the human calibration (its fitted map, validation
and source, as in a ``.calibsim-human`` file). Everything else that shapes a number is kept too:
the engine and precision the model ran with, how the background's files were read (encoding,
text column, HTML cleaning) and how long texts are scored (``settings``). The input's columns (text_a, text_b, label) are
kept with the input; the label column and scale chosen in the results view in the settings.
How the window looked is kept too, and is never the user's work: ``views`` holds each tab's view
choices (``{tab name: its view_state()}``) and ``layout`` the current tab and the tabs shown side
by side. Both are checked leniently: a wrong part is left out with a note in ``notes``, and a file
without them (an older project) opens with the default views. Paths are stored relative to the
project file when they sit below its folder, so a project folder can be moved as a whole.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from calibsim_gui.core.calibration.calibrators import AgreementBand
from calibsim_gui.core.calibration.human import HumanCalibrator, HumanFit
from calibsim_gui.core.embedding.chunking import CHUNK_AGGREGATES, LONG_TEXTS, MAX_CHUNK_OVERLAP
from calibsim_gui.core.embedding.devices import ENGINES, PRECISIONS
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.io.atomic import write_text_atomic
from calibsim_gui.core.io.files import read_user_json
from calibsim_gui.core.io.inputs import load_documents, load_pairs
from calibsim_gui.core.references.anchors import AnchorSet

FORMAT = "calibsim-project"
SCHEMA_VERSION = 1
SUFFIX = ".calibsim"


@dataclass
class ProjectInput:
    """One input file and how to read it."""

    path: str
    kind: str = "pairs"                     # "pairs" or "documents"
    options: dict = field(default_factory=dict)   # text_a, text_b, label, encoding, per_file, column


@dataclass
class Project:
    model: str | None = None                # None: the built-in model
    device: str = "auto"
    engine: str | None = None               # "onnx" or "torch" (None: an older project, not said)
    precision: str | None = None            # "float32", "bfloat16" or "int8" (None: not said)
    anchors: AnchorSet | None = None        # None: the built-in ladder
    profile: str | None = None              # a .calibsim-profile; None: built-in reference
    background_files: list[str] = field(default_factory=list)
    background_pairs: int = 20_000
    background_seed: int = 0
    background_options: dict = field(default_factory=dict)   # encoding, column, clean_html
    inputs: list[ProjectInput] = field(default_factory=list)
    settings: dict = field(default_factory=dict)    # view choices: metric, form, label_column, ...
    human: dict | None = None               # a human calibration: calibrator, validation, source
    bands: dict = field(default_factory=dict)       # human agreement bands of built references: see `bands_of`
    views: dict = field(default_factory=dict)       # tab name -> that tab's view_state()
    layout: dict = field(default_factory=dict)      # current, beside, sizes: see `layout_of`
    notes: list[str] = field(default_factory=list, compare=False)   # what `load` left out, in words

    def files(self) -> list[str]:
        """Every file the project points at."""
        return ([self.profile] if self.profile else []) + self.background_files + [i.path for i in self.inputs]

    def missing_files(self) -> list[str]:
        return [f for f in self.files() if not Path(f).exists()]

    def relocate(self, old: str, new: str) -> None:
        """Point every reference to `old` at `new` (after the user located a moved file)."""
        if self.profile == old:
            self.profile = new
        self.background_files = [new if f == old else f for f in self.background_files]
        for item in self.inputs:
            if item.path == old:
                item.path = new

    def to_dict(self, base: Path | None = None) -> dict:
        def rel(p):
            return _relative(p, base) if p else p
        return {"format": FORMAT, "schema_version": SCHEMA_VERSION,
                "model": self.model if not (self.model and Path(self.model).exists()) else rel(self.model),
                "device": self.device,
                **({"engine": self.engine} if self.engine else {}),
                **({"precision": self.precision} if self.precision else {}),
                "anchors": self.anchors.to_dict() if self.anchors else None,
                "profile": rel(self.profile),
                "background": {"files": [rel(f) for f in self.background_files],
                               "pairs": self.background_pairs, "seed": self.background_seed,
                               **({"options": self.background_options} if self.background_options else {})},
                "inputs": [{**asdict(i), "path": rel(i.path)} for i in self.inputs],
                "settings": self.settings,
                **({"human": self.human} if self.human is not None else {}),
                **({"bands": self.bands} if self.bands else {}),
                **({"views": self.views} if self.views else {}),
                **({"layout": self.layout} if self.layout else {})}

    def save(self, path) -> Path:
        path = Path(path)
        write_text_atomic(path, json.dumps(self.to_dict(path.parent.resolve()), indent=1))
        return path

    @classmethod
    def load(cls, path) -> "Project":
        """Read and validate a project file; errors name the file and the fix."""
        path = Path(path)
        data = read_user_json(path, what="project file", fix="open a .calibsim file saved by calibsim")
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InputError("not a calibsim project.", path=path, fix="open a .calibsim file")
        if data.get("schema_version") != SCHEMA_VERSION:
            raise InputError(f"project schema version {data.get('schema_version')!r} is not supported "
                             f"(this calibsim reads {SCHEMA_VERSION}).", path=path,
                             fix="open it with the calibsim version that wrote it")
        base = path.parent.resolve()
        try:
            background = data.get("background") or {}
            model = data.get("model")
            if not (isinstance(background.get("files", []), list) and isinstance(data.get("inputs", []), list)
                    and isinstance(model, (str, type(None)))):
                raise ValueError("the model must be a name or a folder, background files and inputs lists")
            project = cls(
                model=str(_absolute(model, base)) if model and _absolute(model, base).exists() else model,
                device=str(data.get("device", "auto")),
                engine=data.get("engine"), precision=data.get("precision"),
                anchors=AnchorSet.from_dict(data["anchors"], path=path) if data.get("anchors") else None,
                profile=str(_absolute(data["profile"], base)) if data.get("profile") else None,
                background_files=[str(_absolute(f, base)) for f in background.get("files", [])],
                background_pairs=background.get("pairs", 20_000),
                background_seed=background.get("seed", 0),
                background_options=dict(background.get("options", {})),
                inputs=[ProjectInput(str(_absolute(i["path"], base)), str(i.get("kind", "pairs")),
                                     dict(i.get("options", {}))) for i in data.get("inputs", [])],
                settings=dict(data.get("settings", {})),
                human=data.get("human"), bands=dict(data.get("bands", {})))
            project._check()
            project.views, view_notes = views_of(data.get("views", {}))
            project.layout, layout_notes = layout_of(data.get("layout", {}))
            project.notes = view_notes + layout_notes
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            detail = str(exc) if type(exc) is ValueError else repr(exc)
            raise InputError(f"the project is damaged or hand-edited ({detail}).", path=path,
                             fix="re-create it from the app and save again") from None
        return project

    def _check(self) -> None:
        """Refuse values the app could not use (raised as ValueError, reported by `load`)."""
        for what, value, low in (("background pairs", self.background_pairs, 1),
                                 ("background seed", self.background_seed, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _MAX_COUNT:
                raise ValueError(f"{what} must be a whole number from {low} to {_MAX_COUNT}, "
                                 f"not {value!r}")

        for what, value, allowed in (("engine", self.engine, ENGINES), ("precision", self.precision, PRECISIONS)):
            if value is not None and value not in allowed:
                raise ValueError(f"unknown {what} {value!r}")
        for key, value in self.background_options.items():
            kinds = BACKGROUND_OPTIONS.get(key)
            if kinds is None or not isinstance(value, kinds):
                raise ValueError(f"background option {key!r} is unknown or has the wrong type ({value!r})")
        long_texts = self.settings.get("long_texts", {})
        overlap = long_texts.get("chunk_overlap", 0) if isinstance(long_texts, dict) else None
        if not (isinstance(long_texts, dict) and long_texts.get("long_texts", "truncate") in LONG_TEXTS
                and long_texts.get("chunk_aggregate", "match") in CHUNK_AGGREGATES
                and isinstance(overlap, int) and not isinstance(overlap, bool) and 0 <= overlap <= MAX_CHUNK_OVERLAP
                and set(long_texts) <= {"long_texts", "chunk_aggregate", "chunk_overlap"}):
            raise ValueError(f"how long texts are scored ({long_texts!r}) is not usable")

        readers = {"pairs": load_pairs, "documents": load_documents}
        for item in self.inputs:
            if item.kind not in readers:
                raise ValueError(f"input kind {item.kind!r} is neither 'pairs' nor 'documents'")
            allowed = set(inspect.signature(readers[item.kind]).parameters) - {"path", "paths"}
            for key, value in item.options.items():
                if key not in allowed:
                    raise ValueError(f"unknown option {key!r} for {item.kind} {item.path}")
                if not isinstance(value, bool if key == "per_file" else (str, type(None))):
                    raise ValueError(f"option {key!r} of {item.path} has the wrong type ({value!r})")
        if self.human is not None:
            human_fit_from_dict(self.human)          # raises ValueError when it is not usable
        bands_of(self.bands)                         # the same
        column = self.settings.get("label_column")
        if column is not None and not isinstance(column, str):
            raise ValueError(f"label column {column!r} is not a column name")
        scale = self.settings.get("label_scale")
        if scale is not None and not (isinstance(scale, list) and len(scale) == 2
                                      and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                              for v in scale) and scale[0] < scale[1]):
            raise ValueError(f"label scale {scale!r} is not [low, high]")
        metric = self.settings.get("metric", "cosine")
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}")
        if not isinstance(self.settings.get("form", ""), str):
            raise ValueError(f"form {self.settings['form']!r} is not a name")


_MAX_COUNT = 2**31 - 1          # the app's spin boxes hold 32-bit integers
BACKGROUND_OPTIONS = {"encoding": (str, type(None)), "column": (str, type(None)), "clean_html": bool}


def json_safe(value, depth: int = 0) -> bool:
    """True when `value` is plain JSON: str, finite numbers, bools, None, lists and str-keyed dicts."""
    if depth > 32:
        return False
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        if set(map(type, value)) <= {float, int}:        # a column of numbers: checked in one C-level pass
            return all(map(math.isfinite, value))
        return all(json_safe(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and json_safe(v, depth + 1) for k, v in value.items())
    return False


def views_of(data) -> tuple[dict, list[str]]:
    """The usable part of a project's ``views`` and, in words, what was left out."""
    if not isinstance(data, dict):
        return {}, ["the tabs' view choices (not a JSON object)"]
    views = {name: state for name, state in data.items() if isinstance(state, dict) and json_safe(state)}
    return views, [f"the view choices of the {name!r} tab (not a JSON object)" for name in data
                   if name not in views]


def layout_of(data) -> tuple[dict, list[str]]:
    """The usable part of a project's ``layout``: ``current`` (a tab's name), ``beside`` (names
    of the tabs in the side pane) and ``sizes`` (the two panes' widths); and what was left out."""
    if not isinstance(data, dict):
        return {}, ["the layout of the tabs (not a JSON object)"]
    checks = {"current": lambda v: isinstance(v, str),
              "beside": lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
              "sizes": lambda v: isinstance(v, list) and len(v) == 2
              and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= _MAX_COUNT for n in v)}
    layout = {key: data[key] for key, ok in checks.items() if key in data and ok(data[key])}
    return layout, [f"the layout's {key!r} ({data[key]!r} is not usable)" for key in checks
                    if key in data and key not in layout]


def human_fit_from_dict(data):
    """The `HumanFit` a project embeds ({"calibrator", "validation", "source"}).

    Raises ValueError when it is not one (`Project.load` reports it with the file's name).
    """
    if not isinstance(data, dict):
        raise ValueError("the human calibration is not a JSON object")
    validation, source = data.get("validation", {}), data.get("source", {})
    if not (isinstance(validation, dict) and isinstance(source, dict)):
        raise ValueError("the human calibration's validation or source is not a JSON object")
    try:
        calibrator = HumanCalibrator.from_dict(data["calibrator"])
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"the human calibration is damaged ({exc!r})") from None
    return HumanFit(calibrator, validation, source)


def bands_of(data: dict) -> tuple[dict, dict | None]:
    """The human agreement bands a project keeps (``{"metrics": {metric: band}, "provenance":
    {...}}``) as ({metric: AgreementBand}, their ``human_band`` record); `Project.load` reports
    the ValueError of a damaged one with the file's name."""
    metrics, provenance = data.get("metrics", {}), data.get("provenance")
    if not (isinstance(metrics, dict) and isinstance(provenance, (dict, type(None)))):
        raise ValueError("the human agreement bands are not JSON objects")
    try:
        bands = {str(name): AgreementBand.from_dict(band) for name, band in metrics.items()}
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"a human agreement band is damaged ({exc})") from None
    if not all(isinstance(band, AgreementBand) for band in bands.values()):
        raise ValueError("a human agreement band is another kind of calibrator")
    return bands, provenance


def _relative(p: str, base: Path | None) -> str:
    if base is None:
        return p
    full = Path(p).resolve()
    try:
        return full.relative_to(base).as_posix()
    except ValueError:
        return str(full)


def _absolute(p: str, base: Path) -> Path:
    path = Path(os.path.expanduser(p))
    return path if path.is_absolute() else (base / path).resolve()
