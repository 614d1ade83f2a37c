"""`calibsim matrix`: score every document against every other."""

from __future__ import annotations

from pathlib import Path

from calibsim_gui.cli import common, options
from calibsim_gui.core.errors import InputError


def add_parser(sub) -> None:
    p = sub.add_parser("matrix", help="score every document against every other")
    p.add_argument("inputs", nargs="+", help="text files, folders or CSV/JSONL files")
    p.add_argument("--profile", help="reference profile (default: the built-in reference)")
    p.add_argument("--anchors", metavar="FILE",
                   help="anchor ladder (.json or .csv) to calibrate with instead of the profile's "
                        "(the reference's background is kept; as the app's edited anchors)")
    p.add_argument("--out", required=True,
                   help="output by extension: .html/.pdf report, .xlsx, .json, .csv/.tsv (square table)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    options.add_report_options(p)
    p.add_argument("--per-file", action="store_true", help="one document per file instead of per line")
    p.add_argument("--column", help="text column of CSV/JSONL inputs")
    p.add_argument("--encoding")
    p.add_argument("--metric", type=options.metric, default="cosine")
    p.add_argument("--form", default="calibrated",
                   help="calibrated form computed next to raw (the one a CSV holds); csls: cosine "
                        "corrected for hubness against the background (CSLS, K = 10); "
                        "local_minmax: each row's own min-max (not comparable across rows)")
    p.add_argument("--geometry", type=options.geometry, default="none", metavar="FIX",
                   help="score under a geometry fix of the reference (center, whiten, abtt, soft; "
                        "default none)")
    options.add_model_options(p)


def check_matrix_memory(args, n_docs: int, dim: int) -> None:
    """Refuse, before any text is encoded, a matrix over the memory budget, pointing to
    `calibsim neighbours`, which needs no N x N matrix."""
    from calibsim_gui.core.io.memory import check_budget, matrix_run_bytes

    check_budget(matrix_run_bytes(n_docs, dim, 2), args.memory_budget,
                 what=f"the {n_docs:,} x {n_docs:,} matrix",
                 fix="find each document's nearest documents, the near-duplicate pairs and the "
                     "duplicate groups with `calibsim neighbours` (no N x N matrix, any set size), "
                     "or score fewer documents at a time")


def run(args) -> int:
    from calibsim_gui.core.analysis.matrices import score_matrix
    from calibsim_gui.core.io.inputs import load_documents

    inputs = [*args.inputs, *[p for p in (args.profile, args.anchors) if p]]
    if args.form == "local_minmax" and Path(args.out).suffix.lower() not in (".csv", ".tsv", ".json"):
        raise InputError("the local_minmax form is written as a table (.csv, .tsv) or .json; the "
                         "reports show calibrated forms.", fix="end --out with .csv, .tsv or .json")
    common.check_outputs(args, inputs)
    docs = load_documents(args.inputs, per_file=args.per_file, column=args.column,
                          encoding=args.encoding, memory_budget=args.memory_budget)
    for note in docs.notes:
        common.say(args, f"documents: {note}")
    embedder, cache, profile = common.model_and_references(args)
    check_matrix_memory(args, len(docs.documents), embedder.dimension)
    progress = common.Progress(args.quiet)
    try:
        result = score_matrix(docs, embedder, profile, metric=args.metric, forms=(args.form,),
                              geometry=args.geometry, cache=cache, batch_size=args.batch_size,
                              progress=progress, memory_budget=args.memory_budget)
    finally:
        progress.close()
    common.say(args, f"{len(result.ids)} x {len(result.ids)} documents, {args.metric} raw and {args.form}")
    return common.write_outputs(args, result, profile, inputs=inputs, metric=args.metric, form=args.form)
