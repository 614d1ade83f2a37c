"""The encoding engines side by side: torch float32, ONNX Runtime float32 and ONNX Runtime int8.

For each, in a fresh process: sentences per CPU-second (process CPU time of every thread, so a
busy shared machine does not flatter or punish an engine), STS-B test Spearman x100 of the cosine,
the largest |difference| of its embeddings from torch float32's, the seconds from a bare
interpreter to a loaded model (imports included), peak resident memory, and whether torch was
imported. The ONNX graphs are exported (and quantised) once beforehand, so the ONNX processes
measure what the desktop bundle does: no torch at all.

    .venv/bin/python benchmarks/engines.py [--quick]
"""

from __future__ import annotations

import time

START = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import common  # noqa: E402

ENGINES = [("torch", "float32"), ("onnx", "float32"), ("onnx", "int8")]
BATCH = 64


def stsb(quick: bool):
    """(sentence1 list, sentence2 list, scores) of STS-B test (64 pairs with --quick)."""
    import pandas as pd

    frame = pd.read_csv(common.stsb_path("test"))
    frame = frame.head(64) if quick else frame
    return list(frame["sentence1"]), list(frame["sentence2"]), frame["score"].to_numpy()


def child(case: dict) -> None:
    """Load one engine, encode STS-B, answer with its figures; vectors go to ``case["out"]``."""
    from calibsim_gui.core.embedding.models import load_model

    embedder = load_model(None, device="cpu", engine=case["engine"], precision=case["precision"])
    load_s = time.perf_counter() - START
    import numpy as np
    from scipy.stats import spearmanr

    first, second, scores = stsb(case["quick"])
    texts = sorted(dict.fromkeys(first + second), key=len)           # batches as encode_texts makes them
    embedder.encode_batch(texts[:8])                                         # warm up
    cpu, wall = time.process_time(), time.perf_counter()
    vectors = np.concatenate([embedder.encode_batch(texts[i:i + BATCH]) for i in range(0, len(texts), BATCH)])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    row = {text: i for i, text in enumerate(texts)}
    a, b = vectors[[row[t] for t in first]], vectors[[row[t] for t in second]]
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    np.save(case["out"], vectors)
    common.child_answer({
        "engine": case["engine"], "precision": case["precision"], "sentences": len(texts),
        "sentences_per_cpu_s": round(len(texts) / cpu, 1), "sentences_per_wall_s": round(len(texts) / wall, 1),
        "stsb_spearman_x100": round(float(spearmanr(cosine, scores)[0]) * 100, 2),
        "import_and_load_s": round(load_s, 2), "peak_rss_mb": round(common.peak_rss_mb(), 1),
        "torch_imported": "torch" in sys.modules, "graph": str(getattr(embedder, "graph", "")),
    })


def main() -> None:
    args = common.arguments(__doc__, quick_help="64 STS-B pairs")
    if args.child:
        return child(json.loads(args.child))
    import numpy as np

    from calibsim_gui.core.embedding.models import load_model

    graphs = tempfile.mkdtemp(prefix="calibsim-bench-onnx-")
    env = {"CALIBSIM_ONNX_DIR": graphs}
    common.os.environ.update(env)
    export_s = time.perf_counter()
    load_model(None, device="cpu", engine="onnx")                    # export + check, once
    export_s = time.perf_counter() - export_s
    quantize_s = time.perf_counter()
    load_model(None, device="cpu", engine="onnx", precision="int8")  # quantise, once
    quantize_s = time.perf_counter() - quantize_s
    work = Path(tempfile.mkdtemp(prefix="calibsim-bench-"))
    runs = []
    for engine, precision in ENGINES:
        out = work / f"{engine}-{precision}.npy"
        runs.append(common.run_child("engines.py", {"engine": engine, "precision": precision,
                                                    "quick": args.quick, "out": str(out)}, env=env))
        runs[-1]["vectors"] = out
    reference = np.load(runs[0]["vectors"])
    for run in runs:
        run["max_abs_diff_vs_torch_float32"] = float(np.abs(np.load(run.pop("vectors")) - reference).max())
    common.print_table(runs, ["engine", "precision", "sentences_per_cpu_s", "sentences_per_wall_s",
                              "stsb_spearman_x100", "max_abs_diff_vs_torch_float32", "import_and_load_s",
                              "peak_rss_mb", "torch_imported"])
    by_name = {f"{r['engine']}_{r['precision']}": r for r in runs}
    speedup = {name: round(r["sentences_per_cpu_s"] / runs[0]["sentences_per_cpu_s"], 2)
               for name, r in by_name.items()}
    print(f"\nsentences per CPU-second vs torch float32: {speedup}; first-use export {export_s:.1f} s, "
          f"int8 quantisation {quantize_s:.1f} s")
    common.save("engines", args, {"runs": runs, "speedup_per_cpu_s_vs_torch_float32": speedup,
                                  "export_s": round(export_s, 2), "quantize_s": round(quantize_s, 2),
                                  "batch_size": BATCH})


if __name__ == "__main__":
    main()
