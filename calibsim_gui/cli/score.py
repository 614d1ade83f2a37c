"""`calibsim score`: score a list of text pairs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from calibsim_gui.cli import common, options
from calibsim_gui.core.io.csv_writer import write_csv
from calibsim_gui.core.io.output import TABLE_SUFFIXES, protect_formulas


def add_parser(sub) -> None:
    p = sub.add_parser("score", help="score a list of text pairs")
    p.add_argument("pairs", help="CSV, TSV or JSONL file of pairs")
    p.add_argument("--profile", help="reference profile (default: the built-in reference)")
    p.add_argument("--anchors", metavar="FILE",
                   help="anchor ladder (.json or .csv) to calibrate with instead of the profile's "
                        "(the reference's background is kept; as the app's edited anchors)")
    p.add_argument("--out", help="output by extension: .html/.pdf report, .xlsx, .json, .csv/.tsv table "
                                 "('-' for CSV on stdout)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    options.add_report_options(p)
    p.add_argument("--text-a", help="column of the first text (default: auto-detected)")
    p.add_argument("--text-b", help="column of the second text (default: auto-detected)")
    p.add_argument("--label", help="column of human scores, to report agreement")
    p.add_argument("--encoding", help="text encoding of the input (default: UTF-8/UTF-16 with BOM)")
    p.add_argument("--metrics", type=options.metrics,
                   help="comma-separated metrics, e.g. cosine,euclidean (default: every metric the "
                        "profile has references for)")
    p.add_argument("--geometry", action="append", type=options.geometry, default=[], metavar="FIX",
                   help="also score under a geometry fix fitted on the background: center, whiten, "
                        "abtt or soft (repeatable; adds <metric>_<form>@FIX columns)")
    p.add_argument("--norms", action="store_true",
                   help="add each text's vector length (<text column>_norm) next to dot products, for "
                        "models that do not normalise their embeddings")
    p.add_argument("--interval", action="store_true",
                   help="add <metric>_calibrated_lo and _hi, the reference uncertainty (95%%: the "
                        "reference sentences resampled), and where the profile has a human agreement "
                        "band <metric>_calibrated_band80_lo/_hi and _band95_lo/_hi: where 80%% and 95%% "
                        "of people's scores fall for pairs with that calibrated score")
    p.add_argument("--human", metavar="FILE",
                   help="a human calibration (from `calibsim human fit`): adds <metric>_human, the "
                        "expected human similarity on a 0-1 scale (and scores under the geometry fix it "
                        "was fitted under, as the app does)")
    g = p.add_argument_group("long texts (past the model's max length, e.g. 256 tokens)")
    g.add_argument("--long-texts", choices=["truncate", "chunk"], default="truncate",
                   help="truncate (default): score their beginning and mark the pair in a 'truncated' "
                        "column; chunk: split them into overlapping windows, encode every chunk and "
                        "score the pair over its chunk pairs")
    g.add_argument("--chunk-aggregate", choices=["match", "max", "mean"], default="match",
                   help="with --long-texts chunk, how a pair scores from its chunk pairs: match (the "
                        "default) averages each chunk's best match in the other text, both ways "
                        "(identical texts score as identical, a changed passage lowers the score); "
                        "max takes the most similar chunk pair (one shared passage is enough); mean "
                        "averages all chunk pairs. Calibration is applied to that score")
    g.add_argument("--chunk-overlap", type=options.whole_number(0, 10_000), default=32, metavar="N",
                   help="with --long-texts chunk: tokens shared by neighbouring chunks (default 32)")
    options.add_model_options(p)


def run(args) -> int:
    from calibsim_gui.core.io.inputs import load_pairs
    from calibsim_gui.core.io.light_tables import light_pair_table

    inputs = [p for p in (args.pairs, args.profile, args.human, args.anchors) if p]
    common.check_outputs(args, inputs, stdout=True)
    reading = dict(text_a=args.text_a, text_b=args.text_b, label=args.label, encoding=args.encoding,
                   memory_budget=args.memory_budget)
    # a small plain CSV/TSV scored to a table (or the screen) is read and written without pandas
    light = not args.figures and (not args.out or args.out == "-" or Path(args.out).suffix.lower() in TABLE_SUFFIXES)
    table = (light and light_pair_table(args.pairs, **reading)) or load_pairs(args.pairs, **reading)
    fit = None
    if args.human:
        from calibsim_gui.core.calibration.human import HumanFit

        fit = HumanFit.load(args.human)
    scored, profile = common.score_table(args, table, human=[fit.calibrator] if fit else [], norms=args.norms,
                                         interval=args.interval)
    if args.out == "-":
        frame = scored.frame if args.keep_formulas else protect_formulas(scored.frame)[0]
        write_csv(frame, sys.stdout, sep=",", lineterminator=os.linesep, index=False, float_format="%.10g")
        return 0
    if not args.quiet:
        _print_score_summary(scored)
    if not args.out:
        print("(add --out FILE.csv, .xlsx, .json, .html or .pdf to save the scores)")
        return 0
    sources = common.run_sources(args, human_file=args.human, human=fit, encoding=args.encoding,
                                 columns={"text_a": table.text_a, "text_b": table.text_b, "label": table.label})
    return common.write_outputs(args, scored, profile, inputs=inputs, metric=(args.metrics or [None])[0],
                                sources=sources)


def _print_score_summary(scored) -> None:
    prov = scored.provenance
    print(f"scored {prov['pairs']['scored']} of {prov['pairs']['rows']} pairs with "
          f"{prov['model']['id']} on {prov['model']['device']} in {prov['model']['precision']}; references: "
          f"{prov['references']['profile']} ({prov['references']['background_pairs']} background pairs)")
    agreement = prov.get("agreement")
    if agreement:
        print(f"agreement with human scores in '{agreement['label']}' (Spearman x100):")
        table: dict[str, dict[str, float]] = {}
        for column, rho in agreement["spearman_x100"].items():
            metric, _, form = column.partition("_")
            table.setdefault(metric, {})[form] = rho
        forms = list(dict.fromkeys(f for row in table.values() for f in row))
        print("  " + "metric".ljust(10) + "".join(f.rjust(15) for f in forms))
        for metric, row in table.items():
            print("  " + metric.ljust(10) + "".join(
                (f"{row[f]:.2f}" if f in row else "-").rjust(15) for f in forms))
    for metric, widths in prov["calibrated_interval"]["per_metric"].items():
        if widths["median_width"] is not None:
            print(f"{metric}_calibrated: reference uncertainty (95%) typically {widths['median_width']:.3f} "
                  f"wide (90% of pairs under {widths['p90_width']:.3f}; --interval adds it and, where the "
                  "profile has one, the human agreement band per pair)")
    for metric, sat in prov.get("background_saturation", {}).items():
        print(f"{metric}: {sat['share_beyond_p99']:.1%} of pairs above the background's 99th "
              f"percentile; percentiles are +/-{sat['percentile_halfwidth']:.2f} points (95%)")
    for note in scored.notes:
        print(f"note: {note}")
