"""The Reproduce block: the command lines that give a report's numbers again."""

from __future__ import annotations

import shlex
from pathlib import Path

from calibsim_gui.core.analysis.pairs import ScoredPairs
from calibsim_gui.core.analysis.search import SearchHits
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.references.anchors import builtin_anchors

BUILTIN_PROFILE_PREFIX = "built-in"


def is_builtin_ladder(anchors) -> bool:
    """True when `anchors` holds exactly the built-in ladder's levels and pairs (whatever its name)."""
    def content(ladder):
        d = ladder.to_dict()
        return d["levels"], d["pairs"]

    return content(anchors) == content(builtin_anchors())


def anchors_path(report_path) -> Path:
    """Where a report's anchor ladder is written: ``<report stem>-anchors.json`` beside it."""
    report_path = Path(report_path)
    return report_path.with_name(f"{report_path.stem}-anchors.json")


def reproduce_commands(result, profile, input_name: str, metrics: list[str],
               anchors_file: Path | None = None, form: str = "calibrated") -> list[str]:
    """Command lines that re-create this report's numbers from the same inputs.

    A ladder other than the built-in one is named by `anchors_file` (written beside the report
    by `write_report`; ``<report>-anchors.json`` when the report has no file yet).
    """
    prov = result.provenance
    model = prov["model"]["name"]
    model_opt = [] if model == "all-MiniLM-L6-v2" else ["--model", model]
    precision = str(prov["model"].get("precision") or "float32")
    if precision != "float32":                 # as chosen (e.g. by auto): the same numbers again
        model_opt += ["--precision", precision] + (["--engine", "onnx"] if precision == "int8" else [])
    commands, profile_opt, anchors_opt = [], [], []
    if not is_builtin_ladder(profile.anchors):
        anchors_opt = ["--anchors", Path(anchors_file).name if anchors_file
                       else "report-anchors.json"]
    name = str(profile.provenance.get("name", ""))
    if not name.startswith(BUILTIN_PROFILE_PREFIX):
        out = name if name.endswith(".calibsim-profile") else "reference.calibsim-profile"
        background = profile.provenance.get("background") or {}
        build = ["calibsim", "profile", "build", *model_opt, "--out", out]
        if background.get("files"):
            build += ["--background", *[f["name"] for f in background["files"]],
                      "--pairs", str(background.get("pairs")), "--seed", str(background.get("seed"))]
            columns = set((background.get("text_columns") or {}).values())
            if len(columns) == 1:
                build += ["--column", columns.pop()]
        build += anchors_opt
        anchors_opt = []
        commands.append(shlex.join(build))
        profile_opt = ["--profile", out]
    profile_opt += anchors_opt
    if isinstance(result, SearchHits):
        search = prov["search"]
        cmd = ["calibsim", "search", *[Path(f).name for f in search["queries"]["files"]], "--corpus",
               *[Path(f).name for f in search["corpus"]["files"]], *model_opt, *profile_opt,
               "--top-k", str(search["top_k"]), "--metric", search["metric"]]
        if search["geometry"] != "none":
            cmd += ["--geometry", search["geometry"]]
        cmd += ["--out", "report.html"]
    elif isinstance(result, ScoredPairs):
        cmd = ["calibsim", "score", input_name, *model_opt, *profile_opt]
        if set(metrics) != set(METRICS):
            cmd += ["--metrics", ",".join(metrics)]
        long = prov.get("long_texts") or {}
        if long.get("mode") == "chunk":
            cmd += ["--long-texts", "chunk", "--chunk-aggregate", str(long["aggregate"]),
                    "--chunk-overlap", str(long["overlap"])]
        cmd += ["--out", "report.html"]
    else:
        files = [Path(f).name for f in prov["documents"]["files"]]
        cmd = ["calibsim", "matrix", *files, *model_opt, *profile_opt, "--metric", result.metric]
        if result.ids and all(":" not in i for i in result.ids):     # ids "<file>", not "<file>:<line>"
            cmd.append("--per-file")
        matrix_form = form if form in result.matrices else next(
            (f for f in result.matrices if f != "raw"), "calibrated")
        if matrix_form != "calibrated":
            cmd += ["--form", matrix_form]
        if getattr(result, "geometry", "none") != "none":
            cmd += ["--geometry", result.geometry]
        cmd += ["--out", "report.html"]
    commands.append(shlex.join(cmd))
    return commands
