"""`calibsim evaluate`: every score form checked against labelled pairs, for one or more models."""

from __future__ import annotations

from calibsim_gui.cli import common, options
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.atomic import write_text_atomic
from calibsim_gui.core.io.output import dump_json
from calibsim_gui.core.provenance import file_digest


def add_parser(sub) -> None:
    p = sub.add_parser("evaluate", help="check every score form against labelled pairs, for one or "
                                        "more models")
    p.add_argument("pairs", nargs="+", help="CSV/TSV/JSONL files of pairs with a human score column "
                                            "(each file is evaluated on its own)")
    p.add_argument("--scale", type=options.scale, action="append", metavar="LOW,HIGH",
                   help="the scale the pairs were scored on: one per file in the files' order, or one "
                        "for all (default 0,5)")
    p.add_argument("--model", dest="models", action="append", metavar="MODEL",
                   help="a model, scored as `calibsim score` does (repeat to compare models; "
                        "default: the built-in one)")
    p.add_argument("--profile", help="reference profile (one model only; default: each model's "
                                     "built-in reference)")
    p.add_argument("--label-column", "--label", dest="label",
                   help="column of human scores (default: auto-detected, e.g. score or label)")
    p.add_argument("--text-a")
    p.add_argument("--text-b")
    p.add_argument("--encoding")
    p.add_argument("--metrics", type=options.metrics,
                   help="comma-separated metrics, e.g. cosine (default: every metric the profile has "
                        "references for)")
    p.add_argument("--geometry", action="append", type=options.geometry, default=[], metavar="FIX",
                   help="also evaluate the scores under a geometry fix (center, whiten, abtt, soft; repeatable)")
    p.add_argument("--human", metavar="FILE",
                   help="a human calibration (one model only), fitted on other pairs than these")
    p.add_argument("--out", help="also write the evaluation as .json, or as a self-contained .html "
                                 "report with a reliability diagram per file")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    options.add_model_options(p, model=False)


def run(args) -> int:
    from calibsim_gui.core.analysis.evaluation import evaluate
    from calibsim_gui.core.calibration.human import HumanFit, load_human_pairs

    scales = args.scale or [(0.0, 5.0)]
    if len(scales) not in (1, len(args.pairs)):
        raise InputError(f"{len(scales)} --scale for {len(args.pairs)} files.",
                         fix="give one --scale per file, in the files' order, or one for all")
    scales = scales * len(args.pairs) if len(scales) == 1 else scales
    if args.out:
        out = common.check_output(args, args.out, [*args.pairs, *(p for p in (args.profile, args.human) if p)],
                                  formats=(".json", ".html"))
    specs = args.models or [None]
    if len(specs) > 1 and (args.profile or args.human):
        raise InputError("--profile and --human belong to one model.",
                         fix="leave them out to evaluate several models, each with its built-in reference")
    common.check_input_memory(args, args.pairs)
    files = [load_human_pairs(path, scale=scale, text_a=args.text_a, text_b=args.text_b, label=args.label,
                              encoding=args.encoding, memory_budget=args.memory_budget)
             for path, scale in zip(args.pairs, scales)]
    human = [HumanFit.load(args.human).calibrator] if args.human else []
    print("MAE and bias against the 0-1 human scores (n/a: the form has no 0-1 scale); top ties: pairs "
          "sharing the highest score as shown (3 decimals); mean: on 0-1 where MAE is given, else in the "
          "form's units; worst tenth: the tenth of the 0-1 scale holding the least of people's "
          "share of pairs (the form's share / people's share; under 1/3 is a hole, and says so)")
    runs = []
    for pairs in files:
        results = {}
        for spec in specs:
            args.model = spec
            scored, _ = common.score_table(args, pairs.table, human=human, interval=True)
            model = scored.provenance["model"]["id"]
            if model in results:
                raise InputError(f"model {model} is given twice.", fix="give each --model once")
            results[model] = scored
        evaluation = evaluate(results, scale=pairs.scale)
        for note in dict.fromkeys(note for scored in results.values() for note in scored.notes):
            common.say(args, f"note: {note}")
        _print_evaluation(evaluation, results, pairs.table.path)
        runs.append((pairs.table.path, results, evaluation))
    if args.out:
        _write_evaluation(out, runs)
        print(f"wrote {out}")
    return 0


def _write_evaluation(out, runs) -> None:
    """Write the evaluation of every (file, results, evaluation) run as HTML or JSON."""
    from calibsim_gui.core.reports.evaluation_page import evaluation_html

    if out.suffix.lower() == ".html":
        references = {m: f"references: {s.provenance['references']['profile']}" for m, s in runs[0][1].items()}
        write_text_atomic(out, evaluation_html([(path.name, ev) for path, _, ev in runs], models=references))
        return
    # provenance shared by every file's run of a model is written once; the rest per file
    shared = {model: {k: v for k, v in scored.provenance.items()
                      if all(dump_json(r[model].provenance.get(k)) == dump_json(v) for _, r, _ in runs)}
              for model, scored in runs[0][1].items()}
    write_text_atomic(out, dump_json({
        "format": "calibsim-evaluation", "schema_version": 2,
        "files": [{"input": {"file": str(path), "sha256": file_digest(path)}, **ev.to_dict(),
                   "provenance": {m: {k: v for k, v in s.provenance.items() if k not in shared[m]}
                                  for m, s in results.items()}}
                  for path, results, ev in runs],
        "provenance": shared}))


def _print_evaluation(evaluation, results, path) -> None:
    from calibsim_gui.core.analysis.evaluation import BAND_LABELS
    from calibsim_gui.core.reports.evaluation_page import readable_forms

    low, high = evaluation.scale
    print(f"\n=== {path}: {evaluation.n_pairs:,} labelled pairs; human scores in '{evaluation.label}' on "
          f"{low:g}-{high:g}, rescaled to 0-1 (mean {evaluation.label_mean:.3f})")
    for model, frame in evaluation.forms.items():
        print(f"\nmodel {model}; references: {results[model].provenance['references']['profile']}")
        shown = readable_forms(frame)
        width = max(map(len, frame.index)) + 2
        print("  " + "column".ljust(width) + "".join(h.rjust(10) for h in shown.columns[:-1])
              + "  " + shown.columns[-1])
        for column, row in shown.iterrows():
            print("  " + column.ljust(width) + "".join(v.rjust(10) for v in row.iloc[:-1]) + "  " + row.iloc[-1])
        for column, bands in evaluation.coverage.get(model, {}).items():
            print(f"    {column} holds the human score in: " + "; ".join(
                f"{BAND_LABELS.get(band, band)} {n['coverage']:.1%} of pairs (mean width {n['mean_width']:.3f})"
                for band, n in bands.items()))
    if evaluation.differences:
        print("\nmean |difference| between models, forms on a 0-1 scale:")
        for column, diff in evaluation.differences.items():
            pairs = diff["by_pair"]
            detail = "" if len(pairs) == 1 else "  (" + ", ".join(f"{k} {v:.3f}" for k, v in pairs.items()) + ")"
            print(f"  {column:<30} {diff['mean_abs_diff']:.3f}{detail}")
