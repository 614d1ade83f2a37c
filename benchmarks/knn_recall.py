"""Recall@10 of the graph index (faiss HNSW) against exact search, one build swept over the
search's candidates (efSearch), so settings can be chosen at 1 M vectors without rebuilding.

The set: `corpus_scale.vectors` (19,900 real AG News vectors, past them `--synthetic` mixes or
copies). Recall: `--rows` rows drawn at random as queries (each leaving itself out, as a set's
neighbours do), their exact top 10 over the whole set (`top_hits`) against the index's. The
build (wall, CPU-s) is timed apart from each search; `search_cpu_s_all_rows` projects a search's
CPU seconds to every row of the set (what `vector_neighbours` searches). Each (links, build
candidates) pair is one build, in this process; peak RSS is the run's.

    .venv/bin/python benchmarks/knn_recall.py --vectors /tmp/agnews20k.npy --size 1000000 \\
        --links 16 --build 40 --search 128,256,512
"""

from __future__ import annotations

import sys

import common
from corpus_scale import K, QUERIES, REAL, SYNTHETIC, encode, timed, vectors


def extend(parser) -> None:
    parser.add_argument("--vectors", type=common.Path, metavar="NPY",
                        help="real vectors already encoded (as corpus_scale.py --vectors; without it the "
                             "first AG News texts are encoded)")
    parser.add_argument("--size", type=int, default=1_000_000, help="vectors in the set (default 1,000,000)")
    parser.add_argument("--synthetic", choices=SYNTHETIC, default="mixes", help="as corpus_scale.py (default mixes)")
    parser.add_argument("--rows", type=int, default=1_000, help="query rows for recall (default 1,000)")
    parser.add_argument("--links", default="16", help="comma-separated HNSW links (M) to build with")
    parser.add_argument("--build", default="40", help="comma-separated build candidates (efConstruction)")
    parser.add_argument("--search", default="64,128,256,512", help="comma-separated search candidates (efSearch)")
    parser.add_argument("--exact", type=common.Path, metavar="NPY",
                        help="the rows' exact hits: read from this file if it exists, else written there")


def main() -> None:
    import dataclasses

    import numpy as np

    from calibsim_gui.core.geometry.knn import ApproximateIndex, IndexSettings, recall_at_k, top_hits

    args = common.arguments(__doc__, quick_help="2,000 vectors from 300 real ones, 300 rows", extend=extend)
    size, n_rows = (2_000, 300) if args.quick else (args.size, args.rows)
    real = args.vectors
    if real is None:
        real = common.Path(common.WORK) / "real.npy"
        encode(common.agnews_texts((300 if args.quick else REAL) + QUERIES), real)
    data = vectors(np.load(real)[:-QUERIES], size, synthetic=args.synthetic)
    rows = np.sort(np.random.default_rng(1).choice(size, min(n_rows, size), replace=False))
    if args.exact and args.exact.exists():
        exact_s, exact_cpu, exact = None, None, np.load(args.exact)
    else:
        exact_s, exact_cpu, (exact, _, _, _) = timed(top_hits, data[rows], data, "cosine", K, exclude=rows,
                                                     ranges=False)
        if args.exact:
            np.save(args.exact, exact)
    print(f"{size:,} vectors ({args.synthetic}); exact top {K} of {len(rows):,} rows: {exact_s} s", flush=True)
    runs = []
    for links in (int(x) for x in args.links.split(",")):
        for build in (int(x) for x in args.build.split(",")):
            common.reset_peak_rss()
            build_s, build_cpu, index = timed(ApproximateIndex, data, "cosine",
                                              settings=IndexSettings(links, build))
            for search in (int(x) for x in args.search.split(",")):
                index.settings = dataclasses.replace(index.settings, search_candidates=search)
                search_s, search_cpu, (found, _) = timed(index.search, data[rows], K, exclude=rows)
                runs.append({"links": links, "build_candidates": build, "search_candidates": search,
                             "build_s": build_s, "build_cpu_s": build_cpu, "search_s": search_s,
                             "search_cpu_s": search_cpu,
                             "search_cpu_s_all_rows": round(search_cpu * size / len(rows), 1),
                             "recall_at_10": round(recall_at_k(found, exact), 4),
                             "peak_rss_mb": round(common.peak_rss_mb(), 1)})
                print(runs[-1], file=sys.stderr, flush=True)
            del index
    common.print_table(runs)
    name = "knn_recall" if args.quick else \
        f"knn_recall_{size // 1000}k_{args.synthetic}_links{args.links}_build{args.build}".replace(",", "-")
    common.save(name, args, {"size": size, "synthetic": args.synthetic, "rows": len(rows), "k": K,
                             "exact_rows_s": exact_s, "exact_rows_cpu_s": exact_cpu, "runs": runs})


if __name__ == "__main__":
    main()
