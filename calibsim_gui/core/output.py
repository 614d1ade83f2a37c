"""Writing scored pairs and document matrices: CSV/TSV (+ provenance side-car) or one JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from calibsim_gui.core.atomic import atomic_path, write_text_atomic
from calibsim_gui.core.errors import InputError

TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t"}
OUTPUT_SCHEMA = 1


def sidecar_path(path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".provenance.json")


def check_output_path(path, *, inputs=(), force: bool = False) -> Path:
    """Refuse to overwrite an input file, an existing file without `force`, or an unknown format."""
    path = Path(path)
    if path.suffix.lower() not in (*TABLE_SUFFIXES, ".json"):
        raise InputError("unsupported output format.", path=path,
                         fix="end the output name with .csv, .tsv or .json")
    for source in inputs:
        if Path(source).exists() and path.exists() and path.samefile(source):
            raise InputError("the output would overwrite an input file.", path=path,
                             fix="choose another --out name")
    if path.exists() and not force:
        raise InputError("the output file exists already.", path=path,
                         fix="choose another --out name or add --force to replace it")
    return path


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _dump(obj) -> str:
    return json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False, default=str)


def write_scored_pairs(scored, path) -> Path:
    """Write a `ScoredPairs`: a plain table plus ``<out>.provenance.json``, or one JSON file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        records = [{k: _jsonable(v) for k, v in row.items()}
                   for row in scored.frame.to_dict("records")]
        write_text_atomic(path, _dump({"format": "calibsim-scores", "schema_version": OUTPUT_SCHEMA,
                                       "provenance": scored.provenance, "rows": records}))
        return path
    with atomic_path(path) as tmp:
        scored.frame.to_csv(tmp, sep=TABLE_SUFFIXES[suffix], index=False, float_format="%.10g")
    write_text_atomic(sidecar_path(path), _dump(scored.provenance))
    return path


def write_matrix(result, path, *, form: str = "calibrated") -> Path:
    """Write a `DocumentMatrix`: one form as a square CSV/TSV with document ids, or all as JSON."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        write_text_atomic(path, _dump({
            "format": "calibsim-matrix", "schema_version": OUTPUT_SCHEMA,
            "provenance": result.provenance, "ids": result.ids, "metric": result.metric,
            "matrices": {k: m.astype(float).round(7).tolist()
                         for k, m in result.matrices.items()}}))
        return path
    frame = pd.DataFrame(result.matrices[form], index=result.ids, columns=result.ids)
    frame.index.name = f"{result.metric}_{form}"
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, sep=TABLE_SUFFIXES[suffix], float_format="%.6g")
    write_text_atomic(sidecar_path(path), _dump({**result.provenance, "form": form}))
    return path
