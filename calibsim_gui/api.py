"""calibsim's Python API (``import calibsim``): pandas in, pandas out, the command line's tables.

A `Session` holds a model (or vectors files), its embedding cache and its reference profile, so a
notebook pays the imports and the model load once and then calls `Session.score`,
`Session.search`, `Session.neighbours`, `Session.build_profile`, `Session.evaluate`, `Session.fit_human` and
`Session.threshold` as often as it likes. The module functions of the same names use a session
kept per model (`session`). Every call composes the core functions the command line composes
(`core.analysis.run_setup` opens the model; the session model, `session.SessionModel`, chooses
its references as the command line's and the app's do), so all give the same tables.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from calibsim_gui.core.analysis.evaluation import evaluate as evaluate_scores
from calibsim_gui.core.analysis.human_fit import fit_human_pairs
from calibsim_gui.core.analysis.neighbours import DEFAULT_DUPLICATE_THRESHOLD, MAX_PAIRS, document_neighbours
from calibsim_gui.core.analysis.pairs import ScoredPairs, score_pairs
from calibsim_gui.core.analysis.run_setup import check_cache_folders, open_model
from calibsim_gui.core.analysis.search import search as search_corpus
from calibsim_gui.core.analysis.thresholds import same_meaning, score_thresholds
from calibsim_gui.core.calibration.human import HumanCalibrator, HumanFit, human_pairs
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import build_profile as build_reference
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.embedding.cache import EmbeddingCache
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.inputs import DocumentSet, PairTable, document_set, load_documents, load_pairs, pair_table
from calibsim_gui.core.progress import ProgressBar
from calibsim_gui.core.provenance import file_digest
from calibsim_gui.core.references.anchors import AnchorSet, load_anchors
from calibsim_gui.core.references.texts import texts_to_embed as all_texts_to_embed
from calibsim_gui.session import references
from calibsim_gui.session.model import SessionModel, check_geometries, scoring_geometries

if TYPE_CHECKING:
    import pandas as pd

FRAME_NAME = "<DataFrame>"
"""How a DataFrame is named in errors and provenance, where a file would be."""


def _is_path(value) -> bool:
    return isinstance(value, (str, Path))


def _string_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` as the all-string table a file is read into ("" for missing values)."""
    out = frame.reset_index(drop=True)
    out.columns = [str(c) for c in out.columns]
    return out.astype(object).where(out.notna(), "").astype(str)


def _with_originals(scored: ScoredPairs, original) -> pd.DataFrame:
    """The scored table with the caller's own input columns (their dtypes) and the run's
    provenance and notes in ``frame.attrs``."""
    frame = scored.frame                        # the run's own table: changed in place, not copied
    if original is not None:
        for given, column in zip(original.columns, frame.columns[:len(original.columns)]):
            frame[column] = original[given].to_numpy()
    frame.attrs.update(provenance=scored.provenance, notes=list(scored.notes))
    return frame


def _pair_table(pairs, text_a, text_b, label=None, *, memory_budget=None) -> tuple[PairTable, pd.DataFrame | None]:
    """The `PairTable` of a pairs file (read as the CLI reads it) or DataFrame, and the DataFrame."""
    if _is_path(pairs):
        return load_pairs(pairs, text_a=text_a, text_b=text_b, label=label, memory_budget=memory_budget), None
    return pair_table(_string_frame(pairs), FRAME_NAME, text_a=text_a, text_b=text_b, label=label), pairs


def _documents(texts, *, column: str | None = None, name: str = "<texts>") -> DocumentSet:
    """A `DocumentSet` of texts in memory (a list of str, a Series, a DataFrame's `column` or only
    column) or of files and folders (a str or Path, or a list of Paths)."""
    if _is_path(texts) or (isinstance(texts, (list, tuple)) and texts and all(isinstance(t, Path) for t in texts)):
        return load_documents(texts, column=column)
    if hasattr(texts, "columns"):
        texts = texts[column] if column is not None else texts.iloc[:, 0]
    ids = list(texts.index) if hasattr(texts, "index") and not isinstance(texts, (list, tuple)) else None
    return document_set(list(texts), ids, name=name)


class Session:
    """A model, its embedding cache and its reference profile, opened once and used for many calls.

    Parameters
    ----------
    model : str or embedder, optional
        The built-in model (None), a sentence-transformers folder, a model in the Hugging Face
        cache, or an already loaded embedder (any object with the engines' interface).
    vectors : path or sequence of paths, optional
        Vectors from any model instead of `model`: ``.npz`` files of the arrays ``texts`` and
        ``vectors``, or ``.npy`` files beside a texts file of the same name (see
        ``calibsim reference-texts`` and docs/api.md).
    profile : path or ReferenceProfile, optional
        The reference profile (default: the built-in reference for the model), opened on first use.
    anchors : path or AnchorSet, optional
        An anchor ladder to calibrate with instead of the profile's (its background is kept).
    device, engine, precision, allow_pickle : str, str, str, bool
        How the model runs (see ``calibsim score --help``).
    cache : bool, default True
        Keep embeddings in calibsim's embedding cache (never for vectors files).
    batch_size : int, optional
        Texts per model call (default: `calibsim_gui.core.embedding.encoding.default_batch_size`,
        64 on a CPU, 256 on a GPU).
    memory_budget : int, optional
        Bytes a run may hold (default: half the physical memory); larger runs are refused up front.
    progress : bool, default True
        Show progress bars (`tqdm.auto`: widgets in a notebook).

    Attributes
    ----------
    embedder : object
        The loaded model (``embedder.fingerprint.id`` names it).
    session_model : SessionModel
        The session's state and rules, as the app and the command line hold them.
    """

    def __init__(self, model=None, *, vectors=None, profile=None, anchors=None, device: str = "auto",
                 engine: str = "auto", precision: str = "float32", allow_pickle: bool = False,
                 cache: bool = True, batch_size: int | None = None, memory_budget: int | None = None,
                 progress: bool = True):
        loads = model is None or _is_path(model)
        if not vectors:                       # before the model loads, as the command line checks
            check_cache_folders(cache=cache, onnx=loads and engine != "torch")
        if not loads:
            if vectors:
                raise InputError("vectors files are a model of their own: give either vectors= or model=.",
                                 fix="leave out model= (or vectors=)")
            embedder = model
        else:
            embedder = open_model(model, vectors=vectors or (), device=device, engine=engine,
                                  precision=precision, allow_pickle=allow_pickle, memory_budget=memory_budget)
        self.session_model = SessionModel()
        self.session_model.set_model(embedder)
        self.cache = EmbeddingCache() if cache and not vectors else None
        self.batch_size, self.memory_budget, self.progress = batch_size, memory_budget, progress
        self._profile_source, self._anchors = profile, anchors

    @property
    def embedder(self):
        return self.session_model.embedder

    def __repr__(self) -> str:
        return f"Session(model={self.embedder.fingerprint.id!r})"

    @property
    def profile(self) -> ReferenceProfile:
        """The reference profile in use, opened (or, for a model without a built-in one, measured
        on the built-in anchors) on first use."""
        if self.session_model.profile is None:
            self.session_model.use_references(self._profile_source, anchors=self._anchors, cache=self.cache,
                                      batch_size=self.batch_size)
        return self.session_model.profile

    @profile.setter
    def profile(self, profile) -> None:
        self._profile_source, self._anchors = profile, None
        self.session_model.set_profile(None, "")

    def _reference(self, profile, anchors, geometry=()) -> ReferenceProfile:
        """The session's references, or this call's (`profile`, `anchors`); a `geometry` fix they
        cannot apply is refused (InputError), as the app and the command line refuse it."""
        if profile is None and anchors is None:
            chosen = self.profile
            self.session_model.check_geometry(geometry)
            return chosen
        chosen = references.chosen(self.embedder, self.profile if profile is None else profile, anchors=anchors,
                                   cache=self.cache, batch_size=self.batch_size)
        check_geometries(chosen, geometry, source="the references given to this call")
        return chosen

    def _run(self, function, *args, desc: str = "encoding", **kwargs):
        bar = ProgressBar(quiet=not self.progress, desc=desc)
        try:
            return function(*args, progress=bar, cache=self.cache, batch_size=self.batch_size,
                            memory_budget=self.memory_budget, **kwargs)
        finally:
            bar.close()

    def _pairs(self, pairs, text_a, text_b, label) -> tuple[PairTable, pd.DataFrame | None]:
        return _pair_table(pairs, text_a, text_b, label, memory_budget=self.memory_budget)

    def _scored(self, table: PairTable, *, profile=None, anchors=None, metrics=None, geometry=(), human=None,
                **options) -> ScoredPairs:
        human = [] if human is None else [human] if not isinstance(human, (list, tuple)) else list(human)
        calibrators = [HumanFit.load(h).calibrator if _is_path(h) else h.calibrator if isinstance(h, HumanFit)
                       else h for h in human]
        geometries = scoring_geometries(geometry, calibrators)
        return self._run(score_pairs, table, self.embedder, self._reference(profile, anchors, geometries),
                         desc="scoring", metrics=metrics, geometry=geometries, human=calibrators,
                         **options)

    def score(self, pairs, *, text_a: str | None = None, text_b: str | None = None, label: str | None = None,
              metrics: Sequence[str] | None = None, geometry: str | Sequence[str] = (),
              human: HumanFit | HumanCalibrator | str | Path | None = None, norms: bool = False,
              interval: bool = False, long_texts: str = "truncate", chunk_aggregate: str = "match",
              chunk_overlap: int = 32, profile=None, anchors=None) -> pd.DataFrame:
        """Score text pairs, raw and calibrated: the table of ``calibsim score --out scores.csv``.

        Parameters
        ----------
        pairs : DataFrame or path
            One pair per row; the two text columns (and a human-score column) are found by name
            (sentence1/sentence2, text_a/text_b, ...) unless given. A path is read as the CLI reads it.
        text_a, text_b, label : str, optional
            The columns of the first text, the second text and people's scores.
        metrics : list of str, optional
            e.g. ``["cosine", "euclidean"]`` (default: every metric the profile has references for).
        geometry : str or list of str
            Geometry fixes to score under as well (center, whiten, abtt, soft): ``<metric>_<form>@<fix>``.
        human : HumanFit, HumanCalibrator or path, optional
            A human calibration (`fit_human`): adds ``<metric>_human`` (scoring under the geometry
            fix it was fitted under too, as the app and the command line do).
        norms, interval, long_texts, chunk_aggregate, chunk_overlap
            As ``calibsim score --norms --interval --long-texts ...``.
        profile, anchors : optional
            A profile or an anchor ladder for this call instead of the session's.

        Returns
        -------
        DataFrame
            The input columns, then ``<metric>_raw`` and each calibrated form; ``frame.attrs`` holds
            ``provenance`` (model, references, versions) and ``notes``.
        """
        table, original = self._pairs(pairs, text_a, text_b, label)
        return _with_originals(self._scored(table, profile=profile, anchors=anchors, metrics=metrics,
                                            geometry=geometry, human=human, norms=norms, interval=interval,
                                            long_texts=long_texts, chunk_aggregate=chunk_aggregate,
                                            chunk_overlap=chunk_overlap), original)

    def search(self, queries, corpus, *, top_k: int = 10, metric: str = "cosine", geometry: str = "none",
               column: str | None = None, profile=None) -> pd.DataFrame:
        """Rank the documents of `corpus` for each query, raw and calibrated: ``calibsim search``'s table.

        Parameters
        ----------
        queries, corpus : list of str, Series, DataFrame, or a path (str or Path) or list of Paths
            Texts in memory (a DataFrame's `column`, or its only column), or files and folders read
            as ``calibsim search`` reads them. Empty texts and exact duplicates are dropped; a
            Series' index gives the ids.
        top_k : int
            Hits kept per query.
        metric, geometry : str
        column : str, optional
            The text column of CSV/JSONL files or of a DataFrame.

        Returns
        -------
        DataFrame
            ``query_id, query, rank, doc_id, document, <metric>_raw``, the calibrated forms,
            ``<metric>_query_zscore`` and ``<metric>_local_minmax``; provenance in ``frame.attrs``.
        """
        hits = self._run(search_corpus, _documents(queries, column=column, name="<queries>"),
                         _documents(corpus, column=column, name="<corpus>"), self.embedder,
                         self._reference(profile, None, geometry), desc="searching", metric=metric, top_k=top_k,
                         geometry=geometry)
        hits.frame.attrs.update(provenance=hits.provenance, notes=list(hits.notes))
        return hits.frame

    def neighbours(self, documents, *, k: int = 10, metric: str = "cosine", geometry: str = "none",
                   duplicate_threshold: float | None = DEFAULT_DUPLICATE_THRESHOLD, max_pairs: int | None = MAX_PAIRS,
                   method: str = "auto", column: str | None = None, profile=None) -> dict[str, pd.DataFrame]:
        """Each document's `k` nearest documents, the most similar pairs and the duplicate groups of a
        set of any size, never an N x N matrix: ``calibsim neighbours``' three tables.

        Parameters
        ----------
        documents : list of str, Series, DataFrame, or a path (str or Path) or list of Paths
            As `search`'s corpus.
        k : int
            Neighbours kept per document.
        duplicate_threshold : float or None
            Calibrated score at and above which two texts join a duplicate group (None: no groups).
        max_pairs : int or None
            Most similar pairs kept (None: every pair of the neighbour graph).
        method : {"auto", "exact", "approximate"}

        Returns
        -------
        dict of str to DataFrame
            ``"neighbours"`` (``doc_id, document, rank, neighbour_id, neighbour`` and the score
            columns), ``"pairs"`` and ``"groups"`` (``group, size, doc_id, document``); each with the
            run's provenance and notes in ``frame.attrs``.
        """
        result = self._run(document_neighbours, _documents(documents, column=column, name="<documents>"),
                           self.embedder, self._reference(profile, None, geometry), desc="neighbours", k=k, metric=metric,
                           geometry=geometry, duplicate_threshold=duplicate_threshold, max_pairs=max_pairs,
                           method=method)
        tables = {"neighbours": result.neighbours, "pairs": result.pairs, "groups": result.groups}
        for frame in tables.values():
            frame.attrs.update(provenance=result.provenance, notes=list(result.notes))
        return tables

    def build_profile(self, background=None, *, anchors=None, n_pairs: int = 20_000, seed: int = 0,
                      metrics: Sequence[str] | None = None, column: str | None = None, name: str | None = None,
                      out: str | Path | None = None, use: bool = True) -> ReferenceProfile:
        """Measure a reference profile on a background corpus: ``calibsim profile build``.

        Parameters
        ----------
        background : list of str, Series, or a path (str or Path) or list of Paths, optional
            "Language in general" for this model; None builds an anchors-only profile.
        anchors : path or AnchorSet, optional
            The anchor ladder (default: the built-in STS ladder).
        n_pairs, seed : int
            Background pairs drawn, and the seed that draws them.
        metrics : list of str, optional
        column : str, optional
            The text column of CSV/JSONL background files.
        out : path, optional
            Also save the profile there (``.calibsim-profile``).
        use : bool, default True
            Make it the session's profile.

        Returns
        -------
        ReferenceProfile
        """
        docs = None if background is None else _documents(background, column=column, name="<background>")
        ladder = anchors if anchors is None or isinstance(anchors, AnchorSet) else load_anchors(anchors)
        settings = ProfileSettings(anchors=ladder, n_pairs=n_pairs, seed=seed, metrics=metrics,
                                   name=Path(out).name if out else name)
        profile = self._run(build_reference, self.embedder, docs, settings, desc="building")
        if out is not None:
            profile.save(out)
        if use:
            self._profile_source, self._anchors = profile, None
            self.session_model.use_references(profile, cache=self.cache, batch_size=self.batch_size)
        return profile

    def _labelled(self, pairs, scale, text_a, text_b, label):
        table, original = self._pairs(pairs, text_a, text_b, label)
        return human_pairs(table, scale=scale), original

    def evaluate(self, pairs, *, scale=(0.0, 5.0), label: str | None = None, text_a: str | None = None,
                 text_b: str | None = None, metrics: Sequence[str] | None = None,
                 geometry: str | Sequence[str] = (), human=None) -> pd.DataFrame:
        """Check every score form against people's scores: the table ``calibsim evaluate`` prints.

        Returns
        -------
        DataFrame
            One row per score column: MAE and bias against the 0-1 human scores, top ties,
            Spearman x100, mean, worst tenth; ``frame.attrs["evaluation"]`` holds the whole
            evaluation as ``calibsim evaluate --out FILE.json`` writes it (reliability per tenth,
            band coverage) and ``["provenance"]`` the run's.
        """
        labelled, _ = self._labelled(pairs, scale, text_a, text_b, label)
        scored = self._scored(labelled.table, metrics=metrics, geometry=geometry, human=human, interval=True)
        model = scored.provenance["model"]["id"]
        evaluation = evaluate_scores({model: scored}, scale=labelled.scale)
        frame = evaluation.forms[model].copy()
        frame.attrs.update(evaluation=evaluation.to_dict(), provenance=scored.provenance, notes=list(scored.notes))
        return frame

    def fit_human(self, pairs, *, scale=(0.0, 5.0), metric: str = "cosine", geometry: str = "none",
                  label: str | None = None, text_a: str | None = None, text_b: str | None = None,
                  out: str | Path | None = None) -> HumanFit:
        """Fit the monotone map from scores to people's scores: ``calibsim human fit``.

        Returns
        -------
        HumanFit
            ``.calibrator`` (pass the fit to `score` as ``human=``), ``.validation`` (cross-validated
            error and reliability); saved to `out` when given.
        """
        labelled, original = self._labelled(pairs, scale, text_a, text_b, label)
        if original is None:
            source = {"file": str(labelled.table.path), "sha256": file_digest(labelled.table.path)}
        else:
            digest = hashlib.sha256(labelled.table.frame.to_csv(index=False).encode("utf-8")).hexdigest()
            source = {"file": FRAME_NAME, "sha256": digest}
        fit = self._run(fit_human_pairs, labelled, self.embedder, self._reference(None, None, geometry),
                        desc="scoring", source=source,
                        metric=metric, geometry=geometry)
        if out is not None:
            fit.save(out)
        return fit

    def threshold(self, pairs, *, scale=(0.0, 5.0), same_at: float | None = None, metric: str = "cosine",
                  geometry: str = "none", criterion: str = "precision", target: float | None = 0.9,
                  label: str | None = None, text_a: str | None = None, text_b: str | None = None) -> pd.DataFrame:
        """The score above which labelled pairs mean the same, raw and calibrated: ``calibsim threshold``.

        Parameters
        ----------
        same_at : float, optional
            Labels at or above it count as the same meaning (default: 1 for 0/1 labels, else the
            upper fifth of `scale`).
        criterion : {"precision", "recall", "f1"}
            The most recall at a precision of `target`, the most precision at a recall of `target`,
            or the best F1.

        Returns
        -------
        DataFrame
            One row per form (raw, calibrated): column, threshold, rule, 95 % interval
            (``interval_lo``, ``interval_hi``), precision, recall, F1 and counts; the
            precision-recall curves are in ``frame.attrs["curves"]``.
        """
        import pandas as pd

        labelled, _ = self._labelled(pairs, scale, text_a, text_b, label)
        same, cut = same_meaning(labelled.human, scale=labelled.scale, same_at=same_at)
        scored = self._scored(labelled.table, metrics=[metric], geometry=[] if geometry == "none" else [geometry])
        found = score_thresholds(scored.frame, labelled.rows, same, metric, geometry, criterion=criterion,
                                 target=target)
        rows = {form: {"column": r["column"], "threshold": r["threshold"], "rule": r["rule"],
                       "interval_lo": r["interval"][0], "interval_hi": r["interval"][1],
                       **{k: r[k] for k in ("precision", "recall", "f1", "n_pairs", "n_same")}}
                for form, r in found.items()}
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame.attrs.update(curves={form: r["curve"] for form, r in found.items()}, same_at=cut,
                           provenance=scored.provenance)
        return frame


def texts_to_embed(pairs=None, documents=None, *, anchors=(), text_a: str | None = None,
                   text_b: str | None = None, column: str | None = None) -> list[str]:
    """Every text a profile needs vectors for, then the texts of `pairs` and `documents`, each once:
    embed them with any model and open a `Session` with ``vectors=`` (``calibsim reference-texts``).

    Parameters
    ----------
    pairs : DataFrame or path, optional
        Pairs to score (both texts of each).
    documents : list of str, Series, or a path (str or Path) or list of Paths, optional
        Texts to search, queries, or a background corpus.
    anchors : sequence of paths or AnchorSets
        Anchor ladders besides the built-in one.

    Returns
    -------
    list of str
    """
    tables = [] if pairs is None else [_pair_table(pairs, text_a, text_b)[0]]
    docs = [] if documents is None else [_documents(documents, column=column)]
    ladders = [a if isinstance(a, AnchorSet) else load_anchors(a) for a in anchors]
    return all_texts_to_embed(ladders, tables, docs)


@functools.lru_cache(maxsize=4)
def _kept_session(model, vectors: tuple, device: str, engine: str, precision: str) -> Session:
    return Session(model, vectors=list(vectors), device=device, engine=engine, precision=precision)


def session(model=None, *, vectors=None, device: str = "auto", engine: str = "auto",
            precision: str = "float32") -> Session:
    """The session of a model, loaded on the first call and kept for the next ones (up to 4 models).

    The module functions (`score`, `search`, ...) use it; a `Session` made directly is not kept.
    """
    vectors = (vectors,) if _is_path(vectors) else tuple(vectors or ())
    return _kept_session(model, tuple(str(v) for v in vectors), device, engine, precision)


def _model_options(options: dict) -> dict:
    return {k: options.pop(k) for k in ("vectors", "device", "engine", "precision") if k in options}


def score(pairs, *, model=None, profile=None, **options) -> pd.DataFrame:
    """`Session.score` with the kept session of `model` (or ``vectors=``); see `Session.score`."""
    return session(model, **_model_options(options)).score(pairs, profile=profile, **options)


def search(queries, corpus, *, model=None, profile=None, **options) -> pd.DataFrame:
    """`Session.search` with the kept session of `model` (or ``vectors=``)."""
    return session(model, **_model_options(options)).search(queries, corpus, profile=profile, **options)


def neighbours(documents, *, model=None, profile=None, **options) -> dict[str, pd.DataFrame]:
    """`Session.neighbours` with the kept session of `model` (or ``vectors=``)."""
    return session(model, **_model_options(options)).neighbours(documents, profile=profile, **options)


def build_profile(background=None, *, model=None, **options) -> ReferenceProfile:
    """`Session.build_profile` with the kept session of `model` (or ``vectors=``); the profile is
    returned (and saved with ``out=``), not made the kept session's."""
    return session(model, **_model_options(options)).build_profile(background, use=False, **options)


def evaluate(pairs, *, model=None, **options) -> pd.DataFrame:
    """`Session.evaluate` with the kept session of `model` (or ``vectors=``)."""
    return session(model, **_model_options(options)).evaluate(pairs, **options)


def fit_human(pairs, *, model=None, **options) -> HumanFit:
    """`Session.fit_human` with the kept session of `model` (or ``vectors=``)."""
    return session(model, **_model_options(options)).fit_human(pairs, **options)


def threshold(pairs, *, model=None, **options) -> pd.DataFrame:
    """`Session.threshold` with the kept session of `model` (or ``vectors=``)."""
    return session(model, **_model_options(options)).threshold(pairs, **options)
