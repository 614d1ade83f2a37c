"""Document matrix: 5,000 documents against each other, every metric, calibrated: time and memory.

5,000 distinct AG News texts are read as a document set and encoded once (into a fresh
embedding cache; timed apart). Then ``score_matrix`` builds the 5,000 x 5,000 raw and calibrated
matrices of each of the five metrics in turn (embeddings from the cache), in row blocks. The
peak resident memory is recorded per metric, next to the memory before it.

    .venv/bin/python benchmarks/document_matrix.py [--quick]
"""

from __future__ import annotations

import common


def main() -> None:
    args = common.arguments(__doc__, quick_help="50 documents")
    n = 50 if args.quick else 5000
    from calibsim_gui.core.analysis.matrices import score_matrix
    from calibsim_gui.core.embedding.cache import EmbeddingCache
    from calibsim_gui.core.embedding.encoding import encode_texts
    from calibsim_gui.core.io.inputs import load_documents

    work = common.Path(common.tempfile.mkdtemp(prefix="calibsim-bench-"))
    (work / "documents.txt").write_text("\n".join(common.agnews_texts(n)), encoding="utf-8")
    documents = load_documents(work / "documents.txt")
    embedder = common.builtin_embedder("float32")
    profile = common.builtin_profile()
    embedder.encode_batch(["warm up"] * 8)
    import scipy.spatial.distance  # noqa: F401  (import costs out of the timing)

    cache = EmbeddingCache(work / "cache.sqlite")
    encode_s, _ = common.timed(encode_texts, embedder, documents.texts, batch_size=64, cache=cache)
    rows = []
    for metric in profile.metrics:
        before = common.rss_mb()
        common.reset_peak_rss()
        seconds, result = common.timed(score_matrix, documents, embedder, profile, metric=metric,
                                       forms=("calibrated",), cache=cache)
        peak = common.peak_rss_mb()
        matrices_mb = sum(m.nbytes for m in result.matrices.values()) / 1e6
        del result
        rows.append({"metric": metric, "documents": len(documents.texts), "seconds": round(seconds, 2),
                     "rss_before_mb": round(before, 1), "peak_rss_mb": round(peak, 1),
                     "result_matrices_mb": round(matrices_mb, 1),
                     "peak_increase_mb": round(peak - before, 1)})
    common.print_table(rows)
    total = sum(r["seconds"] for r in rows)
    print(f"encoding {len(documents.texts)} documents: {encode_s:.1f} s; all five matrices: {total:.1f} s")
    common.save("document_matrix", args, {"documents": len(documents.texts), "encode_s": round(encode_s, 2),
                                          "matrices_total_s": round(total, 2), "per_metric": rows})


if __name__ == "__main__":
    main()
