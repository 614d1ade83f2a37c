"""`calibsim threshold`: the score above which labelled pairs mean the same, raw and calibrated."""

from __future__ import annotations

from calibsim_gui.cli import common, options
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.atomic import write_text_atomic
from calibsim_gui.core.io.output import dump_json
from calibsim_gui.core.provenance import file_digest


def add_parser(sub) -> None:
    p = sub.add_parser("threshold", help="find the score above which labelled pairs mean the same, "
                                         "raw and calibrated")
    p.add_argument("pairs", help="CSV/TSV/JSONL of pairs with a human score or 0/1 label column")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--target-precision", type=options.fraction, metavar="P",
                        help="the lowest threshold whose precision reaches P (default 0.9): the most "
                             "recall at that precision")
    target.add_argument("--target-recall", type=options.fraction, metavar="R",
                        help="the highest threshold whose recall reaches R")
    target.add_argument("--best-f1", action="store_true", help="the threshold of the best F1")
    p.add_argument("--same-at", type=float, metavar="S",
                   help="labels >= S count as the same meaning (default: 1 for a 0/1 label column, "
                        "else the upper fifth of --scale: 4 on 0-5)")
    p.add_argument("--scale", type=options.scale, default="0,5",
                   help="the scale the pairs were labelled on (default 0,5)")
    p.add_argument("--metric", type=options.metric, default="cosine")
    p.add_argument("--geometry", type=options.geometry, default="none", metavar="FIX",
                   help="find the thresholds under a geometry fix (center, whiten, abtt, soft)")
    p.add_argument("--profile", help="reference profile (default: the built-in reference)")
    p.add_argument("--label", help="column of human scores or 0/1 labels (default: auto-detected)")
    p.add_argument("--text-a")
    p.add_argument("--text-b")
    p.add_argument("--encoding")
    p.add_argument("--out", help="also write the thresholds and precision-recall curves as .json")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    options.add_model_options(p)


def run(args) -> int:
    from calibsim_gui.core.analysis.thresholds import same_meaning, score_thresholds
    from calibsim_gui.core.calibration.human import load_human_pairs

    if args.out:
        out = common.check_output(args, args.out, [p for p in (args.pairs, args.profile) if p])
        if out.suffix.lower() != ".json":
            raise InputError("thresholds are written as JSON.", path=out, fix="end --out with .json")
    criterion, target = (("recall", args.target_recall) if args.target_recall else
                         ("f1", None) if args.best_f1 else ("precision", args.target_precision or 0.9))
    common.check_input_memory(args, [args.pairs])
    pairs = load_human_pairs(args.pairs, scale=args.scale, text_a=args.text_a, text_b=args.text_b,
                             label=args.label, encoding=args.encoding, memory_budget=args.memory_budget)
    same, same_at = same_meaning(pairs.human, scale=pairs.scale, same_at=args.same_at)
    args.metrics, args.geometry = [args.metric], [] if args.geometry == "none" else [args.geometry]
    scored, _ = common.score_table(args, pairs.table)
    results = score_thresholds(scored.frame, pairs.rows, same, args.metric,
                               args.geometry[0] if args.geometry else "none", criterion=criterion, target=target)
    label = pairs.table.label
    print(f"{len(same):,} labelled pairs; '{label}' >= {same_at:g} counts as the same meaning "
          f"({int(same.sum()):,} pairs, {same.mean():.1%})")
    goal = ("the best F1" if criterion == "f1" else
            f"the most {'recall' if criterion == 'precision' else 'precision'} at a {criterion} of at "
            f"least {target:.0%}")
    print(f"threshold chosen for {goal}; interval: 95% bootstrap (pairs resampled)")
    _print_thresholds(results)
    cal = results["calibrated"]
    print(f"\nOn the calibrated scale the threshold is {cal['threshold']:.3f} (0 = a typical unrelated "
          "pair, 1 = identical text): it carries across models, since each model's own calibration "
          f"maps its raw scores to that scale; the raw threshold {results['raw']['threshold']:.4f} "
          f"belongs to {scored.provenance['model']['id']} alone.")
    for note in scored.notes:
        common.say(args, f"note: {note}")
    if args.out:
        write_text_atomic(out, dump_json({
            "format": "calibsim-threshold", "schema_version": 1,
            "input": {"file": str(pairs.table.path), "sha256": file_digest(pairs.table.path),
                      "label": label, "scale": list(pairs.scale), "same_at": same_at,
                      "pairs": len(same), "same": int(same.sum())},
            "metric": args.metric, "geometry": args.geometry[0] if args.geometry else "none",
            "criterion": criterion, "target": target, "thresholds": results,
            "provenance": scored.provenance}))
        print(f"wrote {out}")
    return 0


def _print_thresholds(results: dict) -> None:
    """One row per score column: threshold, interval, precision, recall, F1."""
    print("  " + "column".ljust(28) + "threshold".rjust(11) + "95% interval".rjust(20)
          + "precision".rjust(11) + "recall".rjust(8) + "F1".rjust(7))
    for r in results.values():
        low, high = r["interval"]
        op = "<=" if r["rule"].startswith("distance") else ">="
        print("  " + r["column"].ljust(28) + f"{op} {r['threshold']:.4f}".rjust(11)
              + f"{low:.4f} - {high:.4f}".rjust(20) + f"{r['precision']:.3f}".rjust(11)
              + f"{r['recall']:.3f}".rjust(8) + f"{r['f1']:.3f}".rjust(7))
        if r["unreachable"]:
            print(f"  note: {r['unreachable']} of {r['n_boot']} resamples could not reach the target")
