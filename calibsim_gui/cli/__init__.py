"""calibsim's command line. With no sub-command it opens the desktop app.

Sub-commands are headless and never import Qt.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

from calibsim_gui import __version__
from calibsim_gui.core.errors import CalibsimError, InputError


_ENGINE_HELP = ("auto (default): ONNX Runtime on the CPU, torch on a GPU or for bfloat16; torch; onnx "
                "(CPU only, equal to torch float32 within 1e-5, needs no torch once its graph exists)")


def _add_model_options(p: argparse.ArgumentParser, *, model: bool = True, engine: bool = True) -> None:
    g = p.add_argument_group("model")
    if model:
        g.add_argument("--model", default=None,
                       help="built-in (default), a local sentence-transformers folder, or a model in "
                            "the Hugging Face cache (see `calibsim models`)")
    g.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"])
    if engine:
        g.add_argument("--engine", default="auto", choices=["auto", "torch", "onnx"], help=_ENGINE_HELP)
    g.add_argument("--precision", default="float32", choices=["float32", "auto", "bfloat16", "int8"],
                   help="float32 (default): the same numbers on every machine; auto: faster bfloat16 "
                        "where the CPU or GPU runs it natively and the model keeps its accuracy "
                        "(scores then differ by ~0.003 between machines), else float32; int8: the "
                        "ONNX engine's quantised model, ~2-3x faster on a CPU, scores move by up to ~0.06")
    g.add_argument("--batch-size", type=_batch_size, default=64, metavar="N",
                   help="texts per model call (default 64)")
    prompt = g.add_mutually_exclusive_group()
    prompt.add_argument("--prompt-name", default=None, metavar="NAME",
                        help="one of the model folder's prompts (config_sentence_transformers.json) "
                             "put before scored texts, anchors and background (default: the folder's "
                             "default prompt, else its \"query\" prompt, else none)")
    prompt.add_argument("--no-prompt", action="store_true",
                        help="use none of the model folder's prompts")
    g.add_argument("--query-prompt", default=None, metavar="TEXT",
                   help="text put before search queries (default: the folder's \"query\" prompt)")
    g.add_argument("--doc-prompt", default=None, metavar="TEXT",
                   help="text put before searched documents (default: the folder's \"document\" "
                        "or \"passage\" prompt)")
    g.add_argument("--allow-pickle", action="store_true",
                   help="allow models whose weights exist only as pickle (.bin) files; "
                        "only for models you trust")
    g.add_argument("--no-cache", action="store_true", help="do not use the embedding cache")
    g.add_argument("--memory-budget", type=_memory_size, default=None, metavar="SIZE",
                   help="most memory a run may hold, e.g. 8G (default: half the physical memory, "
                        "or CALIBSIM_MEMORY_BUDGET); a larger run is refused before it starts")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars or summaries")


# More background pairs than this only add memory: percentiles are already within 0.001.
_MAX_BACKGROUND_PAIRS = 10_000_000


def _whole_number(low: int, high: int):
    """An argparse type: a whole number from `low` to `high`, refused when the line is parsed."""
    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {low:,} to {high:,}")
        return value

    return whole_number


def _batch_size(text: str) -> int:
    """An argparse type: a batch size that `encode_texts` accepts."""
    from calibsim_gui.core.encoding import MAX_BATCH_SIZE, check_batch_size

    try:
        return check_batch_size(int(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to {MAX_BATCH_SIZE:,} "
                                         "(e.g. 64, the default)") from None


def _scale(text: str) -> tuple[float, float]:
    """An argparse type: ``LOW,HIGH``, two finite numbers with LOW below HIGH."""
    try:
        low, high = (float(v) for v in text.split(","))
    except ValueError:
        low = high = math.nan
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise argparse.ArgumentTypeError(f"{text!r} is not LOW,HIGH: two numbers, the lowest and the "
                                         "highest score of the scale, e.g. 0,5")
    return low, high


def _memory_size(text: str) -> int:
    from calibsim_gui.core.memory import parse_size

    try:
        return parse_size(text)
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--figures", action="store_true",
                   help="also write each figure beside --out as <name>-<figure>.png and .svg")
    _add_keep_formulas(p)


def _add_keep_formulas(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep-formulas", action="store_true",
                   help="write texts starting with = + - @ as they are in CSV/TSV tables (by default "
                        "they get a leading ' so that a spreadsheet does not run them as formulas)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="calibsim", description="Calibrated, globally interpretable embedding similarity. "
                                     "Without a command, opens the desktop app.")
    parser.add_argument("--version", action="version", version=f"calibsim {__version__}")
    parser.add_argument("--screenshot", metavar="DIR",
                        help="open the app on the built-in demo, save a PNG of every main view "
                             "and timings.json into DIR, then exit")
    parser.add_argument("--self-test", action="store_true",
                        help="check offline and headless that calibsim works (model, reference, "
                             "scoring, reports, main window); exit 0 only if every step worked")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("doctor", help="print versions, device, engine, precision, cache, memory budget and "
                                      "whether the window can open; exit 1 if the command line "
                                      "cannot work",
                       epilog="exit status: 0 when the headless commands work (warnings, such as no "
                              "display for the window, allowed); 1 when a problem would stop them")
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = sub.add_parser("models", help="list usable models")
    p.add_argument("--folder", action="append", default=[], help="also inspect this local model folder")
    p.add_argument("--devices", action="store_true", help="also list devices and their availability")

    p = sub.add_parser("profile", help="build, merge or show reference profiles")
    psub = p.add_subparsers(dest="profile_command", metavar="ACTION", required=True)
    b = psub.add_parser("build", help="build a profile from a background corpus and anchors")
    b.add_argument("--background", nargs="+", default=[], metavar="FILE",
                   help="background corpus: .txt/.md (one sentence per line), folders, CSV/JSONL; "
                        "with --engine ray also quoted globs and s3://... URIs")
    b.add_argument("--column", help="text column of CSV/JSONL background files")
    b.add_argument("--anchors", help="anchor ladder (.json or .csv); default: the built-in STS ladder")
    b.add_argument("--pairs", type=_whole_number(1, _MAX_BACKGROUND_PAIRS), default=20_000,
                   help=f"random background pairs, 1 to {_MAX_BACKGROUND_PAIRS:,} (default 20,000)")
    b.add_argument("--seed", type=_whole_number(0, 2**32 - 1), default=0,
                   help="seed that draws the background pairs, 0 to 4,294,967,295 (default 0)")
    b.add_argument("--encoding", help="text encoding of the background files (default: UTF-8/UTF-16 with BOM)")
    b.add_argument("--band-pairs", metavar="FILE",
                   help="labelled pairs (score,sentence1,sentence2) on which to measure the human "
                        "agreement band: where people's scores fall around each calibrated score; "
                        "use pairs you will not evaluate on")
    b.add_argument("--band-scale", type=_scale, default="0,5",
                   help="the scale of --band-pairs' scores (default 0,5)")
    b.add_argument("--out", required=True, help="profile file to write (.calibsim-profile)")
    b.add_argument("--force", action="store_true", help="replace an existing profile")
    b.add_argument("--metrics", type=lambda text: text.split(","),
                   help="comma-separated metrics to build references for (default: every metric, "
                        "scaled90, scaled50, wrd and radial included)")
    b.add_argument("--abtt-directions", type=_whole_number(1, 100_000), metavar="D",
                   help="all-but-the-top: number of top principal directions removed (default: "
                        "dim/100, e.g. 4 for 384-d)")
    b.add_argument("--whiten-dim", type=_whole_number(1, 100_000), metavar="K",
                   help="whitening: keep the top K whitened dimensions (default: every direction "
                        "the background spans)")
    b.add_argument("--soft-factors", type=_whole_number(1, 100_000), metavar="K",
                   help="soft cosine (geometry fix soft): factors kept of the background's "
                        "correlation matrix S (default: 64)")
    b.add_argument("--engine", choices=["auto", "torch", "onnx", "local", "ray"], default="auto",
                   help=_ENGINE_HELP + "; local: the same as auto; ray: encode the background with "
                        "torch on a Ray cluster (pip install 'calibsim[cluster]')")
    b.add_argument("--address", help="with --engine ray: address of a running Ray cluster (e.g. "
                                     "auto, or ray://head:10001); default: start a local Ray instance")
    b.add_argument("--workers", type=_whole_number(1, 10_000), metavar="N",
                   help="with --engine ray: encoder workers (default: the cluster's GPUs, else its "
                        "CPUs; a local instance gets N CPUs)")
    _add_model_options(b, engine=False)
    m = psub.add_parser("merge", help="merge profiles built with one model from parts of a corpus")
    m.add_argument("profiles", nargs="+", metavar="PROFILE")
    m.add_argument("--out", required=True)
    m.add_argument("--force", action="store_true")
    s = psub.add_parser("show", help="summarise a profile")
    s.add_argument("profile")
    u = psub.add_parser("upgrade", help="make a calibsim 0.1 or 0.2 profile current (backgrounds kept; the "
                                        "calibrated scale is measured again with its model)")
    u.add_argument("profile")
    u.add_argument("--out", required=True, help="upgraded profile to write")
    u.add_argument("--force", action="store_true")
    _add_model_options(u)

    p = sub.add_parser("score", help="score a list of text pairs")
    p.add_argument("pairs", help="CSV, TSV or JSONL file of pairs")
    p.add_argument("--profile", help="reference profile (default: the built-in reference)")
    p.add_argument("--anchors", metavar="FILE",
                   help="anchor ladder (.json or .csv) to calibrate with instead of the profile's "
                        "(the reference's background is kept; as the app's edited anchors)")
    p.add_argument("--out", help="output by extension: .html/.pdf report, .xlsx, .json, .csv/.tsv table "
                                 "('-' for CSV on stdout)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_report_options(p)
    p.add_argument("--text-a", help="column of the first text (default: auto-detected)")
    p.add_argument("--text-b", help="column of the second text (default: auto-detected)")
    p.add_argument("--label", help="column of human scores, to report agreement")
    p.add_argument("--encoding", help="text encoding of the input (default: UTF-8/UTF-16 with BOM)")
    p.add_argument("--metrics", type=lambda text: text.split(","),
                   help="comma-separated metrics, e.g. cosine,euclidean (default: every metric the "
                        "profile has references for)")
    p.add_argument("--geometry", action="append", default=[], metavar="FIX",
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
                        "expected human similarity on a 0-1 scale")
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
    g.add_argument("--chunk-overlap", type=_whole_number(0, 10_000), default=32, metavar="N",
                   help="with --long-texts chunk: tokens shared by neighbouring chunks (default 32)")
    _add_model_options(p)

    p = sub.add_parser("human", help="fit a monotone map from scores to human judgements")
    hsub = p.add_subparsers(dest="human_command", metavar="ACTION", required=True)
    h = hsub.add_parser("fit", help="fit on labelled pairs (e.g. score,sentence1,sentence2)")
    h.add_argument("pairs", help="CSV/TSV/JSONL of pairs with a human score column")
    h.add_argument("--scale", type=_scale, default="0,5", help="the scale the pairs were scored on (default 0,5)")
    h.add_argument("--metric", default="cosine")
    h.add_argument("--geometry", default="none", help="geometry fix the scores are taken under")
    h.add_argument("--profile", help="reference profile (default: the built-in reference)")
    h.add_argument("--text-a")
    h.add_argument("--text-b")
    h.add_argument("--label", help="column of human scores (default: auto-detected)")
    h.add_argument("--encoding")
    h.add_argument("--out", required=True, help="file to write (.calibsim-human)")
    h.add_argument("--force", action="store_true")
    _add_model_options(h)

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
    p.add_argument("--metric", default="cosine")
    p.add_argument("--out", help="side-by-side table (.csv) and <out>.provenance.json")
    p.add_argument("--force", action="store_true")
    _add_keep_formulas(p)
    p.add_argument("--text-a")
    p.add_argument("--text-b")
    p.add_argument("--encoding")
    _add_model_options(p, model=False)

    p = sub.add_parser("evaluate", help="check every score form against labelled pairs, for one or "
                                        "more models")
    p.add_argument("pairs", nargs="+", help="CSV/TSV/JSONL files of pairs with a human score column "
                                            "(each file is evaluated on its own)")
    p.add_argument("--scale", type=_scale, action="append", metavar="LOW,HIGH",
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
    p.add_argument("--metrics", type=lambda text: text.split(","),
                   help="comma-separated metrics, e.g. cosine (default: every metric the profile has "
                        "references for)")
    p.add_argument("--geometry", action="append", default=[], metavar="FIX",
                   help="also evaluate the scores under a geometry fix (center, whiten, abtt, soft; repeatable)")
    p.add_argument("--human", metavar="FILE",
                   help="a human calibration (one model only), fitted on other pairs than these")
    p.add_argument("--out", help="also write the evaluation as .json, or as a self-contained .html "
                                 "report with a reliability diagram per file")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_model_options(p, model=False)

    p = sub.add_parser("diagnose", help="how the model's embeddings fill the space, raw and under "
                                        "each geometry fix")
    p.add_argument("inputs", nargs="*",
                   help="documents to diagnose (default: the reference's background sample)")
    p.add_argument("--profile", help="reference profile whose geometry fixes are used "
                                     "(default: the built-in reference)")
    p.add_argument("--per-file", action="store_true", help="one document per file instead of per line")
    p.add_argument("--column", help="text column of CSV/JSONL inputs")
    p.add_argument("--encoding")
    p.add_argument("--labels-from-files", action="store_true",
                   help="label each document by its file: adds cluster structure beside isotropy "
                        "(silhouette with cosine and euclidean distance, Calinski-Harabasz, "
                        "Davies-Bouldin, Dunn, a logistic-regression classifier's 5-fold accuracy)")
    p.add_argument("--out", help="also write the diagnostics as .json")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_model_options(p)

    p = sub.add_parser("matrix", help="score every document against every other")
    p.add_argument("inputs", nargs="+", help="text files, folders or CSV/JSONL files")
    p.add_argument("--profile", help="reference profile (default: the built-in reference)")
    p.add_argument("--anchors", metavar="FILE",
                   help="anchor ladder (.json or .csv) to calibrate with instead of the profile's "
                        "(the reference's background is kept; as the app's edited anchors)")
    p.add_argument("--out", required=True,
                   help="output by extension: .html/.pdf report, .xlsx, .json, .csv/.tsv (square table)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_report_options(p)
    p.add_argument("--per-file", action="store_true", help="one document per file instead of per line")
    p.add_argument("--column", help="text column of CSV/JSONL inputs")
    p.add_argument("--encoding")
    p.add_argument("--metric", default="cosine")
    p.add_argument("--form", default="calibrated",
                   help="calibrated form computed next to raw (the one a CSV holds); csls: cosine "
                        "corrected for hubness against the background (CSLS, K = 10); "
                        "local_minmax: each row's own min-max (not comparable across rows)")
    p.add_argument("--geometry", default="none", metavar="FIX",
                   help="score under a geometry fix of the reference (center, whiten, abtt, soft; "
                        "default none)")
    _add_model_options(p)
    _add_search_commands(sub)
    return parser


def _add_search_commands(sub) -> None:
    """`calibsim search` and `calibsim threshold`."""
    p = sub.add_parser("search", help="rank the documents of a corpus for each query, with raw and "
                                      "calibrated scores")
    p.add_argument("queries", nargs="+", metavar="QUERIES",
                   help="queries: text files (one per line), folders, or CSV/JSONL files")
    p.add_argument("--corpus", nargs="+", required=True, metavar="DOCS",
                   help="documents to search: text files (one per line), folders, or CSV/JSONL files")
    p.add_argument("--top-k", type=_whole_number(1, 10_000), default=10, metavar="K",
                   help="hits kept per query, 1 to 10,000 (default 10)")
    p.add_argument("--profile", help="reference profile (default: the built-in reference)")
    p.add_argument("--metric", default="cosine")
    p.add_argument("--geometry", default="none", metavar="FIX",
                   help="search under a geometry fix fitted on the background: center, whiten, abtt or soft")
    p.add_argument("--query-column", help="text column of CSV/JSONL query files")
    p.add_argument("--column", help="text column of CSV/JSONL corpus files")
    p.add_argument("--per-file", action="store_true",
                   help="one corpus document per file instead of per line")
    p.add_argument("--encoding", help="text encoding of the inputs (default: UTF-8/UTF-16 with BOM)")
    p.add_argument("--out", help="output by extension: .html/.pdf report, .xlsx, .json, .csv/.tsv table")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_report_options(p)
    _add_model_options(p)

    p = sub.add_parser("threshold", help="find the score above which labelled pairs mean the same, "
                                         "raw and calibrated")
    p.add_argument("pairs", help="CSV/TSV/JSONL of pairs with a human score or 0/1 label column")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--target-precision", type=_fraction, metavar="P",
                        help="the lowest threshold whose precision reaches P (default 0.9): the most "
                             "recall at that precision")
    target.add_argument("--target-recall", type=_fraction, metavar="R",
                        help="the highest threshold whose recall reaches R")
    target.add_argument("--best-f1", action="store_true", help="the threshold of the best F1")
    p.add_argument("--same-at", type=float, metavar="S",
                   help="labels >= S count as the same meaning (default: 1 for a 0/1 label column, "
                        "else the upper fifth of --scale: 4 on 0-5)")
    p.add_argument("--scale", type=_scale, default="0,5",
                   help="the scale the pairs were labelled on (default 0,5)")
    p.add_argument("--metric", default="cosine")
    p.add_argument("--geometry", default="none", metavar="FIX",
                   help="find the thresholds under a geometry fix (center, whiten, abtt, soft)")
    p.add_argument("--profile", help="reference profile (default: the built-in reference)")
    p.add_argument("--label", help="column of human scores or 0/1 labels (default: auto-detected)")
    p.add_argument("--text-a")
    p.add_argument("--text-b")
    p.add_argument("--encoding")
    p.add_argument("--out", help="also write the thresholds and precision-recall curves as .json")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    _add_model_options(p)


def _fraction(text: str) -> float:
    """An argparse type: a number above 0 and at most 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction above 0 and at most 1 (e.g. 0.9)")
    return value


class _Progress:
    """A tqdm bar on stderr driven by the core's progress(done, total, message) callback."""

    def __init__(self, quiet: bool):
        self.quiet, self.bar = quiet, None

    def __call__(self, done: int, total: int, message: str) -> None:
        if self.quiet or total == 0:
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=done, file=sys.stderr, desc="encoding")
        else:
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _say(args, text: str = "") -> None:
    if not args.quiet:
        print(text, file=sys.stderr)


def _load_model(args):
    from calibsim_gui.core.models import choose_prompts, embedder_engine, load_model, resolve_model

    engine = {"local": "auto", "ray": "torch"}.get(args.engine, args.engine)
    if args.precision == "int8" and engine == "torch":
        raise InputError(f"--precision int8 runs on the ONNX engine only, not with --engine {args.engine}"
                         + (" (Ray workers run torch)." if args.engine == "ray" else "."),
                         fix="use --engine onnx, or --precision float32")
    info = resolve_model(args.model)
    prompts = choose_prompts(info, prompt_name=getattr(args, "prompt_name", None),
                             query_prompt=getattr(args, "query_prompt", None),
                             doc_prompt=getattr(args, "doc_prompt", None),
                             no_prompt=getattr(args, "no_prompt", False))
    _say(args, f"loading model {info.name} ({info.source}) ...")
    embedder = load_model(info, device=args.device, precision=args.precision,
                          allow_pickle=args.allow_pickle, prompts=prompts, engine=engine)
    _say(args, f"model {embedder.fingerprint.id} on {embedder.device}"
               + (" (picked by --device auto)" if args.device == "auto" else "")
               + f" with the {embedder_engine(embedder)} engine"
               + (" (picked by --engine auto)" if engine == "auto" else "")
               + f" in {embedder.precision_note}"
               + ("" if not prompts.symmetric else f", prompt {prompts.describe()}"))
    return embedder


def _check_input_memory(args, inputs, *, pairs: int = 0) -> None:
    """Refuse inputs (and `pairs` background pairs) over the memory budget from the files' sizes
    alone, before any file is read or a model loaded."""
    from calibsim_gui.core.inputs import check_read_budget, input_files

    dim = 0
    if pairs:
        from calibsim_gui.core.models import resolve_model

        dim = resolve_model(args.model).dimension or 0
    check_read_budget(input_files(inputs), args.memory_budget, pairs=pairs, dim=dim)


def _cache(args):
    if args.no_cache:
        return None
    from calibsim_gui.core.cache import EmbeddingCache

    return EmbeddingCache()


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings (e.g. the embedding cache turned itself off) as one line, like errors."""
    print(f"calibsim: warning: {message}", file=sys.stderr)


def _profile(args, embedder, cache):
    """The reference of --profile (default: the built-in one), refitted on --anchors if given."""
    from calibsim_gui.core.profile import ReferenceProfile
    from calibsim_gui.core.profile_builder import default_profile, with_anchors

    if args.profile:
        profile = ReferenceProfile.load(args.profile)
        profile.check_model(embedder.fingerprint, source=args.profile, prompt=embedder.prompt)
    else:
        profile = default_profile(embedder, cache=cache, batch_size=args.batch_size)
    anchors = getattr(args, "anchors", None) if getattr(args, "command", None) != "profile" else None
    if anchors:
        from calibsim_gui.core.anchors import load_anchors

        ladder = anchors if not isinstance(anchors, (str, Path)) else load_anchors(anchors)
        profile = with_anchors(profile, embedder, ladder, cache=cache, batch_size=args.batch_size)
    return profile


def _model_and_references(args):
    """The model, the embedding cache and the reference profile a scoring command runs with."""
    embedder = _load_model(args)
    cache = _cache(args)
    return embedder, cache, _profile(args, embedder, cache)


def cmd_models(args) -> int:
    from calibsim_gui.core.models import available_devices, discover_models

    rows = [(m.name, m.source, m.dimension or "?", m.max_seq_length or "?",
             f"{m.size_bytes / 1e6:.0f} MB", str(m.path)) for m in discover_models(args.folder)]
    header = ("name", "source", "dim", "max_len", "size", "path")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(5)]
    for row in [header] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)) + "  " + str(row[5]))
    if args.devices:
        for device, reason in available_devices().items():
            print(f"device {device}: {'available' if reason is None else reason}")
    return 0


def cmd_doctor(args) -> int:
    import json

    from calibsim_gui.core.doctor import exit_code, run_checks

    checks = run_checks()
    code = exit_code(checks)
    if args.json:
        print(json.dumps({"calibsim": __version__, "exit_code": code,
                          "checks": {c.name: {"status": c.status, "summary": c.summary, "fix": c.fix,
                                              **c.data} for c in checks}}, indent=2))
        return code
    for c in checks:
        mark = "" if c.status == "ok" else f"{c.status.upper()}: "
        print(f"{c.name + ':':<11}{mark}{c.summary}" + (f"\n{'':<11}fix: {c.fix}" if c.fix else ""))
    counts = {s: sum(c.status == s for c in checks) for s in ("problem", "warning")}
    verdict = "PROBLEMS: the command line fails until they are fixed" if code else "ok: the command line works"
    print(f"\n{verdict} ({counts['problem']} problem(s), {counts['warning']} warning(s); exit {code})")
    return code


def cmd_profile(args) -> int:
    from calibsim_gui.core.profile import ReferenceProfile, merge_profiles

    if args.profile_command == "show":
        profile = ReferenceProfile.load(args.profile)
        print(f"model: {profile.fingerprint.id}  dimension {profile.dimension}  precision {profile.precision}")
        print(f"prompt: {profile.prompt!r}" if profile.prompt else "prompt: none")
        print(f"anchors: {profile.anchors.name} ({len(profile.anchors.pairs)} pairs)")
        print(f"background pairs: {profile.background_pairs} "
              "(statistics below in the 'higher = more similar' view: distances negated)")
        if profile.has_background:
            from calibsim_gui.core.languages import describe, profile_languages

            print(f"background languages: {describe(profile_languages(profile.provenance))}")
        scale = next(iter(profile.metrics.values())).calibrators["calibrated"]
        print(f"calibrated scale: the line from a typical unrelated pair to identical text, less "
              f"{scale.shift:.3f}; unrelated end measured in en"
              + "".join(f", {code}" for code in profile.provenance.get("scale", {}).get("languages", {})))
        band = next((ref.band for ref in profile.metrics.values() if ref.band is not None), None)
        if band is not None:
            files = ", ".join(f["name"] for f in band.source_.get("files", [])) or "labelled pairs"
            print(f"human agreement band: {', '.join(f'{r:.0%}' for r in band.rates)} of people's scores, "
                  f"measured on {band.n_pairs_:,} labelled pairs ({files}) with {band.model_}")
        else:
            print("human agreement band: none (measure one with `calibsim profile build --band-pairs FILE`)")
        for name, ref in profile.metrics.items():
            bg = ref.background
            extra = f"  background mean {bg.mean:.4f} sd {bg.std:.4f} p99 {bg.quantile(0.99):.4f}" if bg else ""
            print(f"  {name}: forms {', '.join(ref.calibrators)}{extra}")
        for warning in profile.warnings():
            print(f"warning: {warning}")
        return 0
    from calibsim_gui.core.output import check_output_path

    out = Path(args.out)
    if out.suffix == "":
        out = out.with_suffix(".calibsim-profile")
    inputs = {"merge": lambda: args.profiles, "upgrade": lambda: [args.profile],
              "build": lambda: [*args.background, args.anchors]}[args.profile_command]()
    check_output_path(out, inputs=[p for p in inputs if p], force=args.force, formats=None)
    if args.profile_command == "merge":
        profiles = [ReferenceProfile.load(p) for p in args.profiles]
        merged = profiles[0]
        for other in profiles[1:]:
            merged = merge_profiles(merged, other)
        merged.provenance["name"] = out.name
        merged.save(out)
        print(f"wrote {out} ({merged.background_pairs} background pairs)")
        return 0
    if args.profile_command == "upgrade":
        return _upgrade_profile(args, out)
    return _build_profile(args, out)


def _upgrade_profile(args, out: Path) -> int:
    from calibsim_gui.core.files import read_user_json
    from calibsim_gui.core.profile_builder import upgrade_profile

    old = read_user_json(args.profile, what="profile", fix="give the calibsim 0.1 or 0.2 profile file to upgrade.")
    embedder = _load_model(args)
    profile = upgrade_profile(old, embedder, cache=_cache(args), batch_size=args.batch_size)
    profile.save(out)
    print(f"wrote {out} ({profile.background_pairs} background pairs kept; calibrated scale measured "
          f"with {embedder.fingerprint.id} in {profile.precision})")
    return 0


def _build_profile(args, out: Path) -> int:
    from calibsim_gui.core.anchors import load_anchors
    from calibsim_gui.core.inputs import load_documents
    from calibsim_gui.core.profile_builder import build_profile

    on_ray = args.engine == "ray"
    if not on_ray and (args.address or args.workers):
        raise InputError("--address and --workers apply to the ray engine only.", fix="add --engine ray")
    from calibsim_gui.core.geometry import geometry_settings

    settings = geometry_settings(abtt_directions=args.abtt_directions, whiten_dim=args.whiten_dim,
                                 soft_factors=args.soft_factors)
    if on_ray and settings:
        raise InputError("--abtt-directions, --whiten-dim and --soft-factors apply to the local engine "
                         "only.", fix="leave out --engine ray, or the geometry settings")
    if settings and not args.background:
        raise InputError("--abtt-directions, --whiten-dim and --soft-factors set geometry fixes, which "
                         "are fitted on a background.", fix="add --background FILES")
    if on_ray and not args.background:
        raise InputError("--engine ray builds a background: give it files with --background.",
                         fix="add --background FILES, or leave out --engine ray for an anchors-only profile")
    if on_ray:
        from calibsim_gui.core.cluster import import_ray

        import_ray()
    elif args.background:
        _check_input_memory(args, args.background, pairs=args.pairs)
    docs = load_documents(args.background, column=args.column, encoding=args.encoding,
                          memory_budget=args.memory_budget) if args.background and not on_ray else None
    if docs is not None:
        for note in docs.notes:
            _say(args, f"background: {note}")
        _say(args, f"background: {len(docs.documents)} sentences from {len(docs.files)} files")
    anchors = load_anchors(args.anchors) if args.anchors else None
    embedder = _load_model(args)
    progress = _Progress(args.quiet)
    options = dict(anchors=anchors, n_pairs=args.pairs, seed=args.seed, name=out.name,
                   cache=_cache(args), batch_size=args.batch_size, metrics=args.metrics)
    try:
        if on_ray:
            from calibsim_gui.core.cluster import build_profile_on_ray

            def progress_with_rate(done, total, message):
                progress(done, total, message)
                if progress.bar is not None:
                    progress.bar.set_postfix_str(message)

            _say(args, "background: reading and encoding on Ray "
                       + (f"at {args.address}" if args.address else "(a local instance)"))
            info = embedder.info
            profile = build_profile_on_ray(
                embedder, args.background, model=None if info.source == "built-in" else str(info.path),
                device=args.device, precision=embedder.precision, allow_pickle=args.allow_pickle,
                column=args.column, encoding=args.encoding, workers=args.workers,
                address=args.address, progress=progress_with_rate, **options)
            ray_info = profile.provenance["ray"]
            _say(args, f"background: {profile.provenance['background']['sentences']:,} distinct "
                       f"sentences of {ray_info['sentences_read']:,} read, {ray_info['blocks']} blocks "
                       f"on {ray_info['workers']} {ray_info['worker_device']} workers")
        else:
            profile = build_profile(embedder, docs.texts if docs else None,
                                    sources=docs.files if docs else (), progress=progress,
                                    text_columns=docs.text_columns if docs else (),
                                    geometry_settings=settings,
                                    memory_budget=args.memory_budget, **options)
        if args.band_pairs:
            _fit_band(args, profile, embedder)
    finally:
        progress.close()
    profile.save(out)
    for warning in profile.warnings():
        _say(args, f"warning: {warning}")
    print(f"wrote {out} ({profile.background_pairs} background pairs, "
          f"{len(profile.anchors.pairs)} anchor pairs)")
    return 0


def _fit_band(args, profile, embedder) -> None:
    """Measure the human agreement band of `profile` on ``--band-pairs``."""
    from calibsim_gui.core.human import load_human_pairs
    from calibsim_gui.core.profile_builder import fit_agreement_bands
    from calibsim_gui.core.provenance import file_digest

    low, high = args.band_scale
    pairs = load_human_pairs(args.band_pairs, scale=args.band_scale, encoding=args.encoding,
                             memory_budget=args.memory_budget)
    fit_agreement_bands(profile, embedder, pairs.texts_a, pairs.texts_b, (pairs.human - low) / (high - low),
                        cache=_cache(args), batch_size=args.batch_size,
                        source={"files": [{"name": Path(args.band_pairs).name,
                                           "sha256": file_digest(args.band_pairs)}], "scale": [low, high]})
    _say(args, f"human agreement band: measured on {len(pairs.human):,} labelled pairs of {args.band_pairs}")


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


def _score_table(args, table, *, human=(), norms: bool = False, interval: bool = False):
    """Load the model and its reference and score `table` as `calibsim score` does.

    Returns
    -------
    (ScoredPairs, ReferenceProfile)
    """
    from calibsim_gui.core.analysis import score_pairs

    embedder, cache, profile = _model_and_references(args)
    geometry = tuple(dict.fromkeys(["none", *args.geometry]))
    progress = _Progress(args.quiet)
    try:
        scored = score_pairs(table, embedder, profile, metrics=args.metrics, geometry=geometry,
                             human=human, norms=norms, interval=interval, cache=cache,
                             batch_size=args.batch_size, progress=progress,
                             memory_budget=args.memory_budget,
                             long_texts=getattr(args, "long_texts", "truncate"),
                             chunk_aggregate=getattr(args, "chunk_aggregate", "match"),
                             chunk_overlap=getattr(args, "chunk_overlap", 32))
    finally:
        progress.close()
    return scored, profile


def cmd_score(args) -> int:
    from calibsim_gui.core.inputs import load_pairs

    inputs = [p for p in (args.pairs, args.profile, args.human, args.anchors) if p]
    if args.out and args.out != "-":
        _check_outputs(args, inputs)
    table = load_pairs(args.pairs, text_a=args.text_a, text_b=args.text_b, label=args.label,
                       encoding=args.encoding, memory_budget=args.memory_budget)
    human = []
    if args.human:
        from calibsim_gui.core.human import HumanFit

        human = [HumanFit.load(args.human).calibrator]
    scored, profile = _score_table(args, table, human=human, norms=args.norms, interval=args.interval)
    if args.out == "-":
        from calibsim_gui.core.output import protect_formulas

        frame = scored.frame if args.keep_formulas else protect_formulas(scored.frame)[0]
        frame.to_csv(sys.stdout, index=False, float_format="%.10g")
        return 0
    if not args.quiet:
        _print_score_summary(scored)
    if not args.out:
        print("(add --out FILE.csv, .xlsx, .json, .html or .pdf to save the scores)")
        return 0
    return _write_outputs(args, scored, profile, inputs=inputs, metric=(args.metrics or [None])[0])


def _check_outputs(args, inputs) -> None:
    """Refuse a bad --out (or a figure file that is an input or, without --force, exists)
    before any model is loaded."""
    from calibsim_gui.core.output import check_output_path, figure_paths

    check_output_path(args.out, inputs=inputs, force=args.force)
    for figure in figure_paths(args.out) if args.figures else ():
        check_output_path(figure, inputs=inputs, force=args.force, formats=None)


def _write_outputs(args, result, profile, *, inputs, metric=None, form="calibrated") -> int:
    """Write --out (format by extension) and, with --figures, the figures beside it."""
    from calibsim_gui.core.output import sidecar_path
    from calibsim_gui.core.reports import TABLE_SUFFIXES, build_report, write_figures, write_report

    report = build_report(result, profile, metric=metric, form=form)
    written = write_report(report, args.out, force=args.force, inputs=inputs,
                           keep_formulas=args.keep_formulas)
    extra = f" and {sidecar_path(written)}" if written.suffix.lower() in TABLE_SUFFIXES else ""
    print(f"wrote {written}{extra}")
    if args.figures:
        for path in write_figures(report, written, force=args.force):
            print(f"wrote {path}")
    return 0


def cmd_matrix(args) -> int:
    from calibsim_gui.core.analysis import score_matrix
    from calibsim_gui.core.inputs import load_documents

    inputs = [*args.inputs, *[p for p in (args.profile, args.anchors) if p]]
    if args.form == "local_minmax" and Path(args.out).suffix.lower() not in (".csv", ".tsv", ".json"):
        raise InputError("the local_minmax form is written as a table (.csv, .tsv) or .json; the "
                         "reports show calibrated forms.", fix="end --out with .csv, .tsv or .json")
    _check_outputs(args, inputs)
    docs = load_documents(args.inputs, per_file=args.per_file, column=args.column,
                          encoding=args.encoding, memory_budget=args.memory_budget)
    for note in docs.notes:
        _say(args, f"documents: {note}")
    embedder, cache, profile = _model_and_references(args)
    progress = _Progress(args.quiet)
    try:
        result = score_matrix(docs, embedder, profile, metric=args.metric, forms=(args.form,),
                              geometry=args.geometry, cache=cache, batch_size=args.batch_size,
                              progress=progress, memory_budget=args.memory_budget)
    finally:
        progress.close()
    _say(args, f"{len(result.ids)} x {len(result.ids)} documents, {args.metric} raw and {args.form}")
    return _write_outputs(args, result, profile, inputs=inputs, metric=args.metric, form=args.form)


def cmd_human(args) -> int:
    from calibsim_gui.core.human import HUMAN_SUFFIX, fit_human_calibration
    from calibsim_gui.core.output import check_output_path

    out = Path(args.out if Path(args.out).suffix else args.out + HUMAN_SUFFIX)
    check_output_path(out, inputs=[p for p in (args.pairs, args.profile) if p], force=args.force,
                      formats=None)
    scale = args.scale
    _check_input_memory(args, [args.pairs])
    embedder, cache, profile = _model_and_references(args)
    progress = _Progress(args.quiet)
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


def cmd_compare(args) -> int:
    from calibsim_gui.core.analysis import score_pairs
    from calibsim_gui.core.comparison import compare_models
    from calibsim_gui.core.inputs import load_pairs
    from calibsim_gui.core.output import check_output_path, write_scored_pairs

    profiles = [None if p in ("builtin", "") else p for p in args.profiles]
    if args.out:
        check_output_path(args.out, inputs=[args.pairs, *[p for p in profiles if p],
                                            *([args.anchors] if args.anchors else [])], force=args.force)
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
        from calibsim_gui.core.anchors import load_anchors

        args.anchors = load_anchors(args.anchors)     # read once; every model encodes its texts
    table = load_pairs(args.pairs, text_a=args.text_a, text_b=args.text_b, encoding=args.encoding,
                       memory_budget=args.memory_budget)
    cache = _cache(args)
    results, ladders = {}, {}
    for i, spec in enumerate(args.models):
        args.model, args.profile = spec, profiles[i] if profiles else None
        embedder = _load_model(args)
        profile = _profile(args, embedder, cache)
        ladders[embedder.fingerprint.id] = profile.anchors
        progress = _Progress(args.quiet)
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
        from calibsim_gui.core.analysis import ScoredPairs

        provenance = {"models": {m: r.provenance for m, r in results.items()},
                      "differences": comparison.differences}
        write_scored_pairs(ScoredPairs(comparison.frame, provenance), args.out,
                           keep_formulas=args.keep_formulas)
        print(f"wrote {args.out}")
    return 0


def _print_evaluation(evaluation, results, path) -> None:
    from calibsim_gui.core.evaluation import BAND_LABELS, readable_forms

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


def cmd_evaluate(args) -> int:
    from calibsim_gui.core.atomic import write_text_atomic
    from calibsim_gui.core.evaluation import evaluate, evaluation_html
    from calibsim_gui.core.human import HumanFit, load_human_pairs
    from calibsim_gui.core.output import check_output_path, dump_json
    from calibsim_gui.core.provenance import file_digest

    scales = args.scale or [(0.0, 5.0)]
    if len(scales) not in (1, len(args.pairs)):
        raise InputError(f"{len(scales)} --scale for {len(args.pairs)} files.",
                         fix="give one --scale per file, in the files' order, or one for all")
    scales = scales * len(args.pairs) if len(scales) == 1 else scales
    if args.out:
        out = check_output_path(args.out, inputs=[*args.pairs, *(p for p in (args.profile, args.human) if p)],
                                force=args.force, formats=(".json", ".html"))
    specs = args.models or [None]
    if len(specs) > 1 and (args.profile or args.human):
        raise InputError("--profile and --human belong to one model.",
                         fix="leave them out to evaluate several models, each with its built-in reference")
    _check_input_memory(args, args.pairs)
    files = [load_human_pairs(path, scale=scale, text_a=args.text_a, text_b=args.text_b, label=args.label,
                              encoding=args.encoding, memory_budget=args.memory_budget)
             for path, scale in zip(args.pairs, scales)]
    human = [HumanFit.load(args.human).calibrator] if args.human else []
    print("MAE and bias against the 0-1 human scores (n/a: the form has no 0-1 scale); top ties: pairs "
          "sharing the highest score as shown (3 decimals); mean: on 0-1 where MAE is given, else in the "
          "form's units; worst tenth: the tenth of the 0-1 scale holding the least of people's "
          "share of pairs (the form's share / people's share; under 1/3 is a hole)")
    runs = []
    for pairs in files:
        results = {}
        for spec in specs:
            args.model = spec
            scored, _ = _score_table(args, pairs.table, human=human, interval=True)
            model = scored.provenance["model"]["id"]
            if model in results:
                raise InputError(f"model {model} is given twice.", fix="give each --model once")
            results[model] = scored
        evaluation = evaluate(results, scale=pairs.scale)
        for note in dict.fromkeys(note for scored in results.values() for note in scored.notes):
            _say(args, f"note: {note}")
        _print_evaluation(evaluation, results, pairs.table.path)
        runs.append((pairs.table.path, results, evaluation))
    if not args.out:
        return 0
    if out.suffix.lower() == ".html":
        references = {m: f"references: {s.provenance['references']['profile']}" for m, s in runs[0][1].items()}
        write_text_atomic(out, evaluation_html([(path.name, ev) for path, _, ev in runs], models=references))
    else:
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
    print(f"wrote {out}")
    return 0


def cmd_diagnose(args) -> int:
    from calibsim_gui.core.atomic import write_text_atomic
    from calibsim_gui.core.encoding import encode_texts
    from calibsim_gui.core.geometry import GEOMETRIES
    from calibsim_gui.core.output import check_output_path, dump_json
    from calibsim_gui.core.space import diagnostics_table, profile_space

    if args.out:
        out = check_output_path(args.out, inputs=[*args.inputs, *([args.profile] if args.profile else [])],
                                force=args.force)
        if out.suffix.lower() != ".json":
            raise InputError("diagnostics are written as JSON.", path=out, fix="end --out with .json")
    if args.inputs:
        _check_input_memory(args, args.inputs)
    embedder, cache, profile = _model_and_references(args)
    embeddings = labels = None
    what = f"{len(profile.query_reference) if profile.query_reference is not None else 0:,} " \
           "background texts of the reference"
    if args.inputs:
        from calibsim_gui.core.inputs import load_documents

        docs = load_documents(args.inputs, per_file=args.per_file, column=args.column,
                              encoding=args.encoding, memory_budget=args.memory_budget)
        progress = _Progress(args.quiet)
        try:
            embeddings = encode_texts(embedder, docs.texts, batch_size=args.batch_size, cache=cache,
                                      progress=progress).embeddings
        finally:
            progress.close()
        labels = [str(d.source) for d in docs.documents] if args.labels_from_files else None
        what = f"{len(docs.documents):,} documents from {len(docs.files)} file(s)"
    space = profile_space(profile, embeddings, labels=labels)
    names = list(space.diagnostics)
    print(f"diagnostics of {what}; geometry fixes fitted on the reference's background")
    header = [GEOMETRIES[n].label for n in names]
    rows = diagnostics_table(space)
    width = max(len(label) for label, _ in rows) + 2
    print("".ljust(width) + "".join(h.rjust(18) for h in header))
    for label, values in rows:
        print(label.ljust(width) + "".join(values[n].rjust(18) for n in names))
    if args.out:
        write_text_atomic(out, dump_json({"format": "calibsim-diagnostics", "schema_version": 1,
                                          "model": embedder.fingerprint.to_dict(),
                                          "reference": profile.provenance.get("name"), "texts": what,
                                          "geometries": space.diagnostics}))
        print(f"wrote {out}")
    return 0


def _short(text, width: int = 70) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _print_search_summary(hits, *, per_query: int = 3, queries: int = 10) -> None:
    """Each query's best hits: rank, raw, calibrated, query z-score, document."""
    frame, search = hits.frame, hits.provenance["search"]
    metric = search["metric"]
    print(f"{search['queries']['count']:,} queries against {search['corpus']['count']:,} documents, "
          f"top {search['top_k']} by {metric}" + ("" if search["geometry"] == "none"
                                                  else f" under {search['geometry']}"))
    z = f"{metric}_query_zscore"
    for n, (_, group) in enumerate(frame.groupby("query_id", sort=False)):
        if n == queries:
            print(f"... and {search['queries']['count'] - queries:,} more queries (add --out to save all)")
            break
        print(f"\nquery {group['query_id'].iloc[0]}: {_short(group['query'].iloc[0])}")
        for _, row in group.head(per_query).iterrows():
            zscore = f"  z {row[z]:+6.2f}" if z in row else ""
            print(f"  {row['rank']:>3}. raw {row[f'{metric}_raw']:.4f}  calibrated "
                  f"{row[f'{metric}_calibrated']:.3f}{zscore}  {_short(row['document'], 60)}")
    print(f"\n{metric}_local_minmax (in --out) is local to each query: not comparable across queries")


def cmd_search(args) -> int:
    from calibsim_gui.core.inputs import load_documents
    from calibsim_gui.core.search import search

    inputs = [*args.queries, *args.corpus, *([args.profile] if args.profile else [])]
    if args.out:
        _check_outputs(args, inputs)
    _check_input_memory(args, [*args.queries, *args.corpus])
    queries = load_documents(args.queries, column=args.query_column, encoding=args.encoding,
                             memory_budget=args.memory_budget)
    corpus = load_documents(args.corpus, per_file=args.per_file, column=args.column,
                            encoding=args.encoding, memory_budget=args.memory_budget)
    for what, docs in (("queries", queries), ("corpus", corpus)):
        for note in docs.notes:
            _say(args, f"{what}: {note}")
    embedder, cache, profile = _model_and_references(args)
    progress = _Progress(args.quiet)
    try:
        hits = search(queries, corpus, embedder, profile, metric=args.metric, top_k=args.top_k,
                      geometry=args.geometry, cache=cache, batch_size=args.batch_size,
                      progress=progress, memory_budget=args.memory_budget)
    finally:
        progress.close()
    if not args.out:
        if not args.quiet:
            _print_search_summary(hits)
        print("(add --out FILE.csv, .xlsx, .json, .html or .pdf to save every hit)")
        return 0
    _say(args, f"{len(queries.texts):,} queries x {len(corpus.texts):,} documents, "
               f"top {hits.provenance['search']['top_k']} each")
    return _write_outputs(args, hits, profile, inputs=inputs, metric=args.metric)


def cmd_threshold(args) -> int:
    import numpy as np

    from calibsim_gui.core.atomic import write_text_atomic
    from calibsim_gui.core.human import load_human_pairs
    from calibsim_gui.core.metrics import get_metrics
    from calibsim_gui.core.output import check_output_path, dump_json
    from calibsim_gui.core.provenance import file_digest
    from calibsim_gui.core.thresholds import find_threshold, pr_curve, same_meaning, threshold_in_raw_units

    if args.out:
        out = check_output_path(args.out, inputs=[p for p in (args.pairs, args.profile) if p],
                                force=args.force)
        if out.suffix.lower() != ".json":
            raise InputError("thresholds are written as JSON.", path=out, fix="end --out with .json")
    metric = get_metrics([args.metric])[0]
    criterion, target = (("recall", args.target_recall) if args.target_recall else
                         ("f1", None) if args.best_f1 else ("precision", args.target_precision or 0.9))
    _check_input_memory(args, [args.pairs])
    pairs = load_human_pairs(args.pairs, scale=args.scale, text_a=args.text_a, text_b=args.text_b,
                             label=args.label, encoding=args.encoding, memory_budget=args.memory_budget)
    same, same_at = same_meaning(pairs.human, scale=pairs.scale, same_at=args.same_at)
    args.metrics, args.geometry = [args.metric], [] if args.geometry == "none" else [args.geometry]
    scored, _ = _score_table(args, pairs.table)
    suffix = "" if not args.geometry else f"@{args.geometry[0]}"
    columns = {"raw": f"{args.metric}_raw{suffix}", "calibrated": f"{args.metric}_calibrated{suffix}"}
    label = pairs.table.label
    print(f"{len(same):,} labelled pairs; '{label}' >= {same_at:g} counts as the same meaning "
          f"({int(same.sum()):,} pairs, {same.mean():.1%})")
    goal = ("the best F1" if criterion == "f1" else
            f"the most {'recall' if criterion == 'precision' else 'precision'} at a {criterion} of at "
            f"least {target:.0%}")
    print(f"threshold chosen for {goal}; interval: 95% bootstrap (pairs resampled)")
    results = {}
    for form, column in columns.items():
        values = scored.frame[column].to_numpy(dtype=float)[pairs.rows]
        similarity = metric.as_similarity(values) if form == "raw" else values
        found = find_threshold(similarity, same, criterion=criterion, target=target)
        found_dict = (threshold_in_raw_units(found, metric.higher_is_similar) if form == "raw"
                      else {**found.to_dict(), "rule": "score >= threshold"})
        results[form] = {"column": column, **found_dict,
                         "curve": pr_curve(similarity[np.isfinite(similarity)],
                                           same[np.isfinite(similarity)]).to_dict()}
    print("  " + "column".ljust(28) + "threshold".rjust(11) + "95% interval".rjust(20)
          + "precision".rjust(11) + "recall".rjust(8) + "F1".rjust(7))
    for form, r in results.items():
        low, high = r["interval"]
        op = "<=" if r["rule"].startswith("distance") else ">="
        print("  " + r["column"].ljust(28) + f"{op} {r['threshold']:.4f}".rjust(11)
              + f"{low:.4f} - {high:.4f}".rjust(20) + f"{r['precision']:.3f}".rjust(11)
              + f"{r['recall']:.3f}".rjust(8) + f"{r['f1']:.3f}".rjust(7))
        if r["unreachable"]:
            print(f"  note: {r['unreachable']} of {r['n_boot']} resamples could not reach the target")
    cal = results["calibrated"]
    print(f"\nOn the calibrated scale the threshold is {cal['threshold']:.3f} (0 = a typical unrelated "
          "pair, 1 = identical text): it carries across models, since each model's own calibration "
          f"maps its raw scores to that scale; the raw threshold {results['raw']['threshold']:.4f} "
          f"belongs to {scored.provenance['model']['id']} alone.")
    for note in scored.notes:
        _say(args, f"note: {note}")
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


APP_FILE_SUFFIXES = {".csv", ".tsv", ".tab", ".jsonl", ".ndjson", ".txt", ".md", ".calibsim"}


def _app_files(argv: list[str], commands) -> tuple[list[str], list[str]]:
    """Split ``calibsim [options] FILE...`` (open files in the app) from a sub-command line.

    A positional word that is not a sub-command counts as a file when it exists or ends like
    a file the app opens; anything else is left to argparse (so a mistyped command still
    gets "invalid choice"). Returns (files, the other arguments).
    """
    files, rest, i = [], [], 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            files += argv[i + 1:]
            break
        if word.startswith("-") and len(word) > 1:
            rest.append(word)
            if word == "--screenshot" and i + 1 < len(argv):     # its value is not a file
                rest.append(argv[i + 1])
                i += 1
        elif word in commands:
            return [], list(argv)             # a sub-command: argparse reads the whole line
        elif Path(word).exists() or Path(word).suffix.lower() in APP_FILE_SUFFIXES:
            files.append(word)
        else:
            rest.append(word)
        i += 1
    return files, rest


def main(argv=None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = next(a.choices for a in parser._subparsers._group_actions
                    if isinstance(a, argparse._SubParsersAction))
    files, argv = _app_files(argv, commands)
    args = parser.parse_args(argv)
    if files and (args.self_test or args.screenshot):
        parser.error("files to open go with the app alone, not with --self-test or --screenshot")
    if args.self_test:
        from calibsim_gui.selftest import run_self_test

        return run_self_test()
    if args.command is None:
        from calibsim_gui.qt.app import run_app

        return run_app(screenshot_dir=args.screenshot, files=files)
    command = {"models": cmd_models, "profile": cmd_profile, "score": cmd_score,
               "matrix": cmd_matrix, "diagnose": cmd_diagnose, "human": cmd_human,
               "compare": cmd_compare, "doctor": cmd_doctor, "evaluate": cmd_evaluate,
               "search": cmd_search, "threshold": cmd_threshold}[args.command]
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _print_warning
            return command(args)
    except CalibsimError as exc:
        print(f"calibsim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("calibsim: stopped by the user", file=sys.stderr)
        return 130

