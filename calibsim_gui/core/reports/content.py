"""What a report says, independent of its file format: summary, tables, notes, how to read."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from calibsim_gui.core.analysis.distributions import anchor_medians, calibrate_form
from calibsim_gui.core.analysis.evaluation import evaluate
from calibsim_gui.core.analysis.matrices import DocumentMatrix, local_minmax_rows
from calibsim_gui.core.analysis.pairs import ScoredPairs, split_score_column
from calibsim_gui.core.analysis.search import SearchHits
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.geometry.space import diagnostics_table
from calibsim_gui.core.geometry.transforms import GEOMETRIES
from calibsim_gui.core.provenance import file_digest
from calibsim_gui.core.reports.figures import report_figures
from calibsim_gui.core.reports.reading import how_to_read
from calibsim_gui.core.reports.reproduce import (
    RunSources,
    command_path,
    is_builtin_ladder,
    reproduce_commands,
    source_files,
)
from calibsim_gui.core.reports.space_cache import cached_profile_space
from calibsim_gui.core.reports.tables import numbers_as_numbers

if TYPE_CHECKING:
    import pandas as pd  # heavy: imported where a table is made

FILE_ROLES = {"pairs": "Input file", "documents": "Input file", "queries": "Input file",
              "corpus": "Input file", "background": "Background file", "profile": "Profile file",
              "anchors": "Anchors file", "human calibration": "Human calibration file",
              "human training pairs": "Human training pairs"}
"""How the provenance appendix labels the files of each role (`reproduce.source_files`)."""
MAX_READABLE_ROWS = 5000        # HTML/PDF tables; every row is in CSV/XLSX/JSON
TOP_DOCUMENT_PAIRS = 50


def _result_metrics(result) -> list[str]:
    if isinstance(result, DocumentMatrix):
        return [result.metric]
    if isinstance(result, SearchHits):
        return [result.provenance["search"]["metric"]]
    found = {parts[0] for parts in map(split_score_column, result.frame.columns) if parts}
    return [m for m in METRICS if m in found]


def _precision_text(model: dict) -> str:
    """The precision the model ran in, and why (e.g. what --precision auto chose)."""
    precision = str(model.get("precision") or "float32")
    note = str(model.get("precision_note") or "")
    if not note or note == precision:
        return precision
    return note if note.startswith(precision) else f"{precision} — {note}"


def _prompt_text(prompt, name=None) -> str:
    """A prompt for the summary: ``'query: ' (prompt "query")``, or "none" (also for runs made
    before prompts were recorded, which used none)."""
    if not prompt:
        return "none"
    return repr(str(prompt)) + (f' (prompt "{name}")' if name else "")


@dataclass
class Report:
    """One analysis with its references, ready to be written in any format.

    Attributes
    ----------
    result : ScoredPairs, DocumentMatrix or SearchHits
    profile : ReferenceProfile
        The references the result was calibrated with.
    metric, form : str
        Metric and calibrated form featured in readable tables and figures.
    """

    result: ScoredPairs | DocumentMatrix | SearchHits
    profile: object
    metric: str
    form: str
    sources: RunSources = field(default_factory=RunSources)
    """The profile, human calibration and input columns the result was made with (`RunSources`)."""
    anchors_file: Path | None = None
    """Where the report's anchor ladder was written (set by `write_report` for a ladder other
    than the built-in one); the Reproduce commands name it."""
    path: Path | None = None
    """The report's file (set by `write_report`): the Reproduce commands' paths are relative to it."""

    @property
    def calibration_form(self) -> str:
        """The featured form where a profile calibrator is needed (anchor table, figures): the
        featured form itself, or "calibrated" for a form computed per document pair (csls)."""
        metric = self.profile.metrics.get(self.metric)
        return self.form if metric is not None and self.form in metric.calibrators else "calibrated"

    @functools.cached_property
    def matrices(self) -> dict[str, np.ndarray]:
        """A document set's matrices by form, with each row's local min-max
        (`analysis.local_minmax_rows`) added when it was not scored."""
        matrices = dict(self.result.matrices)
        if "local_minmax" not in matrices:
            similarity = METRICS[self.result.metric].as_similarity(matrices["raw"])
            matrices["local_minmax"] = local_minmax_rows(similarity).astype(np.float32)
        return matrices

    @property
    def custom_anchors(self) -> bool:
        """True when the references use a ladder other than the built-in one (e.g. edited)."""
        return not is_builtin_ladder(self.profile.anchors)

    @property
    def kind(self) -> str:
        if isinstance(self.result, SearchHits):
            return "search"
        return "pairs" if isinstance(self.result, ScoredPairs) else "matrix"

    @property
    def provenance_of_result(self) -> dict:
        """The result's own provenance, as the scoring recorded it."""
        return self.result.provenance

    @property
    def provenance(self) -> dict:
        """The result's provenance with every file the report depends on (``files``: role, path,
        sha256), the human calibration's source and check, and the command-line equivalents of
        the choices made (``choices``)."""
        prov = dict(self.result.provenance)
        prov["files"] = self.files
        if prov.get("human"):
            prov["human"] = [self._human_record(h) for h in prov["human"]]
        model = prov["model"]
        background = self.profile.provenance.get("background") or {}
        prov["choices"] = {
            "engine": model.get("engine"), "precision": model.get("precision"),
            "prompt": model.get("prompt"), "prompt_name": model.get("prompt_name"),
            "columns": dict(self.sources.columns), "encoding": self.sources.encoding,
            "geometry": [g for g in prov.get("geometry", {}) if g != "none"],
            "clean_html": bool(background.get("clean_html")),
            "edited_anchors": self.custom_anchors}
        return prov

    def _human_record(self, entry: dict) -> dict:
        """A human calibration entry with the file it came from and the labelled pairs it was
        fitted on (name, sha256) and its cross-validated error."""
        fit = self.sources.human
        calibrator = getattr(fit, "calibrator", None)
        if calibrator is None or (calibrator.metric, calibrator.geometry) != (entry.get("metric"),
                                                                              entry.get("geometry")):
            return entry
        source, validation = fit.source or {}, fit.validation or {}
        record = {**entry, "training_file": source.get("file"), "training_sha256": source.get("sha256"),
                  "cross_validated": {k: validation.get(k) for k in ("mae", "rmse", "n_splits", "split")}}
        if self.sources.human_file:
            record.update(file=str(Path(self.sources.human_file).resolve()),
                          sha256=self._digest(self.sources.human_file))
        return record

    def _digest(self, path) -> str | None:
        """sha256 of a file on disk (None when it is gone), computed once per report."""
        digests = self.__dict__.setdefault("_digests", {})
        key = str(Path(path).resolve())
        if key not in digests:
            digests[key] = file_digest(key) if Path(key).is_file() else None
        return digests[key]

    @property
    def files(self) -> list[dict]:
        """Every file the report depends on, by role, with its sha256 (`reproduce.source_files`)."""
        return source_files(self, self._digest)

    @property
    def input_files(self) -> list[Path]:
        prov = self.provenance
        if self.kind == "search":
            files = prov["search"]["queries"]["files"] + prov["search"]["corpus"]["files"]
        else:
            files = [prov["pairs"]["file"]] if self.kind == "pairs" else prov["documents"]["files"]
        return [Path(f) for f in files]

    @property
    def title(self) -> str:
        names = ", ".join(f.name for f in self.input_files[:3])
        more = f" and {len(self.input_files) - 3} more" if len(self.input_files) > 3 else ""
        return f"calibsim report: {names}{more}"

    @property
    def metrics(self) -> list[str]:
        return _result_metrics(self.result)

    @property
    def input_digests(self) -> dict[str, str]:
        """sha256 of every input file still on disk (what a reader checks to reproduce)."""
        return {str(f): self._digest(f) for f in self.input_files if f.is_file()}

    def summary(self) -> list[tuple[str, str]]:
        """(label, value) rows of the summary that opens every report."""
        prov, profile = self.provenance, self.profile
        model = prov["model"]
        refs = prov["references"]
        bg = profile.provenance.get("background") or {}
        rows = [("Created", prov["created"]),
                ("Model", model["name"]),
                ("Model fingerprint", model["digest"]),
                ("Device", str(model["device"])),
                ("Precision", _precision_text(model)),
                ("Max sequence length", f"{model['max_seq_length']} tokens"),
                ("Prompt", _prompt_text(model.get("prompt"), model.get("prompt_name")))]
        if self.kind == "search":
            rows.append(("Query / document prompts", f"{_prompt_text(model.get('query_prompt'))} / "
                                                     f"{_prompt_text(model.get('document_prompt'))}"))
        if self.kind == "pairs":
            pairs = prov["pairs"]
            rows.append(("Input (the pairs scored)",
                         f"{pairs['file']}: {pairs['scored']:,} of {pairs['rows']:,} pairs scored"))
        elif self.kind == "search":
            search = prov["search"]
            rows.append(("Queries", f"{search['queries']['count']:,} from "
                                    f"{len(search['queries']['files'])} file(s)"))
            rows.append(("Corpus", f"{search['corpus']['count']:,} documents from "
                                   f"{len(search['corpus']['files'])} file(s)"))
            rows.append(("Search", f"top {search['top_k']} hits per query by {search['metric']}"
                                   + ("" if search["geometry"] == "none"
                                      else f" under geometry fix {search['geometry']}")))
        else:
            docs = prov["documents"]
            files = docs["files"]
            shown = ", ".join(str(f) for f in files[:3]) + (f" and {len(files) - 3} more"
                                                            if len(files) > 3 else "")
            rows.append(("Input (the documents scored)",
                         f"{docs['count']:,} documents from {len(files)} file(s): {shown}"))
        rows.append(("Reference profile", self.profile_summary(str(refs["profile"]))))
        rows.append(("Anchors", self.anchors_summary()))
        human = self.human_summary()
        if human:
            rows.append(("Human calibration", human))
        if profile.has_background:
            files = ", ".join(f["name"] for f in bg.get("files", []))
            columns = bg.get("text_columns") or {}
            rows.append(("Background (reference corpus, not your input)",
                         f"{profile.background_pairs:,} random pairs of "
                         f"{bg.get('sentences', '?'):,} sentences, seed {bg.get('seed', '?')}"
                         + (f", from {bg['corpus']}" if bg.get("corpus") else "")
                         + (f", files {files}" if files else "")
                         + ("; text column " + ", ".join(f"{c!r} ({f})" for f, c in columns.items())
                            if columns else "")
                         + ("; HTML leftovers cleaned before building" if bg.get("clean_html") else "")))
        else:
            rows.append(("Background", "none (anchor calibrations only)"))
        enc = prov["encoding"]
        rows.append(("Encoding", f"{enc['distinct_texts']:,} distinct texts, {enc['from_cache']:,} from "
                                 f"the embedding cache, {enc['truncated']:,} truncated"))
        long = prov.get("long_texts") or {}
        if long.get("mode") == "chunk":
            rows.append(("Long texts", f"chunked: {long['texts_chunked']:,} texts into {long['chunks']:,} "
                                       f"chunks of up to {long.get('window')} tokens ({long['overlap']} "
                                       f"overlapping); a pair scores the {long['aggregate']} aggregate of its "
                                       "chunk pairs; calibration applied to that score"))
        if long.get("pairs_truncated"):
            column = next((c for c, text in prov["columns"].items()
                           if c.endswith("truncated") and "max length" in str(text)), "truncated")
            rows.append(("Truncated pairs", f"{long['pairs_truncated']:,} pairs have a truncated text "
                                            f"(column {column}): only the first "
                                            f"{model['max_seq_length']} tokens were scored"))
        unreadable = prov.get("unreadable") or {}
        if unreadable.get("pairs"):
            rows.append(("Unreadable pairs", f"{unreadable['pairs']:,} pairs have a text with {unreadable['why']} "
                                             "(column unreadable): raw score only, no calibrated one"))
        rows.append(("Metrics", ", ".join(self.metrics)))
        rows.append(("Versions", ", ".join(f"{k} {v}" for k, v in prov["versions"].items())))
        return rows

    def anchors_table(self) -> pd.DataFrame:
        """Anchor levels with their target, pair count and median score (raw and calibrated)."""
        import pandas as pd

        profile, metric = self.profile, self.metric
        counts = pd.Series([p.level for p in profile.anchors.pairs]).value_counts()
        medians = dict(anchor_medians(profile, metric))
        rows = []
        for level in profile.anchors.levels:
            raw = medians.get(level.label, np.nan)
            form = self.calibration_form
            cal = calibrate_form(profile, metric, form, [raw])[0] if np.isfinite(raw) else np.nan
            rows.append({"level": level.label, "target": level.target,
                         "pairs": int(counts.get(level.name, 0)),
                         f"{metric}_raw (median)": raw, f"{metric}_{form}": cal})
        return pd.DataFrame(rows)

    def agreement_table(self) -> pd.DataFrame | None:
        """Spearman (x100) of every score column with the human labels, metric by form."""
        import pandas as pd

        agreement = self.provenance.get("agreement")
        if not agreement:
            return None
        table: dict[str, dict[str, float]] = {}
        for column, rho in agreement["spearman_x100"].items():
            metric, _, form = column.partition("_")
            table.setdefault(metric, {})[form] = rho
        return pd.DataFrame.from_dict(table, orient="index").rename_axis("metric").reset_index()

    def evaluation_table(self) -> tuple[pd.DataFrame, str] | None:
        """The featured metric's score columns checked against the human labels (as by
        `calibsim evaluate`, see `calibsim_gui.core.analysis.evaluation`) and a note on how to read them;
        None when the input has no usable labels."""
        import pandas as pd

        if not self.provenance.get("agreement"):
            return None
        try:
            evaluation = evaluate({"model": self.result})
        except InputError:
            return None
        forms = evaluation.forms["model"]
        frame = forms.loc[[c for c in self.featured_columns() if c in forms.index]]
        table = pd.DataFrame({"column": frame.index, "MAE": frame["mae"],
                              "top ties (%)": frame["top_ties"] * 100,
                              "Spearman × 100": frame["spearman_x100"], "mean": frame["mean"],
                              "bias": frame["bias"]}).round(3)
        low, high = evaluation.scale
        note = (f"{evaluation.n_pairs:,} labelled pairs; the human scores in '{evaluation.label}' are "
                f"rescaled from their observed range {low:g}-{high:g} to 0-1 (mean "
                f"{evaluation.label_mean:.3f}; `calibsim evaluate --scale` takes the declared scale). "
                "MAE (mean absolute error) and bias (mean minus the mean human score) only for forms "
                "on a 0-1 scale: raw cosine and the min-max forms clipped to 0-1, the percentile / 100; "
                "the mean of other forms is in their own units. Top ties: pairs sharing the column's "
                "highest score.")
        return table, note

    def featured_columns(self) -> list[str]:
        """Score columns shown in readable tables: every form (and geometry) of the featured metric."""
        if self.kind == "matrix":
            return list(self.matrices)
        columns = [c for c in self.result.frame.columns
                   if (split_score_column(c) or ("",))[0] == self.metric]
        if self.kind == "search":
            columns += [c for c in self.result.frame.columns if c == f"{self.metric}_local_minmax"]
        return columns

    def results_table(self) -> tuple[pd.DataFrame, str]:
        """The table of readable reports (full-precision numbers) and a note on what it holds."""
        if self.kind == "matrix":
            return self._top_document_pairs()
        frame = self.result.frame
        if self.kind == "search":
            table = frame[["query", "rank", "document"] + self.featured_columns()]
            note = (f"Each query's top {self.provenance['search']['top_k']} documents, best first; "
                    "query and document ids are in the CSV, XLSX and JSON exports.")
        else:
            inputs = [c for c in frame.columns if split_score_column(c) is None]
            table = frame[inputs + self.featured_columns()]
            note = (f"Every input column and every {self.metric} score; the other metrics are in the "
                    "CSV, XLSX and JSON exports.")
        if len(table) > MAX_READABLE_ROWS:
            note += f" The first {MAX_READABLE_ROWS:,} of {len(table):,} rows are shown."
            table = table.head(MAX_READABLE_ROWS)
        return table, note

    def _top_document_pairs(self) -> tuple[pd.DataFrame, str]:
        import pandas as pd

        matrices, ids = self.matrices, self.result.ids
        key = self.form if self.form in matrices else "raw"
        sim = METRICS[self.metric].as_similarity(matrices["raw"]) if key == "raw" else matrices[key]
        i, j = np.triu_indices(len(ids), k=1)
        order = np.argsort(-sim[i, j], kind="stable")[:TOP_DOCUMENT_PAIRS]
        rows = {"document_a": [ids[k] for k in i[order]], "document_b": [ids[k] for k in j[order]]}
        for form, matrix in matrices.items():
            rows[f"{self.metric}_{form}"] = matrix[i[order], j[order]].astype(float)
        note = (f"The {len(order)} most similar of {len(i):,} document pairs by {self.metric} {key}; "
                "the full matrix is in the CSV, XLSX and JSON exports.")
        return pd.DataFrame(rows), note

    def how_to_read(self) -> list[tuple[str, str]]:
        """(form, plain-language reading) for raw and every calibrated form in the report."""
        if self.kind == "matrix":
            forms = list(self.matrices)
        else:
            forms = [(split_score_column(c) or (None, "local_minmax"))[1] for c in self.featured_columns()]
        return [(form, how_to_read(form, self.profile, self.provenance, self.metric, self.kind))
                for form in dict.fromkeys(forms)]

    def notes(self) -> list[str]:
        return list(self.result.notes)

    def reproduce(self) -> list[str]:
        return reproduce_commands(self)

    def reproduce_note(self) -> str:
        """What the Reproduce commands need, in words."""
        ladder = ""
        if self.custom_anchors:
            name = self.anchors_file.name if self.anchors_file else "the report's anchors file"
            ladder = f" This report's anchor ladder is {name}, written beside it."
        if self.path is None:
            where = "Paths are absolute: run the commands anywhere."
        else:
            where = ("Run the commands in the folder holding this report: paths are relative to it "
                     "(absolute for files outside the folders it shares with them).")
        return (f"{where}{ladder} Check each file against its sha256 under Provenance and use the same "
                "calibsim version and model fingerprint; these commands re-create every number in "
                "this report:")

    def profile_summary(self, name: str) -> str:
        """The references in use, in words: built in, a profile file, or a background built in the
        session (and rebuilt by the Reproduce commands); with edited anchors if so."""
        edited = " + edited anchors" if self.custom_anchors else ""
        name = name.removesuffix(" + edited anchors")
        if self.sources.profile_file:
            return f"{name}{edited} (profile file {self.sources.profile_file})"
        background = self.profile.provenance.get("background") or {}
        if name.startswith("built-in") or not background:
            return f"{name}{edited}"
        files = ", ".join(f.get("name", "?") for f in background.get("files", []))
        build = next((c for c in self.reproduce() if c.startswith("calibsim profile build")), "")
        out = build.rsplit("--out ", 1)[-1] if build else "a profile file"
        return (f"{name}{edited}: built from {files or 'a background corpus'}, not saved to a file; "
                f"the Reproduce commands build it again as {out}")

    def human_summary(self) -> str:
        """The human calibration in use, in words ("" without one)."""
        parts = []
        for entry in self.provenance_of_result.get("human") or []:
            record = self._human_record(entry)
            text = (f"{entry['metric']}_human" + ("" if entry.get("geometry", "none") == "none"
                                                  else f"@{entry['geometry']}")
                    + f", fitted on {entry.get('pairs', '?'):,} labelled pairs"
                    + (f" of {record['training_file']}" if record.get("training_file") else "")
                    + f" scored {entry['scale'][0]:g}-{entry['scale'][1]:g}")
            mae = (record.get("cross_validated") or {}).get("mae")
            if mae is not None:
                text += f"; cross-validated error (split by sentence) {mae:.3f} on the 0-1 scale"
            if self.sources.human_file:
                text += f"; file {self.sources.human_file}"
            parts.append(text)
        return "; ".join(parts)

    def anchors_summary(self) -> str:
        """The ladder in use, in words: built-in or not, levels, pair count."""
        import pandas as pd

        anchors = self.profile.anchors
        counts = pd.Series([p.level for p in anchors.pairs]).value_counts()
        levels = "; ".join(f"{lv.label} → {lv.target:g} ({int(counts.get(lv.name, 0))})"
                           for lv in anchors.levels)
        if not self.custom_anchors:
            return f"{anchors.name}, built in ({len(anchors.pairs)} pairs in {len(anchors.levels)} levels)"
        where = f"; saved as {self.anchors_file.name}" if self.anchors_file else ""
        return (f"{anchors.name}, edited — not the built-in ladder: {len(anchors.pairs)} pairs in "
                f"{len(anchors.levels)} levels (level → target (pairs): {levels}){where}")

    def provenance_rows(self) -> list[tuple[str, str]]:
        """(label, value) rows for the provenance appendix: every file by role, with its full name,
        how the Reproduce commands name it, and its sha256."""
        columns = (self.profile.provenance.get("background") or {}).get("text_columns") or {}
        rows = []
        for f in self.files:
            label = FILE_ROLES.get(f["role"], f["role"].capitalize())
            named = command_path(f["path"], self.path) if Path(f["path"]).is_absolute() else f["path"]
            column = columns.get(f["name"]) if f["role"] == "background" else None
            rows.append((f"{label} ({f['name']})",
                         f"{f['path']}" + (f" (Reproduce: {named})" if named != f["path"] else "")
                         + f"  sha256 {f.get('sha256') or 'not on disk'}"
                         + (f", text column {column!r}" if column else "")
                         + (", HTML cleaned" if f.get("clean_html") else "")))
        rows.append(("Model fingerprint", str(self.provenance["model"]["digest"])))
        scale = self.profile.provenance.get("scale") or {}
        if scale.get("sentences_sha256"):
            rows.append(("Reference sentences sha256", str(scale["sentences_sha256"])))
        return rows

    def geometries(self) -> list[str]:
        """Geometry fixes the result was scored under ("none" = the model's own embeddings)."""
        if self.kind == "matrix":
            return [getattr(self.result, "geometry", "none")]
        if self.kind == "search":
            return [self.provenance["search"]["geometry"]]
        found = {parts[2] for parts in map(split_score_column, self.result.frame.columns) if parts}
        return [g for g in self.profile.geometry_names() if g in found]

    def calibrators(self) -> dict:
        """Every fitted calibrator's parameters (JSON-able), keyed ``metric`` or ``metric@geometry``."""
        out = {}
        for geometry in self.geometries():
            references = self.profile.references(geometry)
            for metric in self.metrics:
                if metric in references:
                    key = metric if geometry == "none" else f"{metric}@{geometry}"
                    out[key] = {form: cal.to_dict() for form, cal in references[metric].calibrators.items()}
        return out

    @functools.cached_property
    def space(self):
        """Diagnostics of the reference's background sample, raw and under each geometry fix
        (a `SpaceReport`), or None when the reference has no background sample."""
        if self.profile.query_reference is None or len(self.profile.query_reference) < 3:
            return None
        return cached_profile_space(self.profile)

    def space_table(self) -> pd.DataFrame | None:
        """The diagnostics as a readable table: one row per measure, one column per geometry."""
        import pandas as pd

        if self.space is None:
            return None
        names = list(self.space.diagnostics)
        rows = [{"measure": label, **{GEOMETRIES[n].label: values[n] for n in names}}
                for label, values in diagnostics_table(self.space)]
        return pd.DataFrame(rows)

    @functools.cached_property
    def figures(self) -> list:
        """The report's figures (drawn on first use: CSV, XLSX and JSON never need them)."""
        return report_figures(self)


def build_report(result, profile, *, metric: str | None = None, form: str = "calibrated",
                 sources: RunSources | None = None) -> Report:
    """A `Report` of `result` (ScoredPairs, DocumentMatrix or SearchHits) with the `profile` it used.

    `metric` and `form` choose what readable tables and figures feature (default: the first
    metric of the result and the anchor-ladder calibration); `sources` names the profile file,
    human calibration and input columns the result was made with.
    """
    metrics = _result_metrics(result)
    metric = metric if metric in metrics else metrics[0]
    available = set(profile.metrics[metric].calibrators if metric in profile.metrics else ())
    if isinstance(result, DocumentMatrix):       # a matrix holds the forms it was scored with (csls)
        available |= set(result.matrices) - {"raw"}
    form = form if form in available else "calibrated"
    return Report(result, profile, metric, form, sources or RunSources())


def _score_form(column: str) -> str | None:
    if column.endswith("_local_minmax"):
        return "local_minmax"
    parts = split_score_column(column.removesuffix(" (median)"))
    return parts[1] if parts else None


def format_number(value, form: str | None) -> str:
    """A number as people read it: decimals by form, percentiles as percentages."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return str(value)
    value = float(value)
    if form is None:
        return f"{value:g}" if value != int(value) or abs(value) >= 1e15 else f"{int(value)}"
    spec = {"bg_percentile": ".1f", "bg_zscore": "+.2f", "query_zscore": "+.2f", "raw": ".4f"}.get(form, ".3f")
    text = f"{value:{spec}}"
    if float(text) == 0:                    # float noise (-1e-09) reads 0, with no sign
        text = f"{0.0:{spec.lstrip('+')}}"
    return text + (" %" if form == "bg_percentile" else "")


PLAIN_DECIMALS = 4        # at most, for a number column that is not a score (an input's labels)


def _plain_numbers(values: pd.Series) -> list[str]:
    """A number column that is not a score (e.g. an input's labels, 2.5 and 1.714) at one
    precision: the fewest decimals that show every value exactly, when at most `PLAIN_DECIMALS`
    do; other columns (computed values such as 0.1 + 0.2) keep `format_number`'s."""
    numbers = values.to_numpy(dtype=float)
    finite = numbers[np.isfinite(numbers)]
    if not np.array_equal(np.round(finite, PLAIN_DECIMALS), finite) or (np.abs(finite) >= 1e15).any():
        return [format_number(v, None) for v in values]
    decimals = max((len(f"{v:.{PLAIN_DECIMALS}f}".rstrip("0").split(".")[1]) for v in finite), default=0)
    return [f"{v:.{decimals}f}" if np.isfinite(v) else format_number(v, None) for v in numbers]


def readable(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with every value formatted for reading (see `format_number`); a number column that
    is not a score (also one read as text, such as an input's labels) shows all its values with
    the same decimals."""
    import pandas as pd

    numbers = numbers_as_numbers(frame)
    out = {}
    for column in frame.columns:
        form, values = _score_form(str(column)), numbers[column]
        plain = (form is None and pd.api.types.is_numeric_dtype(values)
                 and not pd.api.types.is_bool_dtype(values))
        out[column] = (_plain_numbers(values) if plain
                       else [format_number(v, form) for v in frame[column]])
    return pd.DataFrame(out, index=frame.index)
