"""Output formats and where outputs may go; plain CSV/TSV tables with a provenance side-car.

Light to import (pandas is imported on use): the GUI's Export dialog reads the formats here.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.atomic import atomic_paths
from calibsim_gui.core.io.csv_writer import ColumnTable, number_column, write_csv

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
FIGURE_NAMES = ("distribution", "calibrated-map", "heatmap", "precision-recall")


def sidecar_path(path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".provenance.json")


def check_output_path(path, *, inputs=(), force: bool = False, formats=REPORT_FORMATS) -> Path:
    """Refuse an unknown format, to overwrite an input (even with `force`) or, without `force`,
    an existing file; a CSV/TSV table's provenance side-car follows the same rules.

    `inputs` are the files (and folders) the command reads; `formats=None` accepts any suffix.
    """
    path = Path(path)
    targets = [path, sidecar_path(path)] if path.suffix.lower() in TABLE_SUFFIXES else [path]
    for target in targets:
        source = _input_at(target, inputs)
        if source is not None:
            raise InputError(f"the output would overwrite the input {source}, even with --force.",
                             path=target, fix="choose another output name")
    if formats is not None and path.suffix.lower() not in formats:
        *first, last = formats
        raise InputError("unsupported output format.", path=path,
                         fix=f"end the output name with {', '.join(first)} or {last}")
    for target in targets:
        if target.exists() and not force:
            raise InputError("the output file exists already.", path=target,
                             fix="choose another output name, or add --force to replace it")
    _check_folder(path)
    return path


def _check_folder(path: Path) -> None:
    """Refuse, before any work, an output whose folder is missing or cannot be written."""
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"the folder {folder} does not exist.", path=path,
                         fix="create the folder first, or choose another output name")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"the folder {folder} cannot be written to.", path=path,
                         fix="choose a folder you can write to")


def _input_at(target: Path, inputs) -> Path | None:
    """The input that `target` is (or lies inside, for an input folder), if any."""
    if not target.exists():
        return None
    for source in map(Path, inputs):
        if not source.exists():
            continue
        if target.samefile(source):
            return source
        if source.is_dir() and target.resolve().is_relative_to(source.resolve()):
            return source
    return None


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


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _defused(value, count: list[int]):
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        count[0] += 1
        return "'" + value
    return value


def protect_formulas(frame):
    """`frame` with a leading ``'`` on every text a spreadsheet would run as a formula.

    Texts starting with ``= + - @``, a tab or a carriage return (OWASP's list) in text columns,
    column names and the index; numbers are never changed. Returns ``(frame, cells_changed)``.
    Text columns pandas holds as strings are checked without making a Python string of each text.
    A `ColumnTable` gives a `ColumnTable`.
    """
    if isinstance(frame, ColumnTable):
        count = [0]
        items = [(_defused(name, count), values if number_column(values) else [_defused(v, count) for v in values])
                 for name, values in frame.items]
        return ColumnTable(items), count[0]
    import pandas as pd

    count = [0]
    out = frame.copy()
    for i, column in enumerate(frame.columns):
        values = frame.iloc[:, i]
        if isinstance(values.dtype, pd.StringDtype):
            formulas = values.str.startswith(FORMULA_STARTS).fillna(False).to_numpy(dtype=bool)
            if formulas.any():
                count[0] += int(formulas.sum())
                defused = values.copy()
                defused.iloc[formulas] = ("'" + values[formulas]).to_numpy()
                out.isetitem(i, defused)
        elif pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values):
            out.isetitem(i, values.map(lambda v: _defused(v, count)))
    out.columns = [_defused(c, count) for c in frame.columns]
    if not isinstance(frame.index, pd.RangeIndex):
        out.index = pd.Index([_defused(v, count) for v in frame.index], name=frame.index.name)
    return out, count[0]


def _holds_carriage_return(frame) -> bool:
    """Whether a text of `frame` (in a cell, a column name or the index) holds a carriage return."""
    if isinstance(frame, ColumnTable):
        return any("\r" in name for name in frame.columns) or any(
            "\r" in v for _, values in frame.items if not number_column(values) for v in values)
    import pandas as pd

    def holds(values) -> bool:
        if isinstance(values.dtype, pd.StringDtype):      # searched without making Python strings
            return bool(pd.Series(values).str.contains("\r", regex=False).fillna(False).any())
        return (not pd.api.types.is_numeric_dtype(values)
                and any(isinstance(v, str) and "\r" in v for v in values))

    return any(holds(v) for v in (frame.columns, frame.index, *(frame.iloc[:, c] for c in range(frame.shape[1]))))


def _write_table(frame, provenance: dict, path: Path, *, keep_formulas: bool, index: bool,
                 float_format: str) -> Path:
    """`frame` as CSV/TSV plus its provenance side-car, replaced together or not at all."""
    changed = 0
    if not keep_formulas:
        frame, changed = protect_formulas(frame)
    provenance = {**provenance, "formula_protection": {
        "applied": not keep_formulas, "cells_changed": changed,
        "rule": "texts starting with = + - @, a tab or a carriage return get a leading '"}}
    # The csv module quotes a text only for the characters of the line end: a text holding a
    # carriage return needs CRLF line ends, or it would split its row when read back.
    line_end = "\r\n" if _holds_carriage_return(frame) else "\n"
    with atomic_paths(path, sidecar_path(path)) as (table, sidecar):
        with open(table, "w", encoding="utf-8", newline="") as handle:
            write_csv(frame, handle, sep=TABLE_SUFFIXES[path.suffix.lower()], lineterminator=line_end,
                      index=index, float_format=float_format)
        sidecar.write_text(dump_json(provenance), encoding="utf-8")
    return path


def write_frame(frame, provenance: dict, path, *, keep_formulas: bool = False) -> Path:
    """Write a table of rows as CSV/TSV plus ``<out>.provenance.json``, replaced together.

    Formula-like texts are defused (see `protect_formulas`) unless `keep_formulas`.
    """
    return _write_table(frame, provenance, Path(path), keep_formulas=keep_formulas, index=False,
                        float_format="%.10g")


def write_scored_pairs(scored, path, *, keep_formulas: bool = False) -> Path:
    """Write a `ScoredPairs` (or `SearchHits`) as a CSV/TSV table plus ``<out>.provenance.json``."""
    return write_frame(scored.frame, scored.provenance, path, keep_formulas=keep_formulas)


def write_matrix(result, path, *, form: str = "calibrated", keep_formulas: bool = False) -> Path:
    """Write one form of a `DocumentMatrix` as a square CSV/TSV with document ids (+ side-car)."""
    import pandas as pd

    frame = pd.DataFrame(result.matrices[form], index=result.ids, columns=result.ids)
    frame.index.name = f"{result.metric}_{form}"
    return _write_table(frame, {**result.provenance, "form": form}, Path(path),
                        keep_formulas=keep_formulas, index=True, float_format="%.6g")
