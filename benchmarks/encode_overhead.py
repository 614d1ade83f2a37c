"""Encoding overhead: calibsim's encode path vs a bare SentenceTransformer.encode, same texts.

5,000 distinct AG News texts, batch size 64, CPU, float32 for both; the bare call uses the very
``SentenceTransformer`` object calibsim wraps (same weights and threads). calibsim's path is
``encode_texts`` (deduplication, length-sorted batches, truncation count, float32 table), once
without a cache and once writing into a fresh embedding cache, as the app does on a first run.
Runs alternate (bare, calibsim, calibsim + cache, bare, ...) and the best of each is compared.
Target: ratio <= 1.05.

    .venv/bin/python benchmarks/encode_overhead.py [--quick]
"""

from __future__ import annotations

import common

TARGET = 1.05


def main() -> None:
    args = common.arguments(__doc__, quick_help="32 texts, one run each")
    n, repeats = (32, 1) if args.quick else (5000, 3)
    import numpy as np

    from calibsim_gui.core.embedding.cache import EmbeddingCache
    from calibsim_gui.core.embedding.encoding import encode_texts

    texts = common.agnews_texts(n)
    embedder = common.builtin_embedder("float32")
    bare = common.bare_model(embedder)
    bare.encode(texts[:64], batch_size=64)                  # first-call costs out of the timing
    caches = []

    def with_fresh_cache():
        caches.append(EmbeddingCache(common.Path(common.tempfile.mkdtemp()) / "embeddings.sqlite"))
        return encode_texts(embedder, texts, batch_size=64, cache=caches[-1]).embeddings

    timing = common.interleaved({
        "bare SentenceTransformer.encode": lambda: bare.encode(texts, batch_size=64),
        "calibsim encode_texts": lambda: encode_texts(embedder, texts, batch_size=64).embeddings,
        "calibsim encode_texts + new cache": with_fresh_cache,
    }, repeats)
    reference = np.asarray(timing["bare SentenceTransformer.encode"]["result"], dtype=np.float32)
    base = timing["bare SentenceTransformer.encode"]["best_s"]
    rows = []
    for name, t in timing.items():
        result = t.pop("result")
        t["max_abs_difference_to_bare"] = float(np.abs(result - reference).max())
        t["ratio_to_bare"] = round(t["best_s"] / base, 3)
        t["texts_per_s"] = round(n / t["best_s"], 1)
        rows.append({"path": name, "texts": n, "best s": t["best_s"], "median s": t["median_s"],
                     "texts/s": t["texts_per_s"], "ratio": t["ratio_to_bare"],
                     "max |diff|": t["max_abs_difference_to_bare"]})
    common.print_table(rows)
    worst = max(t["ratio_to_bare"] for name, t in timing.items() if name.startswith("calibsim"))
    print(f"target ratio <= {TARGET}: {'met' if worst <= TARGET else 'NOT met'} (worst {worst})")
    common.save("encode_overhead", args, {"texts": n, "batch_size": 64, "repeats": repeats,
                                          "timing": timing, "target_ratio": TARGET,
                                          "target_met": worst <= TARGET})


if __name__ == "__main__":
    main()
