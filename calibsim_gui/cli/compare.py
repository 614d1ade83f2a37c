"""`calibsim compare`: the same pairs scored by two or more models, side by side."""

from __future__ import annotations

from pathlib import Path

from calibsim_gui.cli import common, options
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.output import write_scored_pairs
from calibsim_gui.core.references.anchors import load_anchors


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="score the same pairs with two or more models, side by side")
    p.add_argument("pairs", help="CSV, TSV or JSONL file of pairs")
    p.add_argument("--model", dest="models", action="append", required=True, metavar="MODEL",
                   help="a model (repeat: at least two; 'builtin' for the built-in one); each is "
                        "calibrated with its built-in reference, or the built-in anchors")
    p.add_argument("--anchors", metavar="FILE",
                   help="one anchor ladder (.json or .csv) for every model: each model encodes its "
                        "texts, so all models are calibrated against the same references")
    p.add_argument("--profile", dest="profiles", action="append", default=[], metavar="PROFILE",
                   help="a reference profile per --model, in the same order (repeat once per model; "
                        "'builtin' keeps that model's built-in reference)")
    p.add_argument("--metric", type=options.metric, default="cosine")
    p.add_argument("--out", help="side-by-side table (.csv) and <out>.provenance.json")
    p.add_argument("--force", action="store_true")
    options.add_keep_formulas(p)
    p.add_argument("--text-a")
    p.add_argument("--text-b")
    p.add_argument("--encoding")
    options.add_model_options(p, model=False)


def run(args) -> int:
    from calibsim_gui.core.analysis.comparison import compare_models
    from calibsim_gui.core.analysis.pairs import ScoredPairs, score_pairs
    from calibsim_gui.core.io.inputs import load_pairs

    profiles = [None if p in ("builtin", "") else p for p in args.profiles]
    if args.out:
        common.check_output(args, args.out, [args.pairs, *[p for p in profiles if p],
                                             *([args.anchors] if args.anchors else [])])
        if Path(args.out).suffix.lower() not in (".csv", ".tsv"):
            raise InputError("a comparison is written as a table.", path=args.out, fix="end --out with .csv")
    if len(args.models) < 2:
        raise InputError("a comparison needs at least two models.", fix="repeat --model, e.g. "
                                                                        "--model builtin --model ./other")
    if profiles and len(profiles) != len(args.models):
        raise InputError(f"{len(profiles)} --profile for {len(args.models)} --model.",
                         fix="give one --profile per --model, in the same order ('builtin' for a "
                             "model's built-in reference), or use --anchors FILE for one ladder for all")
    if args.anchors:
        args.anchors = load_anchors(args.anchors)     # read once; every model encodes its texts
    table = load_pairs(args.pairs, text_a=args.text_a, text_b=args.text_b, encoding=args.encoding,
                       memory_budget=args.memory_budget)
    cache = common.embedding_cache(args)
    results, ladders = {}, {}
    for i, spec in enumerate(args.models):
        args.model, args.profile = spec, profiles[i] if profiles else None
        embedder = common.load_model(args)
        profile = common.reference_profile(args, embedder, cache)
        ladders[embedder.fingerprint.id] = profile.anchors
        progress = common.Progress(args.quiet)
        try:
            results[embedder.fingerprint.id] = score_pairs(table, embedder, profile, metrics=[args.metric],
                                                           cache=cache, batch_size=args.batch_size,
                                                           progress=progress,
                                                           memory_budget=args.memory_budget)
        finally:
            progress.close()
    comparison = compare_models(results, metric=args.metric, ladders=ladders)
    print(f"mean absolute difference between models on {len(table.frame):,} pairs ({args.metric}):")
    for form, diff in comparison.differences.items():
        print(f"  {form:<14} {diff['mean_abs_diff']:.4f}  ({diff['unit']})")
    for note in comparison.notes:
        print(f"note: {note}")
    if args.out:
        provenance = {"models": {m: r.provenance for m, r in results.items()},
                      "differences": comparison.differences}
        write_scored_pairs(ScoredPairs(comparison.frame, provenance), args.out,
                           keep_formulas=args.keep_formulas)
        print(f"wrote {args.out}")
    return 0
