"""Corpora at scale: neighbours, duplicates and search over 10 k, 100 k and 1 M texts, no N x N matrix.

Vectors: the first 20,000 distinct AG News titles and descriptions, encoded once with the built-in
model (ONNX Runtime float32). A size past 20,000 is made of those real vectors and, for the rest,
real vectors with Gaussian noise as long as the vector itself (each ``normalise(v + |v| g/sqrt(d))``,
cosine ~0.7 to its source: a new point near the real one, not a copy of it); "stored vectors", the
encoding left out. ``--from-texts`` measures the 100 k size end to end from real texts instead
(`texts_100k`: AG News titles, descriptions, their sentences and clauses, STS-B and SICK), encoded.

Each size runs in a fresh process, so its peak resident memory is its own:

- neighbours: `vector_neighbours` (method auto: exact row blocks up to ~45 k texts, the faiss
  HNSW graph index above), k = 10, calibrated with the built-in reference, pairs and duplicate
  groups included; recall@10 of its neighbours against the exact ones (`top_hits`) of 2,000 rows
  drawn at random (exact over the whole set for those rows);
- search: 100 held-out real vectors with noise as queries; exact `top_hits` (what `search` runs
  for 100 queries at any of these sizes) and the approximate index (built once, then queried):
  seconds for the 100 queries after indexing, recall@10 against exact (the index up to 200,000
  texts: past that, building a second index would double the run for a path `search` does not
  take for 100 queries), and 9 single queries one at a time over the whole set, exact, as a typed
  query is answered (median and slowest).

    .venv/bin/python benchmarks/corpus_scale.py [--quick] [--sizes 10000,100000] [--from-texts]
"""

from __future__ import annotations

import sys

import common

REAL = 20_000
RECALL_ROWS = 2_000
QUERIES = 100
SEARCH_INDEX_UP_TO = 200_000     # sizes whose approximate search (its own index) is measured too
K = 10
TYPED = 9                        # single queries timed one by one (a typed query in search)
SYNTHETIC = ("mixes", "copies")  # how the vectors past the real ones are made (see the docstring)
MIX_PARTNERS = 10                # a mix draws its two partners from its source's nearest real texts
MIX_NOISE = 0.25                 # a mix's noise, as a share of the mix's length


def extend(parser) -> None:
    parser.add_argument("--sizes", default="10000,100000,1000000",
                        help="comma-separated set sizes (default 10000,100000,1000000)")
    parser.add_argument("--vectors", type=common.Path, metavar="NPY",
                        help="real vectors already encoded (the first AG News texts, in order, as "
                             "agnews_texts gives them: a .npy file): the encoding is skipped")
    parser.add_argument("--synthetic", choices=SYNTHETIC, default="mixes",
                        help="how vectors past the real ones are made (default mixes; copies: the old set)")
    parser.add_argument("--from-texts", action="store_true",
                        help="the 100,000 size end to end from real AG News texts (encoding included)")


def texts_100k() -> list[str]:
    """Distinct real texts past 100,000: AG News titles and descriptions (35,258), the sentences
    of the descriptions, their clauses (split at ", ", "; " and " - ", 4 words or more), then every
    STS-B and SICK sentence."""
    import re

    import pandas as pd

    whole = common.agnews_texts()
    sentences = [s.strip() for t in whole for s in t.split(". ") if len(s.split()) >= 4]
    clauses = [c.strip() for t in sentences for c in re.split(r", |; | - ", t) if len(c.split()) >= 4]
    labelled = [t for source in ("stsb", "sick") for split in ("train", "dev", "test")
                for t in pd.read_csv(common.DATA / source / f"{split}.csv", dtype=str,
                                     keep_default_na=False)[["sentence1", "sentence2"]].to_numpy().ravel()]
    return list(dict.fromkeys(whole + sentences + clauses + labelled))


def vectors(real, n: int, seed: int = 0, synthetic: str = "mixes"):
    """`n` unit vectors: the real ones first, then synthetic ones made from them (`SYNTHETIC`)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    take = min(n, len(real))
    out[:take] = real[:take]
    near = _nearest_real(real) if synthetic == "mixes" and n > take else None
    for start in range(take, n, 100_000):
        rows = min(100_000, n - start)
        source = rng.integers(0, len(real), rows)
        if near is None:        # "copies": the real vector plus noise as long as itself
            made = real[source] + rng.standard_normal((rows, real.shape[1]), dtype=np.float32) / np.sqrt(real.shape[1])
        else:                   # "mixes": the source, two of its nearest real texts, and a little noise
            weights = rng.dirichlet((2.0, 1.0, 1.0), rows).astype(np.float32)
            partners = near[source[:, None], rng.integers(0, near.shape[1], (rows, 2))]
            made = (weights[:, :1] * real[source] + weights[:, 1:2] * real[partners[:, 0]]
                    + weights[:, 2:] * real[partners[:, 1]])
            made += (MIX_NOISE * np.linalg.norm(made, axis=1, keepdims=True)
                     * rng.standard_normal((rows, real.shape[1]), dtype=np.float32) / np.sqrt(real.shape[1]))
        out[start:start + rows] = made / np.linalg.norm(made, axis=1, keepdims=True)
    return out


def _nearest_real(real):
    """Each real vector's `MIX_PARTNERS` nearest other real vectors (cosine, exact)."""
    import numpy as np

    from calibsim_gui.core.geometry.knn import top_hits

    return top_hits(real, real, "cosine", MIX_PARTNERS, exclude=np.arange(len(real)), ranges=False)[0]


def timed(fn, *args, **kwargs) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds of the process, all threads, result) of one call: on the shared
    machine the wall time follows the load, the CPU time much less."""
    import time

    cpu = time.process_time()
    seconds, result = common.timed(fn, *args, **kwargs)
    return round(seconds, 3), round(time.process_time() - cpu, 3), result


def measure(case: dict) -> dict:
    """One size, in this (fresh) process."""
    import os

    import numpy as np

    from calibsim_gui.core.analysis.neighbours import vector_neighbours
    from calibsim_gui.core.geometry.knn import ApproximateIndex, recall_at_k, top_hits
    from calibsim_gui.core.geometry.metrics import Rows

    real = np.load(case["vectors"])
    held_out = real[-QUERIES:]
    n = case["size"]
    data = vectors(real[:-QUERIES], n, synthetic=case.get("synthetic", "mixes"))
    ids, texts = [f"t{i}" for i in range(n)], [f"text {i}" for i in range(n)]
    profile = common.builtin_profile()
    start_rss = common.rss_mb()
    common.reset_peak_rss()
    seconds, cpu, result = timed(vector_neighbours, data, ids, texts, profile, k=K, memory_budget=None)
    out = {"size": n, "source": case["source"], "load_1m": round(os.getloadavg()[0], 1),
           "rss_before_mb": round(start_rss, 1), "neighbours_s": seconds, "neighbours_cpu_s": cpu,
           "neighbours_peak_rss_mb": round(common.peak_rss_mb(), 1),
           "method": result.provenance["neighbours"]["method"],
           "index": {k: v for k, v in result.provenance["neighbours"].items()
                     if k in ("links", "build_candidates", "search_candidates")},
           "duplicate_groups": result.provenance["neighbours"]["duplicate_groups"]}
    rows = np.sort(np.random.default_rng(1).choice(n, min(RECALL_ROWS, n), replace=False))
    exact, _, _, _ = top_hits(data[rows], data, "cosine", K, exclude=rows, ranges=False)
    out["neighbours_recall_at_10"] = round(recall_at_k(result.hits[rows], exact), 4)
    print(out, file=sys.stderr, flush=True)       # a long run's figures so far
    del result
    queries = vectors(held_out, 2 * QUERIES, seed=2, synthetic="copies")[QUERIES:]
    common.reset_peak_rss()
    seconds, cpu, (exact, _, _, _) = timed(top_hits, queries, data, "cosine", K)
    indexed = Rows(data)            # the corpus as the map keeps it: unit vectors computed once
    indexed.unit
    typed = sorted(timed(top_hits, queries[i:i + 1], indexed, "cosine", K)[0] for i in range(TYPED))
    out.update(search_exact_s=seconds, search_exact_cpu_s=cpu, search_peak_rss_mb=round(common.peak_rss_mb(), 1),
               typed_query_median_s=typed[TYPED // 2], typed_query_max_s=typed[-1])
    print(out, file=sys.stderr, flush=True)
    if n > SEARCH_INDEX_UP_TO:         # 100 queries stay exact there (what `search` runs)
        return out
    index_s, index_cpu, index = timed(ApproximateIndex, data, "cosine")
    seconds, cpu, (found, _) = timed(index.search, queries, K)
    out.update(search_index_s=index_s, search_index_cpu_s=index_cpu, search_approximate_s=seconds,
               search_approximate_cpu_s=cpu,
               search_recall_at_10=round(recall_at_k(found, exact), 4),
               search_peak_rss_mb=round(common.peak_rss_mb(), 1),
               search_index=index.settings.to_dict())
    return out


def encode(texts: list[str], path) -> float:
    """Encode `texts` with the built-in model (ONNX float32) into `path`; the seconds it took."""
    import numpy as np

    from calibsim_gui.core.embedding.encoding import encode_texts

    embedder = common.builtin_embedder(engine="onnx")
    seconds, encoded = common.timed(encode_texts, embedder, texts, batch_size=64)
    np.save(path, encoded.embeddings)
    return seconds


def main() -> None:
    import numpy as np

    args = common.arguments(__doc__, quick_help="2,000 texts from 300 real ones", extend=extend)
    if args.child:
        common.child_answer(measure(common.json.loads(args.child)))
        return
    work = common.Path(common.tempfile.mkdtemp(prefix="calibsim-bench-"))
    sizes = [2_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    real = args.vectors or work / "real.npy"
    texts = common.agnews_texts((300 if args.quick else REAL) + QUERIES)
    encode_s = None if args.vectors else encode(texts, real)
    n_real = len(np.load(real, mmap_mode="r")) if args.vectors else len(texts)
    print(f"{n_real:,} real vectors" + (f", encoded in {encode_s:.1f} s" if encode_s else f" from {real}"),
          flush=True)
    runs = []
    for size in sizes:
        runs.append(common.run_child("corpus_scale.py", {"size": size, "vectors": str(real),
                                                         "source": "stored vectors",
                                                         "synthetic": args.synthetic}))
        print(runs[-1], flush=True)
    end_to_end = None
    if args.from_texts and not args.quick:
        corpus = texts_100k()[:100_000 + QUERIES]         # the last 100: held-out queries
        whole = work / "texts.npy"
        end_to_end = {"texts": len(corpus) - QUERIES, "encode_s": round(encode(corpus, whole), 1)}
        end_to_end.update(common.run_child("corpus_scale.py", {"size": len(corpus) - QUERIES,
                                                               "vectors": str(whole), "source": "texts"}))
        runs.append(end_to_end)
    common.print_table([{k: v for k, v in r.items() if not isinstance(v, dict)} for r in runs])
    common.save("corpus_scale", args, {
        "runs": runs, "real_vectors": n_real - QUERIES, "queries": QUERIES, "k": K,
        "recall_rows": RECALL_ROWS, "encode_real_s": encode_s and round(encode_s, 1),
        "vectors_file": args.vectors, "end_to_end": end_to_end,
        "targets": {"neighbours_1m_recall": 0.95, "neighbours_1m_s": 1800, "neighbours_1m_peak_mb": 6000,
                    "search_1m_100_queries_s": 10}})


if __name__ == "__main__":
    main()
