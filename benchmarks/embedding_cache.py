"""Embedding cache: re-scoring 10,000 pairs with a warm cache, in the same process and after a restart.

10,000 AG News articles give the pairs (title, description): 20,000 texts. The cold run scores
them with an empty embedding cache (every text encoded, then stored); the warm run scores the
same file again in the same process; the restart run does it in a new process that loads the
model and opens the same cache file. Each run is a full ``score_pairs`` (five metrics, every
calibration, query z-scores), timed without loading the model. The warm run's largest parts
(reading the vectors and each text's query scale from the cache) are timed apart, and so is
computing the query scales without the cache. Target: warm >= 50x
faster than cold; the restart run takes every vector from the cache.

    .venv/bin/python benchmarks/embedding_cache.py [--quick]
"""

from __future__ import annotations

import json

import common

TARGET = 50.0


def score(path, cache_file, embedder, profile) -> dict:
    """One timed ``score_pairs`` of `path` with the cache in `cache_file`."""
    from calibsim_gui.core.analysis.pairs import score_pairs
    from calibsim_gui.core.embedding.cache import EmbeddingCache
    from calibsim_gui.core.io.inputs import load_pairs

    table = load_pairs(path)
    with EmbeddingCache(cache_file) as cache:
        seconds, scored = common.timed(score_pairs, table, embedder, profile, cache=cache, batch_size=64)
    encoding = scored.provenance["encoding"]
    return {"seconds": round(seconds, 3), "distinct_texts": encoding["distinct_texts"],
            "from_cache": encoding["from_cache"]}


def warm_breakdown(articles, cache_file, embedder, profile) -> dict:
    """Seconds of the warm run's largest parts (vectors and query scales read from the cache),
    and what computing the query scales costs without the cache."""
    from calibsim_gui.core.embedding.cache import EmbeddingCache, cache_key
    from calibsim_gui.core.embedding.encoding import encode_texts
    from calibsim_gui.core.geometry.metrics import METRICS
    from calibsim_gui.core.calibration.query_scale import text_scales

    texts = list(dict.fromkeys([a for a, _ in articles] + [b for _, b in articles]))
    reference = profile.query_reference
    with EmbeddingCache(cache_file) as cache:
        read_s, encoding = common.timed(encode_texts, embedder, texts, cache=cache)
        scales_s, _ = common.timed(text_scales, list(METRICS), encoding.embeddings, reference,
                                   texts=texts, cache=cache, model_key=cache_key(embedder))
    computed_s, _ = common.timed(text_scales, list(METRICS), encoding.embeddings, reference)
    return {"vectors_from_cache_s": round(read_s, 3), "query_scales_from_cache_s": round(scales_s, 3),
            "query_scales_computed_s": round(computed_s, 3)}


def main() -> None:
    args = common.arguments(__doc__, quick_help="20 pairs")
    if args.child:
        case = json.loads(args.child)
        common.child_answer(score(case["path"], case["cache"], common.builtin_embedder("float32"),
                                  common.builtin_profile()))
        return
    n = 20 if args.quick else 10_000
    work = common.Path(common.tempfile.mkdtemp(prefix="calibsim-bench-"))
    articles = common.agnews_articles(n)
    path = common.write_pairs_csv(articles, work / "pairs.csv")
    cache_file = work / "cache" / "embeddings.sqlite"
    embedder, profile = common.builtin_embedder("float32"), common.builtin_profile()
    embedder.encode_batch(["warm up"] * 8)
    runs = {"cold (empty cache)": score(path, cache_file, embedder, profile),
            "warm (same process)": score(path, cache_file, embedder, profile),
            "warm after restart (new process)": common.run_child(
                "embedding_cache.py", {"path": str(path), "cache": str(cache_file)})}
    breakdown = warm_breakdown(articles, cache_file, embedder, profile)
    cold = runs["cold (empty cache)"]["seconds"]
    for run in runs.values():
        run["speedup_vs_cold"] = round(cold / run["seconds"], 1)
    common.print_table([{"run": name, "pairs": n, **run} for name, run in runs.items()])
    restart = runs["warm after restart (new process)"]
    survived = restart["from_cache"] == restart["distinct_texts"]
    worst = min(runs["warm (same process)"]["speedup_vs_cold"], restart["speedup_vs_cold"])
    print(f"target warm >= {TARGET}x cold: {'met' if worst >= TARGET else 'NOT met'} (worst {worst}x); "
          f"cache survived the restart: {survived}; cache file {cache_file.stat().st_size / 1e6:.1f} MB")
    cold_encoding = cold - runs["warm (same process)"]["seconds"] + breakdown["vectors_from_cache_s"]
    breakdown["encoding_stage_speedup"] = round(cold_encoding / breakdown["vectors_from_cache_s"], 1)
    print(f"warm run parts: vectors from the cache {breakdown['vectors_from_cache_s']} s (the encoding "
          f"stage alone is {breakdown['encoding_stage_speedup']}x faster than cold), query scales "
          f"from the cache {breakdown['query_scales_from_cache_s']} s (computing them: "
          f"{breakdown['query_scales_computed_s']} s)")
    common.save("embedding_cache", args, {
        "pairs": n, "runs": runs, "warm_breakdown": breakdown,
        "cache_mb": round(cache_file.stat().st_size / 1e6, 1),
        "target_speedup": TARGET, "target_met": worst >= TARGET, "survives_restart": survived,
    })


if __name__ == "__main__":
    main()
