"""Options several commands share (model, reports) and the argparse types that check values."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.memory import parse_size

ENGINE_HELP = ("auto (default): ONNX Runtime on the CPU, torch on a GPU or for bfloat16; torch; onnx "
               "(CPU only, equal to torch float32 within 1e-5, needs no torch once its graph exists)")


def add_model_options(p: argparse.ArgumentParser, *, model: bool = True, engine: bool = True) -> None:
    """The "model" group (which model, where and how it runs) and --quiet."""
    g = p.add_argument_group("model")
    if model:
        g.add_argument("--model", default=None,
                       help="built-in (default), a local sentence-transformers folder, or a model in "
                            "the Hugging Face cache (see `calibsim models`)")
    g.add_argument("--vectors", action="append", metavar="FILE",
                   help="vectors from any model instead of --model: a .npz of the arrays texts and vectors, or "
                        "a .npy beside a texts file of the same name (.txt, .jsonl); repeatable. "
                        "`calibsim reference-texts` writes the texts to embed (docs/api.md)")
    g.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"])
    if engine:
        g.add_argument("--engine", default="auto", choices=["auto", "torch", "onnx"], help=ENGINE_HELP)
    g.add_argument("--precision", default="float32", choices=["float32", "auto", "bfloat16", "int8"],
                   help="float32 (default): the same numbers on every machine; auto: faster bfloat16 "
                        "where the CPU runs it natively and the model keeps its accuracy (on a GPU "
                        "it was measured slower: float32 there) "
                        "(scores then differ by ~0.003 between machines), else float32; int8: the "
                        "ONNX engine's quantised model, text by text (no faster than float32 on a quiet 2-core CPU; "
                        "less CPU time on a busy one), scores move by up to ~0.06")
    g.add_argument("--batch-size", type=batch_size, default=None, metavar="N",
                   help="texts per model call (default 64 on a CPU, 256 on a GPU)")
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
    g.add_argument("--trust-folder-graph", action="store_true",
                   help="run a model folder's own ONNX graph that cannot be checked against its weights "
                        "(no torch, or no weights), under its own fingerprint, marked unverified")
    g.add_argument("--no-cache", action="store_true", help="do not use the embedding cache")
    g.add_argument("--memory-budget", type=memory_size, default=None, metavar="SIZE",
                   help="most memory a run may hold, e.g. 8G (default: half the physical memory, "
                        "or CALIBSIM_MEMORY_BUDGET); a larger run is refused before it starts")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars or summaries")


def add_report_options(p: argparse.ArgumentParser) -> None:
    """--figures and --keep-formulas, for commands that write reports."""
    p.add_argument("--figures", action="store_true",
                   help="also write each figure beside --out as <name>-<figure>.png and .svg")
    add_keep_formulas(p)


def add_keep_formulas(p: argparse.ArgumentParser) -> None:
    """--keep-formulas, for commands that write CSV/TSV tables."""
    p.add_argument("--keep-formulas", action="store_true",
                   help="write texts starting with = + - @ as they are in CSV/TSV tables (by default "
                        "they get a leading ' so that a spreadsheet does not run them as formulas)")


def whole_number(low: int, high: int):
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


def folder(text: str) -> str:
    """An argparse type: a folder to write into (created when missing), refused when it is a file."""
    if Path(text).exists() and not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder: name a folder (it is created "
                                         "if missing)")
    return text


def _checked(check, value):
    """`value`, or argparse's error with the message of the `InputError` that `check(value)` raises:
    a name is refused when the line is parsed, before any file is read or model loaded."""
    try:
        check(value)
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def metrics(text: str) -> list[str]:
    """An argparse type: comma-separated metric names."""
    from calibsim_gui.core.geometry.metrics import get_metrics

    return _checked(get_metrics, text.split(","))


def metric(text: str) -> str:
    """An argparse type: one metric's name."""
    from calibsim_gui.core.geometry.metrics import get_metrics

    return _checked(get_metrics, [text])[0]


def geometry(text: str) -> str:
    """An argparse type: a geometry fix's name."""
    from calibsim_gui.core.geometry.transforms import get_geometries

    return _checked(get_geometries, text)


def batch_size(text: str) -> int:
    """An argparse type: a batch size that `encode_texts` accepts."""
    from calibsim_gui.core.embedding.encoding import MAX_BATCH_SIZE, check_batch_size

    try:
        return check_batch_size(int(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to {MAX_BATCH_SIZE:,} "
                                         "(e.g. 64, the default)") from None


def scale(text: str) -> tuple[float, float]:
    """An argparse type: ``LOW,HIGH``, two finite numbers with LOW below HIGH."""
    try:
        low, high = (float(v) for v in text.split(","))
    except ValueError:
        low = high = math.nan
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise argparse.ArgumentTypeError(f"{text!r} is not LOW,HIGH: two numbers, the lowest and the "
                                         "highest score of the scale, e.g. 0,5")
    return low, high


def memory_size(text: str) -> int:
    """An argparse type: a memory size such as 8G."""
    try:
        return parse_size(text)
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def fraction(text: str) -> float:
    """An argparse type: a number above 0 and at most 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction above 0 and at most 1 (e.g. 0.9)")
    return value
