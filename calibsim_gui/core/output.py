"""Output formats and where outputs may go; plain CSV/TSV tables with a provenance side-car.

Light to import (pandas is imported on use): the GUI's Export dialog reads the formats here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from calibsim_gui.core.atomic import atomic_path, write_text_atomic
from calibsim_gui.core.errors import InputError

TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t"}
REPORT_FORMATS = {
    ".html": "HTML report (self-contained)",
    ".pdf": "PDF report",
    ".xlsx": "Excel workbook (results + provenance)",
    ".json": "JSON (results, calibrators, provenance)",
    ".csv": "CSV table (+ provenance side-car)",
    ".tsv": "TSV table (+ provenance side-car)",
}
FIGURE_FORMATS = (".png", ".svg")
FIGURE_NAMES = ("distribution", "calibrated-map", "heatmap")


def sidecar_path(path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".provenance.json")


def check_output_path(path, *, inputs=(), force: bool = False) -> Path:
    """Refuse to overwrite an input file, an existing file without `force`, or an unknown format."""
    path = Path(path)
    if path.suffix.lower() not in REPORT_FORMATS:
        *first, last = REPORT_FORMATS
        raise InputError("unsupported output format.", path=path,
                         fix=f"end the output name with {', '.join(first)} or {last}")
    for source in inputs:
        if Path(source).exists() and path.exists() and path.samefile(source):
            raise InputError("the output would overwrite an input file.", path=path,
                             fix="choose another output name")
    if path.exists() and not force:
        raise InputError("the output file exists already.", path=path,
                         fix="choose another output name, or add --force to replace it")
    return path


def figure_path(path, name: str, suffix: str) -> Path:
    """``<stem>-<figure name><suffix>`` beside the report `path`."""
    path = Path(path)
    return path.with_name(f"{path.stem}-{name}{suffix}")


def figure_paths(path) -> list[Path]:
    """Every file a figure export may write beside a report written to `path`."""
    return [figure_path(path, name, suffix) for name in FIGURE_NAMES for suffix in FIGURE_FORMATS]


def jsonable(value):
    """NaN and infinities become null (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dump_json(obj) -> str:
    return json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False, default=str)


def write_scored_pairs(scored, path) -> Path:
    """Write a `ScoredPairs` as a CSV/TSV table plus ``<out>.provenance.json``."""
    path = Path(path)
    with atomic_path(path) as tmp:
        scored.frame.to_csv(tmp, sep=TABLE_SUFFIXES[path.suffix.lower()], index=False,
                            float_format="%.10g")
    write_text_atomic(sidecar_path(path), dump_json(scored.provenance))
    return path


def write_matrix(result, path, *, form: str = "calibrated") -> Path:
    """Write one form of a `DocumentMatrix` as a square CSV/TSV with document ids (+ side-car)."""
    import pandas as pd

    path = Path(path)
    frame = pd.DataFrame(result.matrices[form], index=result.ids, columns=result.ids)
    frame.index.name = f"{result.metric}_{form}"
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, sep=TABLE_SUFFIXES[path.suffix.lower()], float_format="%.6g")
    write_text_atomic(sidecar_path(path), dump_json({**result.provenance, "form": form}))
    return path
