"""The Reproduce block: the files a report depends on, by role, and the command lines that give
its numbers again from them."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from calibsim_gui.core.analysis.pairs import ScoredPairs, split_score_column
from calibsim_gui.core.analysis.search import SearchHits
from calibsim_gui.core.calibration.profile_builder import is_builtin_ladder
from calibsim_gui.core.geometry.metrics import METRICS

__all__ = ["RunSources", "anchors_path", "command_path", "is_builtin_ladder", "reproduce_commands",
           "source_files"]

BUILTIN_PROFILE_PREFIX = "built-in"
DEFAULT_MODEL = "all-MiniLM-L6-v2"


@dataclass
class RunSources:
    """What a result was made from beyond its own provenance, as the app or the command line knew it.

    Attributes
    ----------
    profile_file : str or None
        The profile file the references were opened from (``--profile``); None for the built-in
        references or a background built in the session (its provenance names its files).
    human_file : str or None
        The human calibration file given with ``--human``; None when it was fitted in the app.
    human : HumanFit or None
        The human calibration in use: its source names the labelled pairs it was fitted on.
    columns : dict
        ``text_a``, ``text_b``, ``label``: the input columns read (``--text-a`` ...).
    encoding : str or None
        The input's text encoding, when one was chosen.
    model : str or None
        The model folder (``--model``) of a model that is not built in; None: its name is enough
        (the built-in model, or one in the Hugging Face cache).
    vectors : tuple of str
        The vectors files (``--vectors``) of a run on vectors from another model.
    """

    profile_file: str | None = None
    human_file: str | None = None
    human: object = None
    columns: dict = field(default_factory=dict)
    encoding: str | None = None
    model: str | None = None
    vectors: tuple = ()


def anchors_path(report_path) -> Path:
    """Where a report's anchor ladder is written: ``<report stem>-anchors.json`` beside it."""
    report_path = Path(report_path)
    return report_path.with_name(f"{report_path.stem}-anchors.json")


def command_path(path, report_path=None) -> str:
    """`path` as a Reproduce command names it: relative to the report's folder when both sit under
    a common folder (other than the file system's root), else absolute, so that two files of one
    name in different folders are never confused. A relative path that begins with "-" is
    written ``./-q.csv``, so that a command never reads a file name as an option."""
    path = Path(path).resolve()
    if report_path is None:
        return str(path)
    folder = Path(report_path).resolve().parent
    try:
        common = Path(os.path.commonpath([path, folder]))
    except ValueError:                                   # another drive
        return str(path)
    if common == Path(common.anchor):
        return str(path)
    relative = Path(os.path.relpath(path, folder)).as_posix()
    return f"./{relative}" if relative.startswith("-") else relative


def _record(role: str, path, sha256: str | None, **extra) -> dict:
    path = Path(path)
    return {"role": role, "path": str(path.resolve()) if path.is_absolute() or path.exists() else str(path),
            "name": path.name, "sha256": sha256, **extra}


def _input_roles(report) -> list[tuple[str, str]]:
    prov = report.provenance_of_result
    if report.kind == "search":
        search = prov["search"]
        return ([("queries", f) for f in search["queries"]["files"]]
                + [("corpus", f) for f in search["corpus"]["files"]])
    if report.kind == "pairs":
        return [("pairs", prov["pairs"]["file"])]
    return [("documents", f) for f in prov["documents"]["files"]]


def source_files(report, digest) -> list[dict]:
    """Every file the report depends on, as ``{"role", "path", "name", "sha256"}``: its inputs, the
    background files, the profile and anchors files, the human calibration and its labelled pairs.

    Files read by the run get `digest(path)` (None when gone); background files, the ladder and
    the labelled pairs keep the sha256 recorded when they were used."""
    sources, profile = report.sources, report.profile
    rows = [_record(role, f, digest(f)) for role, f in _input_roles(report)]
    background = profile.provenance.get("background") or {}
    if sources.profile_file:
        rows.append(_record("profile", sources.profile_file, digest(sources.profile_file)))
    for f in background.get("files", []):
        rows.append(_record("background", f.get("path") or f.get("name", "?"), f.get("sha256"),
                            **({"clean_html": True} if background.get("clean_html") else {})))
    if report.custom_anchors:
        anchors = profile.provenance.get("anchors") or {}
        rows.append(_record("anchors", report.anchors_file or "report-anchors.json",
                            anchors.get("sha256")))
    if sources.human_file:
        rows.append(_record("human calibration", sources.human_file, digest(sources.human_file)))
    source = getattr(sources.human, "source", None) or {}
    if source.get("file"):
        rows.append(_record("human training pairs", source["file"], source.get("sha256")))
    return rows


def _model_options(report) -> list[str]:
    """--model, --engine, --precision and the prompt, as the run used them."""
    model, folder = report.provenance_of_result["model"], report.sources.model
    if model.get("engine") == "vectors":      # vectors files stand for the model (and hold no prompt)
        return [part for f in (report.sources.vectors or ("VECTORS.npz",))
                for part in ("--vectors", command_path(f, report.path))]
    options = [] if model["name"] == DEFAULT_MODEL else [
        "--model", command_path(folder, report.path) if folder and Path(folder).is_dir() else model["name"]]
    engine = str(model.get("engine") or "")
    if engine in ("onnx", "torch"):
        options += ["--engine", engine]
    precision = str(model.get("precision") or "float32")
    if precision != "float32":                 # as chosen (e.g. by auto): the same numbers again
        options += ["--precision", precision]
    if model.get("prompt_name"):
        options += ["--prompt-name", str(model["prompt_name"])]
    elif not model.get("prompt") and model["name"] != DEFAULT_MODEL:
        options.append("--no-prompt")
    return options


def _out_names(report_path) -> tuple[str, str]:
    """(stem of the files the commands write, suffix of the report they write)."""
    if report_path is None:
        return "report", ".html"
    return Path(report_path).stem, Path(report_path).suffix.lower() or ".html"


def _profile_commands(report, model_opt, stem) -> tuple[list[list[str]], list[str]]:
    """The commands that make the report's references and the options that name them."""
    profile, sources, where = report.profile, report.sources, report.path
    anchors_opt = []
    if report.custom_anchors:
        anchors_opt = ["--anchors", command_path(report.anchors_file, where) if report.anchors_file
                       else "report-anchors.json"]
    if sources.profile_file:
        return [], ["--profile", command_path(sources.profile_file, where), *anchors_opt]
    name = str(profile.provenance.get("name", ""))
    if name.startswith(BUILTIN_PROFILE_PREFIX):
        return [], anchors_opt
    out = name if name.endswith(".calibsim-profile") else f"{stem}-profile.calibsim-profile"
    background = profile.provenance.get("background") or {}
    build = ["calibsim", "profile", "build", *model_opt]
    if background.get("files"):
        build += ["--background", *[command_path(f["path"], where) if f.get("path") else f["name"]
                                    for f in background["files"]],
                  "--pairs", str(background.get("pairs")), "--seed", str(background.get("seed"))]
        columns = set((background.get("text_columns") or {}).values())
        if len(columns) == 1:
            build += ["--column", columns.pop()]
        if background.get("clean_html"):
            build.append("--clean-html")
    build += [*anchors_opt, "--out", out]
    return [build], ["--profile", out]


def _human_commands(report, model_opt, profile_opt, stem) -> tuple[list[list[str]], list[str]]:
    """The command that fits the human calibration again (or the file given) and ``--human``."""
    sources, where = report.sources, report.path
    if sources.human_file:
        return [], ["--human", command_path(sources.human_file, where)]
    fit = sources.human
    if fit is None or not (fit.source or {}).get("file"):
        return [], []
    calibrator, out = fit.calibrator, f"{stem}-human.calibsim-human"
    low, high = calibrator.scale
    command = ["calibsim", "human", "fit", command_path(fit.source["file"], where), f"--scale={low:g},{high:g}",
               "--metric", calibrator.metric, *model_opt]
    if calibrator.geometry != "none":
        command += ["--geometry", calibrator.geometry, *profile_opt[:2]]
    return [command + ["--out", out]], ["--human", out]


def _pairs_options(report) -> list[str]:
    """The input columns, metrics, geometry fixes, long-text handling and extra columns of a pair run."""
    prov, sources, frame = report.provenance_of_result, report.sources, report.result.frame
    options = []
    for key, flag in (("text_a", "--text-a"), ("text_b", "--text-b"), ("label", "--label")):
        if sources.columns.get(key):
            options += [flag, str(sources.columns[key])]
    if sources.encoding:
        options += ["--encoding", sources.encoding]
    if set(report.metrics) != set(METRICS):
        options += ["--metrics", ",".join(report.metrics)]
    scored = {parts[2] for parts in map(split_score_column, frame.columns) if parts and parts[1] != "human"}
    for fix in prov.get("geometry", {}):
        if fix != "none" and fix in scored:
            options += ["--geometry", fix]
    long = prov.get("long_texts") or {}
    if long.get("mode") == "chunk":
        options += ["--long-texts", "chunk", "--chunk-aggregate", str(long["aggregate"]),
                    "--chunk-overlap", str(long["overlap"])]
    if any(str(c).endswith("_calibrated_lo") for c in frame.columns):
        options.append("--interval")
    norms = {f"{sources.columns[k]}_norm" for k in ("text_a", "text_b") if sources.columns.get(k)}
    if norms and norms <= set(frame.columns):
        options.append("--norms")
    return options


def reproduce_commands(report) -> list[str]:
    """Command lines that re-create `report`'s numbers from the files of `source_files`.

    Paths follow `command_path` (relative to the report once it has a file); files the commands
    write are named after the report: ``<stem>-profile.calibsim-profile`` (a background built in
    the app), ``<stem>-human.calibsim-human`` (a human calibration fitted in the app),
    ``<stem>-again<suffix>`` (the report again). A ladder other than the built-in one is the
    ``<stem>-anchors.json`` that `write_report` writes beside the report.
    """
    result, prov, where = report.result, report.provenance_of_result, report.path
    stem, suffix = _out_names(where)
    model_opt = _model_options(report)
    commands, profile_opt = _profile_commands(report, model_opt, stem)
    out = ["--out", f"{stem}-again{suffix}"]
    if isinstance(result, SearchHits):
        search = prov["search"]
        cmd = ["calibsim", "search", *[command_path(f, where) for f in search["queries"]["files"]],
               "--corpus", *[command_path(f, where) for f in search["corpus"]["files"]], *model_opt,
               *profile_opt, "--top-k", str(search["top_k"]), "--metric", search["metric"]]
        if search["geometry"] != "none":
            cmd += ["--geometry", search["geometry"]]
        for key, flag in (("query_prompt", "--query-prompt"), ("document_prompt", "--doc-prompt")):
            if prov["model"].get(key):
                cmd += [flag, str(prov["model"][key])]
    elif isinstance(result, ScoredPairs):
        human, human_opt = _human_commands(report, model_opt, profile_opt, stem)
        commands += human
        cmd = ["calibsim", "score", command_path(prov["pairs"]["file"], where), *model_opt, *profile_opt,
               *human_opt, *_pairs_options(report)]
    else:
        cmd = ["calibsim", "matrix", *[command_path(f, where) for f in prov["documents"]["files"]],
               *model_opt, *profile_opt, "--metric", result.metric]
        if result.ids and all(":" not in i for i in result.ids):     # ids "<file>", not "<file>:<line>"
            cmd.append("--per-file")
        matrix_form = report.form if report.form in result.matrices else next(
            (f for f in result.matrices if f != "raw"), "calibrated")
        if matrix_form != "calibrated":
            cmd += ["--form", matrix_form]
        if getattr(result, "geometry", "none") != "none":
            cmd += ["--geometry", result.geometry]
    commands.append(cmd + out)
    return [shlex.join(c) for c in commands]
