"""Corpora at scale: neighbours, duplicates and search over 10 k, 100 k and 1 M texts, no N x N matrix.

Vectors: the first 20,000 distinct AG News titles and descriptions, encoded once with the built-in
model (ONNX Runtime float32). A size past 20,000 is made of those real vectors and, for the rest,
real vectors with Gaussian noise as long as the vector itself (each ``normalise(v + |v| g/sqrt(d))``,
cosine ~0.7 to its source: a new point near the real one, not a copy of it); "stored vectors", the
encoding left out.

``--from-texts`` runs 100,000 distinct real texts end to end as a user does (`texts_100k`: every AG
News title and description, then their sentences and clauses, then STS-B and SICK sentences; the
texts file goes to a temporary folder): `calibsim neighbours FILE --memory-budget 4GB` writing
neighbours, near-duplicate pairs and duplicate groups, run twice in fresh processes, the first
encoding the texts into the embedding cache (`--cache DIR` keeps it for a cheaper rerun), the second
finding every vector there (its wall time: the stages after encoding); wall and CPU time and peak
RSS of each process (`os.wait4`); then, in a fresh process, the app's map of the set (`map_input`:
PCA, vectors from the cache; and t-SNE, `tsne_2d`) and recall@10 of the neighbours the command wrote
against exact (`top_hits`) on 2,000 random rows.

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

    .venv/bin/python benchmarks/corpus_scale.py [--quick] [--sizes 10000,100000]
    nice .venv/bin/python benchmarks/corpus_scale.py --from-texts [--texts 100000] [--cache DIR] [--quick]
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
                        help="instead of --sizes: `calibsim neighbours` and the map end to end on "
                             "--texts real texts (--quick: 1,000)")
    parser.add_argument("--texts", type=int, default=100_000, help="texts of --from-texts (default 100,000)")
    parser.add_argument("--cache", type=common.Path, metavar="DIR",
                        help="embedding cache folder of --from-texts (default: an empty one, removed after)")
    parser.add_argument("--memory-budget", default="4GB", help="--memory-budget of --from-texts (default 4GB)")


def texts_100k() -> list[str]:
    """102,073 distinct real texts, in this order: the 35,258 AG News titles and descriptions, their
    sentences (split at ". ", 4 words or more; 13,690 new), the sentences' clauses (split at ", ",
    "; " and " - ", 4 words or more; 31,579 new), then the STS-B and SICK sentences (21,546 new:
    the first 100,000 texts hold 19,473 of them). Each text is kept once, where it first comes."""
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


def from_texts(args) -> None:
    """`calibsim neighbours` on real texts as a user runs it, twice (encoding, then from the
    cache), then the app's map and the neighbours' recall@10 in a fresh process (the docstring)."""
    import os

    corpus = texts_100k()
    n = 1_000 if args.quick else args.texts
    if n > len(corpus):
        raise SystemExit(f"--texts: at most {len(corpus):,} distinct real texts")
    work = common.Path(common.tempfile.mkdtemp())
    path = work / "texts.txt"
    path.write_text("\n".join(corpus[:n]) + "\n", encoding="utf-8")
    cache = args.cache or common.Path(os.environ["CALIBSIM_CACHE_DIR"])
    cache.mkdir(parents=True, exist_ok=True)
    caches = {"CALIBSIM_CACHE_DIR": str(cache), "CALIBSIM_ONNX_DIR": common.prepared_graphs()}   # as installed
    env = {**os.environ, **caches, "PYTHONPATH": str(common.REPO)}
    outputs = {name: work / f"{name}.csv" for name in ("neighbours", "pairs", "groups")}
    command = ["calibsim", "neighbours", path.name, "--memory-budget", args.memory_budget,
               "--out", outputs["neighbours"].name, "--pairs-out", outputs["pairs"].name,
               "--groups-out", outputs["groups"].name, "--force"]
    print(" ".join(command), f"(in {work}, cache {cache})", flush=True)
    runs = []
    for stage in ("first run", "cached run"):
        runs.append({"stage": stage, **cli_run([common.sys.executable, "-m", "calibsim_gui", *command[1:]],
                                               work, env)})
        print(runs[-1], flush=True)
    found = common.run_child("corpus_scale.py", {"texts": str(path), "neighbours": str(outputs["neighbours"]),
                                                 "cache": str(cache)}, env=caches)
    print(found, flush=True)
    common.print_table([{k: v for k, v in r.items() if not isinstance(v, list)} for r in runs])
    common.save(f"corpus_scale_{n // 1000}k_texts", args, {
        "texts": n, "made_from": " ".join(texts_100k.__doc__.split()),
        "command": " ".join(command), "memory_budget": args.memory_budget, "runs": runs,
        "encoding_s": round(runs[0]["wall_s"] - runs[1]["wall_s"], 1),     # 0 when --cache held every vector
        "encoding_cpu_s": round(runs[0]["cpu_s"] - runs[1]["cpu_s"], 1),
        "after_encoding_s": runs[1]["wall_s"], "map_and_recall": found, "k": K,
        "recall_rows": RECALL_ROWS, "targets": {"after_encoding_s": 300, "peak_mb": 4000}})


def cli_run(command: list[str], folder, env: dict) -> dict:
    """Run `command` in `folder`: its wall and CPU seconds, its peak RSS (`os.wait4`, this process
    alone), the load average before and after, and what it printed."""
    import os
    import subprocess
    import time

    load = os.getloadavg()[0]
    with open(folder / "stdout.txt", "w") as out, open(folder / "stderr.txt", "w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{command} failed:\n{(folder / 'stderr.txt').read_text()[-3000:]}")
    return {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "load_1m_before": round(load, 1),
            "load_1m_after": round(os.getloadavg()[0], 1),
            "printed": (folder / "stdout.txt").read_text().splitlines()}


def measure_map(case: dict) -> dict:
    """In this (fresh) process: the app's map of the texts (`map_input`, PCA, every vector from the
    cache; then `tsne_2d`), and recall@10 of the neighbours file against exact on `RECALL_ROWS` rows."""
    import numpy as np
    import pandas as pd

    from calibsim_gui.core.analysis.projection import map_input, tsne_2d
    from calibsim_gui.core.embedding.cache import EmbeddingCache
    from calibsim_gui.core.geometry.knn import recall_at_k, top_hits
    from calibsim_gui.core.io.inputs import load_documents

    import os

    os.environ["CALIBSIM_CACHE_DIR"] = case["cache"]      # the runs' cache, not the one `common` made
    docs = load_documents([case["texts"]])
    embedder = common.builtin_embedder(engine="onnx")
    out = {"rss_before_mb": round(common.rss_mb(), 1)}
    common.reset_peak_rss()
    with EmbeddingCache() as cache:
        out["map_pca_s"], out["map_pca_cpu_s"], text_map = timed(map_input, docs, embedder, cache=cache)
    out["map_pca_peak_rss_mb"] = round(common.peak_rss_mb(), 1)
    common.reset_peak_rss()
    out["map_tsne_s"], out["map_tsne_cpu_s"], _ = timed(tsne_2d, text_map.vectors)
    out["map_tsne_peak_rss_mb"] = round(common.peak_rss_mb(), 1)
    n = len(docs.ids)
    index = pd.Series(np.arange(n), index=docs.ids)
    table = pd.read_csv(case["neighbours"], usecols=["doc_id", "neighbour_id", "rank"])
    hits = np.full((n, K), -1, dtype=np.int64)
    hits[index[table["doc_id"]].to_numpy(), table["rank"].to_numpy() - 1] = index[table["neighbour_id"]].to_numpy()
    rows = np.sort(np.random.default_rng(1).choice(n, min(RECALL_ROWS, n), replace=False))
    exact, _, _, _ = top_hits(text_map.vectors[rows], text_map.vectors, "cosine", K, exclude=rows, ranges=False)
    out["neighbours_recall_at_10"] = round(recall_at_k(hits[rows], exact), 4)
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
        case = common.json.loads(args.child)
        common.child_answer(measure_map(case) if "texts" in case else measure(case))
        return
    if args.from_texts:
        from_texts(args)
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
    common.print_table([{k: v for k, v in r.items() if not isinstance(v, dict)} for r in runs])
    common.save("corpus_scale", args, {
        "runs": runs, "real_vectors": n_real - QUERIES, "queries": QUERIES, "k": K,
        "recall_rows": RECALL_ROWS, "encode_real_s": encode_s and round(encode_s, 1),
        "vectors_file": args.vectors,
        "targets": {"neighbours_1m_recall": 0.95, "neighbours_1m_s": 1800, "neighbours_1m_peak_mb": 6000,
                    "search_1m_100_queries_s": 10}})


if __name__ == "__main__":
    main()
