"""`calibsim neighbours`: each document's nearest documents, the most similar pairs of a set
(near-duplicates) and its duplicate groups, for sets of any size (no N x N matrix)."""

from __future__ import annotations

from pathlib import Path

from calibsim_gui.cli import common, options
from calibsim_gui.core.errors import InputError

OUTPUTS = (("out", "neighbours"), ("pairs_out", "pairs"), ("groups_out", "groups"))


def add_parser(sub) -> None:
    p = sub.add_parser("neighbours", help="each document's nearest documents, near-duplicate pairs "
                                          "and duplicate groups of a set of any size")
    p.add_argument("inputs", nargs="+", help="text files (one document per line), folders or CSV/JSONL files")
    p.add_argument("--k", type=options.whole_number(1, 1000), default=10, metavar="K",
                   help="neighbours kept per document, 1 to 1,000 (default 10)")
    p.add_argument("--duplicates-above", type=options.fraction, default=0.9, metavar="SCORE",
                   help="calibrated score at and above which two texts are duplicates and join a "
                        "group (default 0.9)")
    p.add_argument("--max-pairs", type=options.whole_number(1, 100_000_000), default=10_000, metavar="N",
                   help="most similar pairs kept in --pairs-out (default 10,000)")
    p.add_argument("--method", default="auto", choices=["auto", "exact", "approximate"],
                   help="exact: every score of the set, in blocks; approximate: a graph index "
                        "(faiss HNSW; cosine, angular, dot, euclidean), its recall measured in "
                        "benchmarks/README.md; auto (default): exact up to about 45,000 documents")
    p.add_argument("--out", help="each document's neighbours: .csv/.tsv table, .json or .xlsx "
                                 "(.json and .xlsx also hold the pairs and groups)")
    p.add_argument("--pairs-out", metavar="FILE",
                   help="the most similar pairs across the set, most similar first (.csv, .tsv, .json, .xlsx)")
    p.add_argument("--groups-out", metavar="FILE",
                   help="duplicate groups, a row per member (.csv, .tsv, .json, .xlsx)")
    p.add_argument("--force", action="store_true", help="replace existing output files")
    options.add_keep_formulas(p)
    p.add_argument("--profile", help="reference profile (default: the built-in reference)")
    p.add_argument("--anchors", metavar="FILE",
                   help="anchor ladder (.json or .csv) to calibrate with instead of the profile's")
    p.add_argument("--per-file", action="store_true", help="one document per file instead of per line")
    p.add_argument("--column", help="text column of CSV/JSONL inputs")
    p.add_argument("--encoding", help="text encoding of the inputs (default: UTF-8/UTF-16 with BOM)")
    p.add_argument("--metric", type=options.metric, default="cosine")
    p.add_argument("--geometry", type=options.geometry, default="none", metavar="FIX",
                   help="under a geometry fix of the reference (center, whiten, abtt, soft; default none)")
    options.add_model_options(p)


def check_neighbour_outputs(args, inputs) -> list[tuple[Path, tuple[str, ...]]]:
    """Each output file with the tables it holds, refused (before anything is read) where it
    could only fail: an input, an existing file without --force, an unknown format, twice named."""
    from calibsim_gui.core.reports.neighbour_tables import NEIGHBOUR_FORMATS, TABLES

    planned = []
    for option, table in OUTPUTS:
        value = getattr(args, option)
        if value:
            path = common.check_output(args, value, inputs, formats=NEIGHBOUR_FORMATS)
            whole = option == "out" and path.suffix.lower() in (".json", ".xlsx")
            planned.append((path, TABLES if whole else (table,)))
    paths = [path.resolve() for path, _ in planned]
    if len(set(paths)) < len(paths):
        raise InputError("two outputs have the same name.", fix="give --out, --pairs-out and "
                                                                "--groups-out different names")
    return planned


def run(args) -> int:
    from calibsim_gui.core.analysis.neighbours import document_neighbours
    from calibsim_gui.core.io.inputs import load_documents
    from calibsim_gui.core.reports.neighbour_tables import write_neighbour_tables

    inputs = [*args.inputs, *[p for p in (args.profile, args.anchors) if p]]
    planned = check_neighbour_outputs(args, inputs)
    common.check_input_memory(args, args.inputs)
    docs = load_documents(args.inputs, per_file=args.per_file, column=args.column,
                          encoding=args.encoding, memory_budget=args.memory_budget)
    for note in docs.notes:
        common.say(args, f"documents: {note}")
    embedder, cache, profile = common.model_and_references(args)
    progress = common.Progress(args.quiet)
    try:
        result = document_neighbours(docs, embedder, profile, k=args.k, metric=args.metric,
                                     geometry=args.geometry, duplicate_threshold=args.duplicates_above,
                                     max_pairs=args.max_pairs, cache=cache, batch_size=args.batch_size,
                                     progress=progress, memory_budget=args.memory_budget,
                                     method=args.method)
    finally:
        progress.close()
    if not args.quiet:
        print_summary(result)
    for path, tables in planned:
        written = write_neighbour_tables(result, path, tables=tables, force=args.force, inputs=inputs,
                                         keep_formulas=args.keep_formulas)
        print(f"wrote {written}")
    if not planned:
        print("(add --out FILE.csv, --pairs-out or --groups-out to save the tables)")
    return 0


def print_summary(result, *, pairs: int = 5) -> None:
    """How the neighbours were found, the most similar pairs and the duplicate groups."""
    run = result.provenance["neighbours"]
    metric = result.metric
    print(f"{len(result.ids):,} documents, {run['k']} nearest each by {metric} ({run['method']}"
          + (f", HNSW, {run['search_candidates']} candidates" if run["method"] == "approximate" else "")
          + ")")
    print(f"most similar of {run['graph_pairs']:,} neighbour pairs:")
    calibrated = next(c for c in result.pairs.columns if c.startswith(f"{metric}_calibrated"))
    for _, row in result.pairs.head(pairs).iterrows():
        print(f"  calibrated {row[calibrated]:.3f}  {common.short(row['document'], 40)}  |  {common.short(row['neighbour'], 40)}")
    if run["duplicate_threshold"] is not None:
        print(f"{run['duplicate_groups']:,} duplicate groups ({run['duplicate_texts']:,} texts) at "
              f"{run['duplicate_column']} >= {run['duplicate_threshold']:g}")
