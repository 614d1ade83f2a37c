"""What a report says, independent of its file format: summary, tables, notes, how to read."""

from __future__ import annotations

import functools
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from calibsim_gui.core.analysis import DocumentMatrix, ScoredPairs, local_minmax_rows, split_score_column
from calibsim_gui.core.distributions import anchor_medians, calibrate_form
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.evaluation import evaluate
from calibsim_gui.core.metrics import METRICS
from calibsim_gui.core.profile import FORM_DESCRIPTIONS
from calibsim_gui.core.provenance import file_digest
from calibsim_gui.core.search import SearchHits

MAX_READABLE_ROWS = 5000        # HTML/PDF tables; every row is in CSV/XLSX/JSON
TOP_DOCUMENT_PAIRS = 50
BUILTIN_PROFILE_PREFIX = "built-in"


def _interval_width(provenance: dict, metric: str) -> str:
    """The typical width of the calibrated scores' reference uncertainty, as a sentence ("" if unknown)."""
    width = provenance.get("calibrated_interval", {}).get("per_metric", {}).get(metric, {})
    if width.get("median_width") is None:
        return ""
    median, p90 = (f"{w:.3f}" if w >= 0.0005 else "below 0.001" for w in (width["median_width"],
                                                                          width["p90_width"]))
    return (f" Its reference uncertainty (95 %, the reference sentences resampled) is typically {median} "
            f"wide (90 % of the pairs: {p90} or less); it says how well the scale's ends are measured, "
            "not how people would rate the pair.")


def _agreement_band(profile, metric: str) -> str:
    """Where people's scores fall around a calibrated score, as a sentence ("" without a band)."""
    band = profile.metrics[metric].band if metric in profile.metrics else None
    if band is None:
        return (" No human agreement band: this reference was not checked against labelled pairs "
                "(`calibsim profile build --band-pairs FILE` measures one).")
    rate = band.rates[0]
    examples = "; ".join(f"at {c:.2f}, between {lo[0]:.2f} and {hi[0]:.2f}"
                         for c in (0.25, 0.5, 0.75) for lo, hi in [band.band([c], rate)])
    files = ", ".join(f["name"] for f in band.source_.get("files", [])) or band.source_.get("name", "labelled pairs")
    return (f" Human agreement band: people would rate such a pair within a range holding {rate:.0%} of "
            f"their scores ({examples}), measured on {band.n_pairs_:,} labelled pairs ({files}) with "
            f"{band.model_}.").replace("%", " %")


SEARCH_READINGS = {
    "query_zscore": "How many standard deviations this document's score lies above the query's mean "
                    "score against the reference's background texts (query side only). It says how "
                    "unusual the hit is for this query, whatever the model's global scale, and is "
                    "comparable between queries.",
    "local_minmax": "0 = this query's least similar document in this corpus, 1 = its most similar. "
                    "Caveat: it is local to one query and one corpus; the top hit always reads 1, even "
                    "when nothing in the corpus is related, so it is NOT comparable across queries or "
                    "corpora. Use calibrated or query_zscore to judge whether a hit is good.",
}


MATRIX_LOCAL_READING = (
    "LOCAL min-max, per document: 0 = this document's least similar other document in this set, "
    "1 = its most similar (the document itself is left out of both ends). Caveat: it is local to one "
    "document and one set: the best match always reads 1, even when nothing in the set is related, "
    "so it is NOT comparable across documents, sets or reports, and the matrix is not symmetric "
    "(in the top-pairs table it is document_a's scale). Use calibrated or bg_percentile to judge "
    "whether a pair is similar.")


def _how_to_read(form: str, profile, provenance: dict, metric: str, kind: str = "pairs") -> str:
    """Plain-language reading of one form, with its caveats and this report's numbers."""
    if kind == "search" and form in SEARCH_READINGS:
        return SEARCH_READINGS[form]
    if kind == "matrix" and form == "local_minmax":
        return MATRIX_LOCAL_READING
    n_bg = profile.background_pairs
    levels = len(profile.anchors.levels)
    text = {
        "raw": f"The model's own {metric} score. Its scale belongs to this model: the same pair can "
               "score 0.9 with one model and 0.3 with another, so a raw number alone does not say "
               "whether a pair is similar. Read it against the anchor levels and the background in this report.",
        "calibrated": "Similarity on people's 0-1 scale: where the pair lies on the straight line from a "
                      "typical pair of unrelated sentences (measured on the model, in the pair's language "
                      "where calibsim has reference sentences in it) to identical text, less the "
                      f"{profile.metrics[metric].calibrators['calibrated'].shift:.3f} by which people rate "
                      "below that line, fading out so that identical text stays 1 (see the calibrated map; the anchor ladder's "
                      f"{levels} levels check it)."
                      f"{_interval_width(provenance, metric)}{_agreement_band(profile, metric)} Caveat: "
                      "annotators differ (STS-B's rate the same pairs lower than SICK-R's), so read it "
                      "as the typical person's score, within its band.",
        "anchor_minmax": "0 at the median score of the lowest anchor level, 1 at the highest; values "
                         "outside 0-1 lie beyond the anchors. Caveat: only two anchor levels set the scale.",
        "bg_minmax": f"0 at the least similar of the {n_bg:,} random background pairs, 1 at the most "
                     "similar. Caveat: the extremes of a random sample move when the background changes.",
        "bg_zscore": "How many standard deviations a score lies above the mean random background pair. "
                     "Caveat: background scores are not normally distributed, so a z-score of 3 is not "
                     "a 0.1 % tail probability; use the percentile or surprise for that.",
        "bg_surprise": "-log10 of the probability that a random background pair scores at least this "
                       "high: 2 means 1 in 100, 3 means 1 in 1,000. Beyond the sample the upper tail is "
                       "fitted (generalised Pareto), so very high scores keep their order. Caveat: values "
                       f"above log10({n_bg:,}) = {np.log10(max(n_bg, 1)):.1f} come from the fitted tail.",
        "query_zscore": "A local scale: the pair's score compared with each text's own scores against "
                        "1,000 background texts (mean of the two z-scores). It says how unusual the "
                        "second text is for the first, whatever the model's global scale.",
        "human": "Expected human similarity on a 0-1 scale: a monotone (isotonic) map fitted to pairs "
                 "that people scored. Caveat: it carries the judges' scale and the kind of text they "
                 "judged; its cross-validated error is in the provenance.",
        "csls": "Cosine corrected for hubness (CSLS): twice the cosine minus each text's mean cosine to "
                "its 10 nearest background texts, so texts that are close to everything ('hubs') do "
                "not look similar to everything.",
    }.get(form)
    if form == "bg_percentile":
        sat = provenance.get("background_saturation", {}).get(metric, {})
        halfwidth = sat.get("percentile_halfwidth",
                            getattr(profile.metrics[metric].calibrators.get("bg_percentile"),
                                    "halfwidth_", float("nan")))
        text = (f"The percent of the {n_bg:,} random background pairs that score lower (ties count "
                f"half). Caveat: its resolution is limited by the background size: every percentile is "
                f"uncertain by ±{halfwidth:.2f} points (95 %), and above the 99th percentile it cannot "
                "separate pairs well.")
        if "share_beyond_p99" in sat:
            text += (f" Here {sat['share_beyond_p99']:.1%} of the pairs score above the background's "
                     "99th percentile; rank those with calibrated or bg_surprise.")
    return text or FORM_DESCRIPTIONS.get(form, form)


def is_builtin_ladder(anchors) -> bool:
    """True when `anchors` holds exactly the built-in ladder's levels and pairs (whatever its name)."""
    from calibsim_gui.core.anchors import builtin_anchors

    def content(ladder):
        d = ladder.to_dict()
        return d["levels"], d["pairs"]

    return content(anchors) == content(builtin_anchors())


def anchors_path(report_path) -> Path:
    """Where a report's anchor ladder is written: ``<report stem>-anchors.json`` beside it."""
    report_path = Path(report_path)
    return report_path.with_name(f"{report_path.stem}-anchors.json")


def _reproduce(result, profile, input_name: str, metrics: list[str],
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
    anchors_file: Path | None = None
    """Where the report's anchor ladder was written (set by `write_report` for a ladder other
    than the built-in one); the Reproduce commands name it."""

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
    def provenance(self) -> dict:
        return self.result.provenance

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

    @functools.cached_property
    def input_digests(self) -> dict[str, str]:
        """sha256 of every input file still on disk (what a reader checks to reproduce)."""
        return {str(f): file_digest(f) for f in self.input_files if f.is_file()}

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
        profile_name = str(refs["profile"])
        if self.custom_anchors and "edited anchors" not in profile_name:
            profile_name += " + edited anchors"
        rows.append(("Reference profile", profile_name))
        rows.append(("Anchors", self.anchors_summary()))
        if profile.has_background:
            files = ", ".join(f["name"] for f in bg.get("files", []))
            columns = bg.get("text_columns") or {}
            rows.append(("Background (reference corpus, not your input)",
                         f"{profile.background_pairs:,} random pairs of "
                         f"{bg.get('sentences', '?'):,} sentences, seed {bg.get('seed', '?')}"
                         + (f", from {bg['corpus']}" if bg.get("corpus") else "")
                         + (f", files {files}" if files else "")
                         + ("; text column " + ", ".join(f"{c!r} ({f})" for f, c in columns.items())
                            if columns else "")))
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
        rows.append(("Metrics", ", ".join(self.metrics)))
        rows.append(("Versions", ", ".join(f"{k} {v}" for k, v in prov["versions"].items())))
        return rows

    def anchors_table(self) -> pd.DataFrame:
        """Anchor levels with their target, pair count and median score (raw and calibrated)."""
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
        `calibsim evaluate`, see `calibsim_gui.core.evaluation`) and a note on how to read them;
        None when the input has no usable labels."""
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
        return [(form, _how_to_read(form, self.profile, self.provenance, self.metric, self.kind))
                for form in dict.fromkeys(forms)]

    def notes(self) -> list[str]:
        return list(self.result.notes)

    def reproduce(self) -> list[str]:
        name = self.input_files[0].name if self.input_files else "input"
        return _reproduce(self.result, self.profile, name, self.metrics, self.anchors_file, self.form)

    def reproduce_note(self) -> str:
        """What the Reproduce commands need, in words."""
        files = "the input files"
        if self.custom_anchors:
            ladder = self.anchors_file.name if self.anchors_file else "the report's anchors file"
            files += f" and {ladder} (this report's anchor ladder, written beside it)"
        return (f"Run in a folder holding {files} (check their sha256 under Provenance), with "
                "the same calibsim version and model fingerprint; these commands re-create every "
                "number in this report:")

    def anchors_summary(self) -> str:
        """The ladder in use, in words: built-in or not, levels, pair count."""
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
        """(label, value) rows for the provenance appendix: every file's full name and sha256."""
        rows = [(f"Input file ({Path(f).name})", f"{f}  sha256 {d}") for f, d in self.input_digests.items()]
        bg = self.profile.provenance.get("background") or {}
        columns = bg.get("text_columns") or {}
        for f in bg.get("files", []):
            column = columns.get(f["name"])
            rows.append((f"Background file ({f['name']})",
                         f"sha256 {f.get('sha256', '?')}" + (f", text column {column!r}" if column else "")))
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
        from calibsim_gui.core.space import profile_space

        if self.profile.query_reference is None or len(self.profile.query_reference) < 3:
            return None
        return profile_space(self.profile)

    def space_table(self) -> pd.DataFrame | None:
        """The diagnostics as a readable table: one row per measure, one column per geometry."""
        from calibsim_gui.core.geometry import GEOMETRIES
        from calibsim_gui.core.space import diagnostics_table

        if self.space is None:
            return None
        names = list(self.space.diagnostics)
        rows = [{"measure": label, **{GEOMETRIES[n].label: values[n] for n in names}}
                for label, values in diagnostics_table(self.space)]
        return pd.DataFrame(rows)

    @functools.cached_property
    def figures(self) -> list:
        """The report's figures (drawn on first use: CSV, XLSX and JSON never need them)."""
        from calibsim_gui.core.reports.figures import report_figures

        return report_figures(self)


def build_report(result, profile, *, metric: str | None = None, form: str = "calibrated") -> Report:
    """A `Report` of `result` (ScoredPairs, DocumentMatrix or SearchHits) with the `profile` it used.

    `metric` and `form` choose what readable tables and figures feature (default: the first
    metric of the result and the anchor-ladder calibration).
    """
    metrics = _result_metrics(result)
    metric = metric if metric in metrics else metrics[0]
    available = set(profile.metrics[metric].calibrators if metric in profile.metrics else ())
    if isinstance(result, DocumentMatrix):       # a matrix holds the forms it was scored with (csls)
        available |= set(result.matrices) - {"raw"}
    form = form if form in available else "calibrated"
    return Report(result, profile, metric, form)


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
    if form == "bg_percentile":
        return f"{value:.1f} %"
    if form in ("bg_zscore", "query_zscore"):
        return f"{value:+.2f}"
    if form == "raw":
        return f"{value:.4f}"
    if form is not None:
        return f"{value:.3f}"
    return f"{value:g}" if value != int(value) or abs(value) >= 1e15 else f"{int(value)}"


def readable(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with every value formatted for reading (see `format_number`)."""
    return pd.DataFrame({column: [format_number(v, _score_form(str(column))) for v in frame[column]]
                         for column in frame.columns}, index=frame.index)
