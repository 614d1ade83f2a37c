"""Phases of one ``calibsim score --no-cache`` process: wall and CPU before, during and after encoding.

Each run is a fresh process that scores the STS-B test pairs (``--quick``: 20 pairs) with the
built-in model, float32, no cache (the ONNX graph as `make install` prepares it), and records the wall seconds and the CPU seconds (user + sys
of the whole process, every thread) from start to the first encoding step, of the encoding
(tokenizer, ONNX Runtime session and its runs) and from its end to exit (query scales,
languages, calibration, output). On a shared machine the encoding's CPU swings by a second
between identical runs (ONNX Runtime's threads spin while they wait): compare the phases, not
whole processes. Medians over ``--runs``. calibsim is compiled to bytecode first, as an install
leaves it, and every process uses one cache folder (model digests, graph checks, the language
detector's copy; never vectors: ``--no-cache``) that a first 20-pair run filled, as an installed
calibsim's is after its first run; ``--first-run``: a new, empty folder for each process instead.

Beside each run, a fresh process times the bare engine encode of the same distinct texts: the
ONNX engine calibsim loads (float32, same graph and threads) called on the batches calibsim
plans (64 texts of similar token counts) with nothing around them; the model load and the token
count that plans the batches are left out. ``ratio`` is the whole run
(spawn to exit) over that encode; the target is <= 1.25 (issue #44) for STS-B test and for
``--texts 10000`` (5,000 AG News pairs, 10,000 distinct texts).

    .venv/bin/python benchmarks/score_phases.py [--quick] [--runs N] [--texts N]
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import tempfile
import time
from itertools import pairwise
from pathlib import Path

STARTED = time.perf_counter()

import common  # after STARTED: the start is timed before any import

PHASES = ("start -> encoding starts", "encoding starts -> encoding ends", "encoding ends -> exit")
TARGET_RATIO = 1.25
BATCH = 64


def now() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), usage.ru_utime + usage.ru_stime


def bare_encode(case: dict) -> None:
    """The engine's encode of the distinct texts of `case["pairs"]` on calibsim's batches; answers
    its wall and CPU seconds (the model load and the batch planning not counted)."""
    import pandas as pd

    from calibsim_gui.core.embedding.models import load_model

    from calibsim_gui.core.embedding.encoding import token_batches

    frame = pd.read_csv(case["pairs"])
    texts = sorted(set(frame["sentence1"].astype(str)) | set(frame["sentence2"].astype(str)))
    embedder = load_model(None, device="cpu", precision="float32", engine="onnx")
    batches = [[texts[i] for i in batch] for batch in token_batches(embedder.token_counts(texts), BATCH)]
    embedder.encode_batch(batches[0])                      # opens the session, as a run's first batch does
    start = now()
    for batch in batches:
        embedder.encode_batch(batch)
    end = now()
    common.child_answer({"texts": len(texts), "wall_s": end[0] - start[0], "cpu_s": end[1] - start[1],
                         "load_1m": os.getloadavg()[0]})


def child(case: dict) -> None:
    """One ``calibsim score`` in this process, its encoding marked; answers the phases."""
    if case.get("cache"):
        os.environ["CALIBSIM_CACHE_DIR"] = case["cache"]
    if case.get("bare"):
        bare_encode(case)
        return
    from calibsim_gui.cli import main as calibsim
    from calibsim_gui.core.analysis import pairs

    marks = {"start": (STARTED, 0.0)}
    encode = pairs.iter_encode

    def timed(*args, **kwargs):
        marks.setdefault("encoding starts", now())
        result = yield from encode(*args, **kwargs)
        marks.setdefault("encoding ends", now())
        return result

    pairs.iter_encode = timed
    code = calibsim(["score", case["pairs"], "--no-cache", "--quiet", "--force", "--precision", "float32",
                     "--out", case["out"]])
    marks["exit"] = now()
    names = list(marks)
    common.child_answer({"exit_code": code, "load_1m": os.getloadavg()[0], "phases": {
        f"{a} -> {b}": {"wall_s": marks[b][0] - marks[a][0], "cpu_s": marks[b][1] - marks[a][1]}
        for a, b in pairwise(names)}})


def main() -> None:
    def extend(parser) -> None:
        parser.add_argument("--runs", type=int, default=3, help="fresh processes to take the medians of")
        parser.add_argument("--texts", type=int, help="score N/2 AG News pairs (N distinct texts) "
                                                      "instead of STS-B test")
        parser.add_argument("--first-run", action="store_true",
                            help="each process with a new, empty cache folder (a first run's costs: model digests, "
                                 "graph checks, the language detector's copy) instead of one a first run filled")

    args = common.arguments(__doc__, quick_help="20 pairs, one run", extend=extend)
    if args.child:
        child(json.loads(args.child))
        return
    import pandas as pd

    work = Path(tempfile.mkdtemp(prefix="calibsim-bench-"))
    pairs_path = common.stsb_path("test")
    if args.texts:
        texts = common.agnews_texts(args.texts)
        pairs_path = common.write_pairs_csv(zip(texts[0::2], texts[1::2]), work / "agnews.csv")
    first = work / "quick.csv"
    pd.read_csv(common.stsb_path("test")).head(20).to_csv(first, index=False)
    pairs_path = first if args.quick else pairs_path
    graphs = {"CALIBSIM_ONNX_DIR": common.prepared_graphs()}          # as `make install` leaves them
    common.compile_calibsim()                                         # as an install leaves them
    cache = {} if args.first_run else {"cache": tempfile.mkdtemp(prefix="calibsim-bench-cache-")}
    if cache:                                                         # the first run, not measured
        common.run_child("score_phases.py", {"pairs": str(first), "out": str(work / "first.csv"), **cache},
                         env=graphs)
    runs, bare = [], []
    for _ in range(1 if args.quick else args.runs):                   # alternating: the same load
        spawned = time.perf_counter()
        answer = common.run_child("score_phases.py", {"pairs": str(pairs_path), "out": str(work / "out.csv"),
                                                       **cache}, env=graphs)
        answer["whole_wall_s"] = time.perf_counter() - spawned
        if answer["exit_code"] != 0:
            raise SystemExit(f"calibsim score exited with {answer['exit_code']}")
        runs.append(answer)
        bare.append(common.run_child("score_phases.py", {"pairs": str(pairs_path), "bare": True, **cache},
                                     env=graphs))
    rows = [{"phase": phase,
             "wall_s": round(statistics.median(r["phases"][phase]["wall_s"] for r in runs), 3),
             "cpu_s": round(statistics.median(r["phases"][phase]["cpu_s"] for r in runs), 3)}
            for phase in PHASES]
    whole = statistics.median(r["whole_wall_s"] for r in runs)
    encode = statistics.median(b["wall_s"] for b in bare)
    rows += [{"phase": "whole run (spawn -> exit)", "wall_s": round(whole, 3), "cpu_s": None},
             {"phase": f"bare engine encode of the {bare[0]['texts']} texts", "wall_s": round(encode, 3),
              "cpu_s": round(statistics.median(b["cpu_s"] for b in bare), 3)}]
    common.print_table(rows)
    loads = [r["load_1m"] for r in runs + bare]
    ratio = whole / encode
    print(f"ratio whole run / bare encode {ratio:.2f} (target <= {TARGET_RATIO}); medians of {len(runs)} "
          f"runs; load average (1 min) {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")
    common.save("score_phases" + (f"_{args.texts}" if args.texts and not args.quick else "")
                + ("_first_run" if args.first_run else ""), args,
                {"pairs": str(pairs_path.name), "cache": "new per process" if args.first_run else "filled by a first run",
                 "runs": runs, "bare": bare, "phases": rows,
                 "ratio": round(ratio, 3), "target_ratio": TARGET_RATIO})


if __name__ == "__main__":
    main()
