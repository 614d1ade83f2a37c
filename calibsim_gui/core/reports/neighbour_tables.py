"""A document set's neighbours, most similar pairs and duplicate groups written as tables:
CSV/TSV (one table + provenance side-car), JSON (every table asked for, with provenance and the
columns' meanings) or XLSX (a sheet per table, then the provenance). Every write is atomic."""

from __future__ import annotations

from pathlib import Path

from calibsim_gui.core.analysis.pairs import split_score_column
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.atomic import atomic_path
from calibsim_gui.core.io.output import TABLE_SUFFIXES, check_output_path, dump_json, write_frame
from calibsim_gui.core.reports.tables import write_table_sheets

NEIGHBOUR_FORMATS = {".csv": "CSV table (+ provenance side-car)", ".tsv": "TSV table (+ provenance side-car)",
                     ".json": "JSON (tables, columns, provenance)", ".xlsx": "Excel workbook (a sheet per table)"}
TABLES = ("neighbours", "pairs", "groups")
JSON_FORMAT = "calibsim-neighbours"
JSON_SCHEMA_VERSION = 1
COLUMNS = {
    "doc_id": "the document's id (file:line, or file)", "document": "the document's text",
    "rank": "1 = the document's most similar other document",
    "neighbour_id": "the neighbour's id", "neighbour": "the neighbour's text",
    "group": "duplicate group: 1 = the largest", "size": "texts in the group",
}


def column_meanings(frame) -> dict[str, str]:
    """What each column of a neighbours, pairs or groups table holds."""
    out = {}
    for column in frame.columns:
        parts = split_score_column(column)
        if parts:
            out[column] = FORM_DESCRIPTIONS[parts[1]] + ("" if parts[2] == "none" else f"; geometry fix {parts[2]}")
        else:
            out[column] = COLUMNS.get(column, column)
    return out


def write_neighbour_tables(result, path, *, tables=TABLES, force: bool = False, inputs=(),
                           keep_formulas: bool = False) -> Path:
    """Write the `tables` (names of `TABLES`) of a `DocumentNeighbours` to `path` by its
    extension (`NEIGHBOUR_FORMATS`); CSV and TSV hold the first of them."""
    path = check_output_path(path, inputs=inputs, force=force, formats=NEIGHBOUR_FORMATS)
    frames = {name: getattr(result, name) for name in tables}
    unknown = set(frames) - set(TABLES)
    if unknown:
        raise InputError(f"no table {sorted(unknown)}.", fix=f"choose from {', '.join(TABLES)}")
    suffix = path.suffix.lower()
    if suffix in TABLE_SUFFIXES:
        name, frame = next(iter(frames.items()))
        return write_frame(frame, {**result.provenance, "table": name, "columns": {
            **result.provenance.get("columns", {}), **column_meanings(frame)}}, path,
            keep_formulas=keep_formulas)
    with atomic_path(path) as tmp:
        if suffix == ".xlsx":
            write_table_sheets(frames, result.provenance, tmp)
        else:
            head = dump_json({"format": JSON_FORMAT, "schema_version": JSON_SCHEMA_VERSION,
                              "provenance": result.provenance,
                              "columns": {n: column_meanings(f) for n, f in frames.items()}})
            with open(tmp, "w", encoding="utf-8") as out:
                out.write(head.rstrip().removesuffix("}"))
                for name, frame in frames.items():      # rows as pandas writes them: fast at 1 M rows
                    out.write(f', "{name}": ' + frame.to_json(orient="records", double_precision=15,
                                                              force_ascii=False))
                out.write("}\n")
    return path
