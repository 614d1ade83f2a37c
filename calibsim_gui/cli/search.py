"""`calibsim search`: the documents of a corpus ranked for each query, raw and calibrated."""

from __future__ import annotations

from calibsim_gui.cli import common, options


def add_parser(sub) -> None:
    p = sub.add_parser("search", help="rank the documents of a corpus for each query, with raw and "
                                      "calibrated scores")
    p.add_argument("queries", nargs="+", metavar="QUERIES",
                   help="queries: text files (one per line), folders, or CSV/JSONL files")
    p.add_argument("--corpus", nargs="+", required=True, metavar="DOCS",
                   help="documents to search: text files (one per line), folders, or CSV/JSONL files")
    p.add_argument("--top-k", type=options.whole_number(1, 10_000), default=10, metavar="K",
                   help="hits kept per query, 1 to 10,000 (default 10)")
    p.add_argument("--method", default="auto", choices=["auto", "exact", "approximate"],
                   help="exact: every query against every document, in blocks; approximate: a graph "
                        "index of the corpus (faiss HNSW); auto (default): exact unless an index is "
                        "faster (tens of thousands of queries over a large corpus)")
    p.add_argument("--profile", help="reference profile (default: the built-in reference)")
    p.add_argument("--metric", type=options.metric, default="cosine")
    p.add_argument("--geometry", type=options.geometry, default="none", metavar="FIX",
                   help="search under a geometry fix fitted on the background: center, whiten, abtt or soft")
    p.add_argument("--query-column", help="text column of CSV/JSONL query files")
    p.add_argument("--column", help="text column of CSV/JSONL corpus files")
    p.add_argument("--per-file", action="store_true",
                   help="one corpus document per file instead of per line")
    p.add_argument("--encoding", help="text encoding of the inputs (default: UTF-8/UTF-16 with BOM)")
    p.add_argument("--out", help="output by extension: .html/.pdf report, .xlsx, .json, .csv/.tsv table")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    options.add_report_options(p)
    options.add_model_options(p)


def run(args) -> int:
    from calibsim_gui.core.analysis.search import search
    from calibsim_gui.core.io.inputs import load_documents

    inputs = [*args.queries, *args.corpus, *([args.profile] if args.profile else [])]
    common.check_outputs(args, inputs)
    common.check_input_memory(args, [*args.queries, *args.corpus])
    queries = load_documents(args.queries, column=args.query_column, encoding=args.encoding,
                             memory_budget=args.memory_budget)
    corpus = load_documents(args.corpus, per_file=args.per_file, column=args.column,
                            encoding=args.encoding, memory_budget=args.memory_budget)
    for what, docs in (("queries", queries), ("corpus", corpus)):
        for note in docs.notes:
            common.say(args, f"{what}: {note}")
    embedder, cache, profile = common.model_and_references(args)
    progress = common.Progress(args.quiet)
    try:
        hits = search(queries, corpus, embedder, profile, metric=args.metric, top_k=args.top_k,
                      geometry=args.geometry, cache=cache, batch_size=args.batch_size,
                      progress=progress, memory_budget=args.memory_budget, method=args.method)
    finally:
        progress.close()
    if not args.out:
        if not args.quiet:
            _print_search_summary(hits)
        print("(add --out FILE.csv, .xlsx, .json, .html or .pdf to save every hit)")
        return 0
    common.say(args, f"{len(queries.texts):,} queries x {len(corpus.texts):,} documents, "
               f"top {hits.provenance['search']['top_k']} each")
    return common.write_outputs(args, hits, profile, inputs=inputs, metric=args.metric)


def _print_search_summary(hits, *, per_query: int = 3, queries: int = 10) -> None:
    """Each query's best hits: rank, raw, calibrated, query z-score, document."""
    frame, search = hits.frame, hits.provenance["search"]
    metric = search["metric"]
    print(f"{search['queries']['count']:,} queries against {search['corpus']['count']:,} documents, "
          f"top {search['top_k']} by {metric}" + ("" if search["geometry"] == "none"
                                                  else f" under {search['geometry']}"))
    z = f"{metric}_query_zscore"
    for n, (_, group) in enumerate(frame.groupby("query_id", sort=False)):
        if n == queries:
            print(f"... and {search['queries']['count'] - queries:,} more queries (add --out to save all)")
            break
        print(f"\nquery {group['query_id'].iloc[0]}: {common.short(group['query'].iloc[0])}")
        for _, row in group.head(per_query).iterrows():
            zscore = f"  z {row[z]:+6.2f}" if z in row else ""
            print(f"  {row['rank']:>3}. raw {row[f'{metric}_raw']:.4f}  calibrated "
                  f"{row[f'{metric}_calibrated']:.3f}{zscore}  {common.short(row['document'], 60)}")
    print(f"\n{metric}_local_minmax (in --out) is local to each query: not comparable across queries")
