"""`calibsim human fit`: a monotone map from scores to human judgements."""

from __future__ import annotations

from pathlib import Path

from calibsim_gui.cli import common, options


def add_parser(sub) -> None:
    p = sub.add_parser("human", help="fit a monotone map from scores to human judgements")
    hsub = p.add_subparsers(dest="human_command", metavar="ACTION", required=True)
    h = hsub.add_parser("fit", help="fit on labelled pairs (e.g. score,sentence1,sentence2)")
    h.add_argument("pairs", help="CSV/TSV/JSONL of pairs with a human score column")
    h.add_argument("--scale", type=options.scale, default="0,5",
                   help="the scale the pairs were scored on (default 0,5)")
    h.add_argument("--metric", type=options.metric, default="cosine")
    h.add_argument("--geometry", type=options.geometry, default="none", help="geometry fix the scores are taken under")
    h.add_argument("--profile", help="reference profile (default: the built-in reference)")
    h.add_argument("--text-a")
    h.add_argument("--text-b")
    h.add_argument("--label", help="column of human scores (default: auto-detected)")
    h.add_argument("--encoding")
    h.add_argument("--out", required=True, help="file to write (.calibsim-human)")
    h.add_argument("--force", action="store_true")
    options.add_model_options(h)


def run(args) -> int:
    from calibsim_gui.core.analysis.human_fit import fit_human_calibration
    from calibsim_gui.core.calibration.human import HUMAN_SUFFIX

    out = Path(args.out if Path(args.out).suffix else args.out + HUMAN_SUFFIX)
    common.check_output(args, out, [p for p in (args.pairs, args.profile) if p], formats=None)
    scale = args.scale
    common.check_input_memory(args, [args.pairs])
    embedder, cache, profile = common.model_and_references(args)
    progress = common.Progress(args.quiet)
    try:
        fit = fit_human_calibration(args.pairs, embedder, profile, scale=scale, metric=args.metric,
                                    geometry=args.geometry, cache=cache, batch_size=args.batch_size,
                                    progress=progress, text_a=args.text_a, text_b=args.text_b,
                                    label=args.label, encoding=args.encoding,
                                    memory_budget=args.memory_budget)
    finally:
        progress.close()
    fit.save(out)
    v = fit.validation
    print(f"fitted {args.metric} (geometry {args.geometry}) -> expected human similarity on "
          f"{fit.source['pairs']:,} pairs; scale {scale[0]:g}-{scale[1]:g} maps to 0-1")
    print(f"cross-validated ({v['n_splits']} folds, {v['split']}): mean absolute error "
          f"{v['mae']:.3f}, RMSE {v['rmse']:.3f} on the 0-1 scale")
    rel = v["reliability"]
    print("reliability (predicted -> observed, pairs):")
    for pred, obs, count in zip(rel["mean_predicted"], rel["mean_observed"], rel["count"]):
        print(f"  {pred:.2f} -> {obs:.2f}  ({count})")
    for warning in fit.calibrator.warnings_:
        print(f"warning: {warning}")
    print(f"wrote {out}; use it with `calibsim score PAIRS --human {out}`")
    return 0
