"""The notebook way vs calibsim: scoring and calibrating 1,000 STS-B pairs.

The notebook way, as the original notebooks do it: read the CSV, then for each pair encode
each sentence separately with ``SentenceTransformer.encode`` (the model object calibsim wraps)
and compute the five metrics one pair at a time with ``scipy.spatial.distance``; finally
calibrate the score columns with the built-in reference profile. calibsim: ``load_pairs`` +
``score_pairs`` with its default engine (ONNX Runtime on a CPU; each distinct text encoded once,
in token-sorted batches of 64, vectorised metrics, every calibration including query z-scores).
No embedding cache in either.
Target: calibsim >= 10x faster.

    .venv/bin/python benchmarks/notebook_vs_calibsim.py [--quick]
"""

from __future__ import annotations

import common

TARGET = 10.0
NOTEBOOK_METRICS = ("cosine", "dot", "euclidean", "manhattan", "angular")


def notebook_way(model, profile, path, metric_names):
    import numpy as np
    import pandas as pd
    from scipy.spatial import distance

    frame = pd.read_csv(path)
    rows = []
    for s1, s2 in zip(frame["sentence1"], frame["sentence2"]):
        e1, e2 = model.encode(s1), model.encode(s2)
        cos = 1 - distance.cosine(e1, e2)
        rows.append({"cosine": cos, "dot": float(np.dot(e1, e2)), "euclidean": distance.euclidean(e1, e2),
                     "manhattan": distance.cityblock(e1, e2),
                     "angular": float(np.arccos(np.clip(cos, -1, 1)) / np.pi)})
    scores = pd.DataFrame(rows)
    for name in metric_names:
        for form, values in profile.calibrate(name, scores[name].to_numpy()).items():
            scores[f"{name}_{form}"] = values
    return scores


def main() -> None:
    args = common.arguments(__doc__, quick_help="10 pairs")
    n = 10 if args.quick else 1000
    import numpy as np
    import pandas as pd

    from calibsim_gui.core.analysis.pairs import score_pairs
    from calibsim_gui.core.io.inputs import load_pairs

    work = common.Path(common.tempfile.mkdtemp(prefix="calibsim-bench-"))
    path = work / "pairs.csv"
    pd.read_csv(common.stsb_path("test"))[["sentence1", "sentence2"]].head(n).to_csv(path, index=False)
    embedder = common.builtin_embedder("float32", engine="auto")     # as calibsim runs by default
    bare = common.bare_model(common.builtin_embedder("float32"))      # a notebook's torch model
    profile = common.builtin_profile()
    metric_names = list(NOTEBOOK_METRICS)            # the notebooks' five, of the profile's metrics
    bare.encode(["warm up"] * 8)
    import scipy.spatial.distance  # noqa: F401  (import costs out of the timing)

    timing = common.interleaved({
        "notebook way": lambda: notebook_way(bare, profile, path, metric_names),
        "calibsim score_pairs": lambda: score_pairs(load_pairs(path), embedder, profile,
                                                    metrics=metric_names, batch_size=64),
    }, 1)
    notebook = timing["notebook way"].pop("result")
    calibsim = timing["calibsim score_pairs"].pop("result").frame
    differences = {name: float(np.abs(notebook[name].to_numpy() - calibsim[f"{name}_raw"].to_numpy()).max())
                   for name in metric_names}
    speedup = round(timing["notebook way"]["best_s"] / timing["calibsim score_pairs"]["best_s"], 2)
    texts = pd.concat([calibsim["sentence1"], calibsim["sentence2"]])
    common.print_table([{"path": name, "pairs": n, "seconds": t["best_s"],
                         "pairs/s": round(n / t["best_s"], 1)} for name, t in timing.items()])
    print(f"speed-up {speedup}x (target >= {TARGET}x: {'met' if speedup >= TARGET else 'NOT met'}); "
          f"{texts.nunique()} distinct of {len(texts)} texts; largest raw-score difference "
          f"{max(differences.values()):.2e}")
    common.save("notebook_vs_calibsim", args, {
        "pairs": n, "calibsim_engine": embedder.engine, "distinct_texts": int(texts.nunique()),
        "texts": len(texts), "timing": timing,
        "speedup": speedup, "target_speedup": TARGET, "target_met": speedup >= TARGET,
        "max_raw_score_difference": differences,
    })


if __name__ == "__main__":
    main()
