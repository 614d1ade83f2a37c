"""What the commands share when they run: progress, messages, the model and its references,
memory and output checks, and writing results."""

from __future__ import annotations

import sys
from pathlib import Path

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.output import (
    REPORT_FORMATS,
    TABLE_SUFFIXES,
    check_output_path,
    figure_paths,
    sidecar_path,
)
from calibsim_gui.core.progress import ProgressBar as Progress  # noqa: F401 (the commands' bar)


def say(args, text: str = "") -> None:
    """Print `text` on stderr unless --quiet."""
    if not args.quiet:
        print(text, file=sys.stderr)


def load_model(args):
    """The model of --model (or --vectors), loaded as --device, --engine, --precision and the prompts ask."""
    from calibsim_gui.core.analysis.run_setup import check_cache_folders, open_model
    from calibsim_gui.core.embedding.devices import embedder_engine

    vectors = getattr(args, "vectors", None) or ()
    engine = {"local": "auto", "ray": "auto"}.get(args.engine, args.engine)
    if vectors:
        say(args, f"reading vectors from {', '.join(map(str, vectors))} ...")
    else:
        from calibsim_gui.core.embedding.model_folders import resolve_model

        check_cache_folders(cache=not getattr(args, "no_cache", False), onnx=engine != "torch")
        info = resolve_model(args.model)
        say(args, f"loading model {info.name} ({info.source}) ...")
    embedder = open_model(args.model, vectors=vectors, device=args.device, engine=engine,
                          precision=args.precision, allow_pickle=args.allow_pickle,
                          prompt_name=getattr(args, "prompt_name", None),
                          query_prompt=getattr(args, "query_prompt", None),
                          doc_prompt=getattr(args, "doc_prompt", None),
                          no_prompt=getattr(args, "no_prompt", False),
                          trust_folder_graph=getattr(args, "trust_folder_graph", False),
                          memory_budget=args.memory_budget)
    if vectors:
        say(args, f"model {embedder.fingerprint.id}: {len(embedder.texts):,} texts of "
                  f"{embedder.dimension} dimensions")
        return embedder
    say(args, f"model {embedder.fingerprint.id} on {embedder.device}"
              + (" (picked by --device auto)" if args.device == "auto" else "")
              + f" with the {embedder_engine(embedder)} engine"
              + (" (picked by --engine auto)" if engine == "auto" else "")
              + f" in {embedder.precision_note}"
              + ("" if not embedder.prompts.symmetric else f", prompt {embedder.prompts.describe()}"))
    return embedder


def short(text, width: int = 70) -> str:
    """`text` on one line, cut to `width` characters with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def check_input_memory(args, inputs, *, pairs: int = 0) -> None:
    """Refuse inputs (and `pairs` background pairs) over the memory budget from the files' sizes
    alone, before any file is read or a model loaded."""
    from calibsim_gui.core.io.inputs import check_read_budget, input_files

    dim = 0
    if pairs and not getattr(args, "vectors", None):
        from calibsim_gui.core.embedding.model_folders import resolve_model

        dim = resolve_model(args.model).dimension or 0
    check_read_budget(input_files(inputs), args.memory_budget, pairs=pairs, dim=dim)


def embedding_cache(args):
    """The embedding cache, or None with --no-cache or --vectors (their vectors are read already)."""
    if args.no_cache or getattr(args, "vectors", None):
        return None
    from calibsim_gui.core.embedding.cache import EmbeddingCache

    return EmbeddingCache()


def reference_profile(args, embedder, cache):
    """The reference of --profile (default: the built-in one), refitted on --anchors if given, as
    the session model chooses it for `embedder` (`SessionModel.use_references`); a --geometry fix
    it cannot apply is refused (`SessionModel.check_geometry`)."""
    from calibsim_gui.session.model import SessionModel

    session = SessionModel()
    session.set_model(embedder)
    anchors = getattr(args, "anchors", None) if getattr(args, "command", None) != "profile" else None
    profile = session.use_references(args.profile, anchors=anchors or None, cache=cache, batch_size=args.batch_size)
    session.check_geometry(getattr(args, "geometry", None) or ())
    return profile


def model_and_references(args):
    """The model, the embedding cache and the reference profile a scoring command runs with."""
    embedder = load_model(args)
    cache = embedding_cache(args)
    return embedder, cache, reference_profile(args, embedder, cache)


def score_table(args, table, *, human=(), norms: bool = False, interval: bool = False):
    """Load the model and its reference and score `table` as `calibsim score` does.

    Returns
    -------
    (ScoredPairs, ReferenceProfile)
    """
    from calibsim_gui.core.analysis.pairs import Scorer
    from calibsim_gui.session.model import scoring_geometries

    embedder, cache, profile = model_and_references(args)
    geometry = scoring_geometries(args.geometry, human)     # a human calibration's fix too, as the app
    progress = Progress(args.quiet)
    try:
        scorer = Scorer(embedder, profile, metrics=args.metrics, geometry=geometry,
                        human=human, norms=norms, interval=interval, cache=cache,
                        batch_size=args.batch_size,
                        memory_budget=args.memory_budget,
                        long_texts=getattr(args, "long_texts", "truncate"),
                        chunk_aggregate=getattr(args, "chunk_aggregate", "match"),
                        chunk_overlap=getattr(args, "chunk_overlap", 32))
        scored = scorer.score(table, progress=progress)
    finally:
        progress.close()
    return scored, scorer.profile_        # with the language ends the run measured


def check_output(args, path, inputs=(), *, formats=REPORT_FORMATS, beside=()) -> Path:
    """Refuse, before any input is read or a model loaded, an output `path` that could only fail
    once written: one that would replace an input (the --model folder included), an unknown
    format, an existing file without --force, a missing or read-only folder, or a folder where the
    file, its table side-car or a file written `beside` it goes. Returns the path."""
    path = Path(path)
    sidecar = [sidecar_path(path)] if path.suffix.lower() in TABLE_SUFFIXES else []
    if path.parent.exists() and not path.parent.is_dir():
        raise InputError(f"{path.parent} is a file, not a folder.", path=path,
                         fix="choose an output name in a folder")
    for target in (path, *sidecar, *map(Path, beside)):
        if target.is_dir():
            raise InputError("a folder has that name, and calibsim writes a file there: it never replaces "
                             "a folder.", path=target,
                             fix="choose another output name, or a file inside that folder")
    vectors = getattr(args, "vectors", None) or []
    return check_output_path(path, inputs=[*inputs, *model_folders(args), *vectors], force=args.force,
                             formats=formats)


def check_outputs(args, inputs, *, stdout: bool = False) -> None:
    """`check_output` for --out and every file a report writes beside it: with --figures each
    figure, and the anchor ladder an HTML, PDF, XLSX or JSON report writes for anchors other than
    the built-in ones (--anchors, or a --profile's). --figures without an output file is refused;
    `stdout`: the command prints a table for ``--out -``."""
    if not args.out or (stdout and args.out == "-"):
        if args.figures:
            raise InputError("--figures saves PNG and SVG files beside the --out file, and this run "
                             "writes no file" + (" (--out - prints a table)." if args.out == "-" else "."),
                             fix="add --out FILE (e.g. --out scores.html), or leave out --figures")
        return
    beside = []
    ladder = getattr(args, "anchors", None) or getattr(args, "profile", None)
    if ladder and Path(args.out).suffix.lower() in (".html", ".pdf", ".xlsx", ".json"):
        from calibsim_gui.core.reports.reproduce import anchors_path

        beside.append(anchors_path(args.out))
    check_output(args, args.out, inputs, beside=beside)
    for figure in figure_paths(args.out) if args.figures else ():
        check_output(args, figure, inputs, formats=None)


def model_folders(args) -> list[str]:
    """The model folders of --model (one per --model where repeated); a built-in or cached model's
    name is no folder."""
    models = getattr(args, "models", None) or [getattr(args, "model", None)]
    return [m for m in models if m and Path(m).is_dir()]


def run_sources(args, **fields):
    """The `reports.reproduce.RunSources` of this run: --profile and the --model folder, which a
    report's Reproduce commands name (as the app's reports do), and `fields`."""
    from calibsim_gui.core.reports.reproduce import RunSources

    return RunSources(profile_file=getattr(args, "profile", None), model=next(iter(model_folders(args)), None),
                      vectors=tuple(getattr(args, "vectors", None) or ()), **fields)


def write_outputs(args, result, profile, *, inputs, metric=None, form="calibrated", sources=None) -> int:
    """Write --out (format by extension) and, with --figures, the figures beside it; `sources`
    (`reports.reproduce.RunSources`) names the files the result was made with (default:
    `run_sources`)."""
    from calibsim_gui.core.reports import build_report, write_report_files

    sources = sources or run_sources(args)
    report = build_report(result, profile, metric=metric, form=form, sources=sources)
    written, *figures = write_report_files(report, args.out, figures=args.figures, force=args.force,
                                           inputs=inputs, keep_formulas=args.keep_formulas)
    extra = f" and {sidecar_path(written)}" if written.suffix.lower() in TABLE_SUFFIXES else ""
    print(f"wrote {written}{extra}")
    for path in figures:
        print(f"wrote {path}")
    return 0
