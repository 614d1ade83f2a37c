"""Search: 2,000 STS-B sentences as queries against 20,000 AG News sentences: time and memory.

The queries are the first 2,000 distinct ``sentence1`` of STS-B (test, then dev); the corpus the
first 20,000 distinct AG News titles and descriptions. ``core.search.search`` runs twice with the
built-in model and its built-in reference, top 10 hits per query, under the default memory
budget (which it checks first): cold (a fresh embedding cache, so encoding is included) and warm
(vectors from the cache: the blocked ranking, calibration and query z-scores alone). The peak
resident memory of each run is recorded next to the memory before it and the budget's estimate.

    .venv/bin/python benchmarks/search_scale.py [--quick]
"""

from __future__ import annotations

import common


def stsb_sentences(n: int) -> list[str]:
    import pandas as pd

    frame = pd.concat([pd.read_csv(common.stsb_path(split), dtype=str, keep_default_na=False)
                       for split in ("test", "dev")])
    texts = [" ".join(t.split()) for t in frame["sentence1"]]
    return list(dict.fromkeys(t for t in texts if t))[:n]


def main() -> None:
    args = common.arguments(__doc__, quick_help="20 queries against 200 documents")
    n_queries, n_docs, top_k = (20, 200, 5) if args.quick else (2000, 20000, 10)
    from calibsim_gui.core.embedding.cache import EmbeddingCache
    from calibsim_gui.core.io.inputs import load_documents
    from calibsim_gui.core.analysis.search import search_run_bytes
    from calibsim_gui.core.io.memory import default_budget
    from calibsim_gui.core.analysis.search import search

    work = common.Path(common.tempfile.mkdtemp(prefix="calibsim-bench-"))
    (work / "queries.txt").write_text("\n".join(stsb_sentences(n_queries)), encoding="utf-8")
    (work / "corpus.txt").write_text("\n".join(common.agnews_texts(n_docs)), encoding="utf-8")
    queries, corpus = load_documents(work / "queries.txt"), load_documents(work / "corpus.txt")
    embedder = common.builtin_embedder("float32")
    profile = common.builtin_profile()
    embedder.encode_batch(["warm up"] * 8)
    cache = EmbeddingCache(work / "cache.sqlite")
    budget = default_budget()
    estimate = search_run_bytes(len(queries.texts), len(corpus.texts), embedder.dimension, top_k)
    rows = []
    for run in ("cold (encoding included)", "warm (vectors cached)"):
        before = common.rss_mb()
        common.reset_peak_rss()
        seconds, hits = common.timed(search, queries, corpus, embedder, profile, top_k=top_k,
                                     cache=cache, memory_budget=budget)
        peak = common.peak_rss_mb()
        rows.append({"run": run, "queries": len(queries.texts), "documents": len(corpus.texts),
                     "top_k": top_k, "seconds": round(seconds, 2),
                     "queries_per_s": round(len(queries.texts) / seconds, 1),
                     "rss_before_mb": round(before, 1), "peak_rss_mb": round(peak, 1),
                     "peak_increase_mb": round(peak - before, 1), "hits": len(hits.frame)})
        top = hits.frame[hits.frame["rank"] == 1]
        del hits
    common.print_table(rows)
    print(f"memory budget {budget / 1e6:,.0f} MB; the search's own estimate {estimate / 1e6:,.0f} MB; "
          f"top-1 calibrated median {top['cosine_calibrated'].median():.3f}")
    common.save("search_scale", args, {
        "queries": len(queries.texts), "documents": len(corpus.texts), "top_k": top_k,
        "runs": rows, "cold_s": rows[0]["seconds"], "warm_s": rows[1]["seconds"],
        "memory_budget_mb": round(budget / 1e6, 1), "estimate_mb": round(estimate / 1e6, 1),
        "within_budget": max(r["peak_rss_mb"] for r in rows) * 1e6 <= budget,
        "top1_calibrated_median": round(float(top["cosine_calibrated"].median()), 4),
        "top1_query_zscore_median": round(float(top["cosine_query_zscore"].median()), 3)
        if "cosine_query_zscore" in top else None})


if __name__ == "__main__":
    main()
