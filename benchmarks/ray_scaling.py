"""Ray scaling: a background built on Ray with 1 and 2 workers, against the local engines.

The same 4,000 distinct AG News sentences (a .txt file), 20,000 pairs, seed 0, the built-in
model in float32 on the CPU, no embedding cache. Each run is a fresh process:

- ``local-onnx``: ``build_profile`` with the engine a local CPU run chooses (ONNX Runtime, its
  threads on every core);
- ``ray-N``: ``build_background_on_ray`` on a local Ray instance with N CPUs and N encoder
  actors (one core and one thread each, on the engine a local run chooses on their device:
  ONNX Runtime on the driver's prepared graph), timed from ``ray.init`` to ``ray.shutdown``.

Reported per run: wall seconds, sentences/s, seconds per million sentences, projected as
``fixed start-up + encode time per sentence x 10^6``, and the largest difference of the 1,000
query-sample embeddings from ``local-onnx``'s (the same sentences in every run). For Ray the
encode time is the encoder actors' busy time (summed over blocks) divided by the workers;
everything else — starting Ray, reading and keying, actors loading the model, scoring the
pairs — is start-up, paid once.

    .venv/bin/python benchmarks/ray_scaling.py [--quick] [--sentences N]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import common
import numpy as np

PAIRS, SEED, SENTENCES = 20_000, 0, 4_000


def child(case: dict) -> dict:
    """One measured build, in this (fresh) process; its query sample saved to ``case["sample"]``."""
    texts = common.agnews_texts(case["sentences"])
    embedder = common.builtin_embedder("float32", engine="auto")
    from calibsim_gui.core.calibration.profile_settings import ProfileSettings

    settings = ProfileSettings(n_pairs=case["pairs"], seed=SEED)
    if case["engine"] == "local":
        from calibsim_gui.core.calibration.profile_builder import build_profile

        embedder.encode_batch(["warm up"] * 8)
        seconds, profile = common.timed(build_profile, embedder, texts, settings)
        np.save(case["sample"], profile.query_reference)
        return {"engine": f"local-{embedder.engine}", "workers": 1, "cores": common.os.cpu_count(),
                "sentences": len(texts), "pairs": profile.background_pairs,
                "wall_s": round(seconds, 2), "startup_s": 0.0, "encode_s": round(seconds, 2)}
    # (the local figure keeps its pair scoring and fits inside "encode": a few seconds at most)
    import ray

    from calibsim_gui.core.calibration.cluster import build_background_on_ray

    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "agnews.txt"
        corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
        start = time.perf_counter()
        ray.init(num_cpus=case["workers"], include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR")
        try:
            background, _ = build_background_on_ray([corpus], settings, embedder=embedder,
                                                    workers=case["workers"])
        finally:
            ray.shutdown()
        seconds = time.perf_counter() - start
    np.save(case["sample"], background.query_reference)
    info = background.provenance["ray"]
    return {"engine": f"ray-{info['worker_engine']}", "workers": info["workers"], "cores": case["workers"],
            "sentences": background.sentences, "pairs": background.pairs, "blocks": info["blocks"],
            "wall_s": round(seconds, 2), "encode_s": round(info["worker_busy_seconds"] / info["workers"], 2),
            "startup_s": round(seconds - info["worker_busy_seconds"] / info["workers"], 2)}


def main() -> None:
    if "--sentences" in sys.argv:              # the one option `common.arguments` does not know
        at = sys.argv.index("--sentences")
        n = int(sys.argv[at + 1])
        del sys.argv[at:at + 2]
    else:
        n = None
    args = common.arguments(__doc__, quick_help="50 sentences and 1,000 pairs, and Ray with 1 worker only "
                                                "(proves the script works)")
    if args.child:
        common.child_answer(child(json.loads(args.child)))
        return
    n, pairs = (50, 1000) if args.quick else (n or SENTENCES, PAIRS)
    cases = [{"engine": "local"}, {"engine": "ray", "workers": 1}] + ([] if args.quick else [{"engine": "ray", "workers": 2}])
    with tempfile.TemporaryDirectory() as folder:
        cases = [{**case, "sentences": n, "pairs": pairs, "sample": str(Path(folder) / f"{i}.npy")}
                 for i, case in enumerate(cases)]
        runs = [common.run_child("ray_scaling.py", case) for case in cases]
        samples = [np.load(case["sample"]) for case in cases]
    for run, sample in zip(runs, samples):
        per_sentence = run["encode_s"] / run["sentences"]
        run["sentences_per_s"] = round(run["sentences"] / run["wall_s"], 1)
        run["encode_sentences_per_s"] = round(1 / per_sentence, 1)
        run["projected_s_per_million"] = round(run["startup_s"] + per_sentence * 1e6)
        run["projected_h_per_million"] = round(run["projected_s_per_million"] / 3600, 2)
        run["max_abs_diff_vs_local_onnx"] = float(np.abs(sample - samples[0]).max())
    by_name = {f"{r['engine'].split('-')[0]}-{r['workers']}": r for r in runs}
    speedup = None if args.quick else round(
        by_name["ray-2"]["encode_sentences_per_s"] / by_name["ray-1"]["encode_sentences_per_s"], 2)
    common.print_table(runs, ["engine", "workers", "cores", "sentences", "blocks", "wall_s", "startup_s",
                              "encode_s", "sentences_per_s", "encode_sentences_per_s",
                              "projected_s_per_million", "projected_h_per_million",
                              "max_abs_diff_vs_local_onnx"])
    if speedup is not None:
        print(f"\nray: 2 workers encode {speedup}x as fast as 1")
    common.save("ray_scaling", args, {"pairs": pairs, "seed": SEED, "runs": runs,
                                      "ray_speedup_2_vs_1_workers": speedup})


if __name__ == "__main__":
    main()
