"""Machine-readable reports: JSON (documented schema) and XLSX (results + provenance sheets).

Numbers keep full precision; see docs/report-formats.md for the JSON schema.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

import numpy as np

from calibsim_gui.core.analysis.matrices import LOCAL_MINMAX_ROWS
from calibsim_gui.core.analysis.pairs import split_score_column
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS
from calibsim_gui.core.io.output import dump_json, jsonable

if TYPE_CHECKING:
    import pandas as pd  # heavy: imported where a table is made

JSON_SCHEMA_VERSION = 2          # 2: adds calibrators, anchors and column descriptions


def _columns(report) -> dict[str, str]:
    if report.kind == "matrix":
        return {form: LOCAL_MINMAX_ROWS if form == "local_minmax" else FORM_DESCRIPTIONS.get(form, form)
                for form in report.matrices}
    out = {}
    described = report.provenance.get("columns", {}) if report.kind == "search" else {}
    for column in report.result.frame.columns:
        if report.kind == "search" and column.endswith(("_local_minmax", "_query_zscore")):
            out[column] = described.get(column.split("_", 1)[1], column)
            continue
        parts = split_score_column(column)
        if parts:
            metric, form, geometry = parts
            out[column] = FORM_DESCRIPTIONS[form] + ("" if geometry == "none" else f"; geometry fix {geometry}")
    return out


def report_json(report) -> str:
    """The report as one JSON document: results, calibrators' parameters, references, provenance."""
    body = {"format": {"pairs": "calibsim-scores", "search": "calibsim-search"}.get(report.kind,
                                                                                  "calibsim-matrix"),
            "schema_version": JSON_SCHEMA_VERSION,
            "provenance": {**report.provenance, "input_sha256": report.input_digests},
            "columns": _columns(report),
            "anchors": {**report.profile.anchors.to_dict(),
                        "scores": {m: report.profile.metrics[m].anchor_scores.tolist()
                                   for m in report.metrics if m in report.profile.metrics}},
            "calibrators": report.calibrators(),
            "diagnostics": None if report.space is None else report.space.diagnostics,
            "reproduce": report.reproduce()}
    if report.kind != "matrix":
        body["rows"] = [{k: jsonable(v) for k, v in row.items()}
                        for row in report.result.frame.to_dict("records")]
    else:
        body.update(ids=report.result.ids, metric=report.result.metric,
                    matrices={k: np.where(np.isfinite(m), m, np.nan).astype(float).tolist()
                              for k, m in report.matrices.items()})
    return dump_json(body)


def _flatten(prefix: str, value, rows: list) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, rows)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, item in enumerate(value):
            _flatten(f"{prefix}[{i}]", item, rows)
    else:
        rows.append((prefix, value if isinstance(value, (int, float, str, bool)) or value is None
                     else dump_json(value)))


def provenance_frame(report) -> pd.DataFrame:
    """Provenance flattened to (key, value) rows, summary first."""
    import pandas as pd

    rows = [(f"summary.{label}", value) for label, value in report.summary()]
    _flatten("provenance", report.provenance, rows)
    rows += [(f"reproduce[{i}]", command) for i, command in enumerate(report.reproduce())]
    return pd.DataFrame(rows, columns=["key", "value"])


XLSX_CELL_LIMIT = 32_767


def _cell(value) -> str:
    text = dump_json(value)
    if len(text) <= XLSX_CELL_LIMIT:
        return text
    return f"{len(value)} values (too long for a spreadsheet cell; all of them are in the JSON export)"


def calibrators_frame(report) -> pd.DataFrame:
    import pandas as pd

    rows = [(metric, form, key, _cell(value))
            for metric, forms in report.calibrators().items() for form, params in forms.items()
            for key, value in params.items()]
    return pd.DataFrame(rows, columns=["metric", "form", "parameter", "value"])


def _cell_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Control characters (which XLSX cannot hold) replaced by U+FFFD in texts and column names."""
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    def clean(value):
        return ILLEGAL_CHARACTERS_RE.sub("\ufffd", value) if isinstance(value, str) else value

    return frame.map(clean).rename(columns=clean)


def numbers_as_numbers(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns that hold only numbers (and blanks), such as an input's human scores, as
    numbers; a column with a number written with a leading zero ("007", an id) stays text."""
    import pandas as pd

    out = frame.copy()
    for column in frame.columns:
        values = frame[column]
        if not pd.api.types.is_string_dtype(values) or not values.map(lambda v: isinstance(v, str)).all():
            continue
        stripped = values.str.strip()
        filled = stripped != ""
        parsed = pd.to_numeric(stripped.where(filled), errors="coerce")
        if (filled.any() and parsed[filled].notna().all() and np.isfinite(parsed[filled]).all()
                and not stripped[filled].str.match(r"^[+-]?0\d").any()):
            out[column] = parsed
    return out


def _serialisation_errors() -> tuple:
    """What openpyxl raises for a failed write when it writes through lxml (not an OSError)."""
    try:
        from lxml.etree import SerialisationError
    except ImportError:
        return ()
    return (SerialisationError,)


def write_xlsx(report, path) -> None:
    """Results sheet(s) at full precision, then provenance, anchors and calibrators sheets.

    A failed write is an `OSError`, also where openpyxl writes through lxml ("IO_ENOSPC").
    """
    _as_os_errors(_write_sheets, report, path)


def _as_os_errors(write, *args) -> None:
    """`write(*args)`, a failed write of openpyxl through lxml raised as the `OSError` it is."""
    try:
        write(*args)
    except _serialisation_errors() as exc:
        code = getattr(errno, str(exc).removeprefix("IO_"), errno.EIO)
        _close_quietly(exc)
        raise OSError(code, os.strerror(code)) from None


def _close_quietly(exc: BaseException) -> None:
    """Let go of openpyxl's half-written sheet streams, whose closing fails once more (ignored)."""
    import gc
    import sys
    import traceback

    hook, sys.unraisablehook = sys.unraisablehook, lambda unraisable: None
    try:
        traceback.clear_frames(exc.__traceback__)
        gc.collect()
    finally:
        sys.unraisablehook = hook


def _write_sheets(report, path) -> None:
    import pandas as pd

    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        if report.kind != "matrix":
            results = _cell_safe(numbers_as_numbers(report.result.frame))
            results.to_excel(writer, sheet_name="results", index=False)
        else:
            ids = report.result.ids
            for form, matrix in report.matrices.items():
                pd.DataFrame(matrix.astype(float), index=ids, columns=ids).to_excel(
                    writer, sheet_name=f"{report.metric}_{form}"[:31])
        _cell_safe(provenance_frame(report)).to_excel(writer, sheet_name="provenance", index=False)
        report.anchors_table().to_excel(writer, sheet_name="anchors", index=False)
        calibrators_frame(report).to_excel(writer, sheet_name="calibrators", index=False)
        _finish_sheets(writer, matrix=f"{report.metric}_" if report.kind == "matrix" else None)


def _finish_sheets(writer, *, matrix: str | None = None) -> None:
    """Every sheet's formula-like texts kept as text, its header frozen and filtered (a sheet
    whose title starts with `matrix` is a matrix)."""
    for sheet in writer.book.worksheets:          # a text such as "=HYPERLINK(...)" stays text
        for row in sheet.iter_rows():
            for cell in row:
                if cell.data_type == "f":
                    cell.data_type = "s"
        _freeze_and_filter(sheet, matrix=matrix is not None and sheet.title.startswith(matrix))


def write_table_sheets(frames: dict[str, pd.DataFrame], provenance: dict, path) -> None:
    """Each table of `frames` on its own sheet at full precision, then the provenance flattened
    to (key, value) rows; a failed write is an `OSError`, as in `write_xlsx`."""
    _as_os_errors(_write_frames, frames, provenance, path)


def _write_frames(frames: dict[str, pd.DataFrame], provenance: dict, path) -> None:
    import pandas as pd

    rows: list = []
    _flatten("provenance", provenance, rows)
    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        for name, frame in frames.items():
            _cell_safe(frame).to_excel(writer, sheet_name=name[:31], index=False)
        _cell_safe(pd.DataFrame(rows, columns=["key", "value"])).to_excel(
            writer, sheet_name="provenance", index=False)
        _finish_sheets(writer)


def _freeze_and_filter(sheet, *, matrix: bool) -> None:
    """The header row (and a matrix's id column) stays in view; tables get a filter on every column."""
    if sheet.max_row < 1 or sheet.max_column < 1:
        return
    sheet.freeze_panes = "B2" if matrix else "A2"
    if not matrix:
        sheet.auto_filter.ref = sheet.dimensions
