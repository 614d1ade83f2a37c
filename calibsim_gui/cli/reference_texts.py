"""`calibsim reference-texts`: every text a profile (and a run) needs vectors for, to embed with any model."""

from __future__ import annotations

from calibsim_gui.cli import common


def add_parser(sub) -> None:
    p = sub.add_parser("reference-texts",
                       help="write every text a profile needs vectors for (and your files' texts), to embed "
                            "with any model and use with --vectors")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="texts file to write: .txt (one text per line) or .jsonl (one JSON string per line, "
                        "for texts holding line breaks)")
    p.add_argument("--force", action="store_true", help="replace an existing file")
    p.add_argument("--anchors", action="append", default=[], metavar="FILE",
                   help="also the texts of this anchor ladder (.json or .csv; repeatable); the built-in "
                        "ladder's are always written")
    p.add_argument("--pairs", nargs="+", default=[], metavar="FILE",
                   help="also both texts of every pair of these CSV/TSV/JSONL files (to score or to fit on)")
    p.add_argument("--text-a", help="column of the first text of --pairs files (default: auto-detected)")
    p.add_argument("--text-b", help="column of the second text of --pairs files (default: auto-detected)")
    p.add_argument("--documents", nargs="+", default=[], metavar="FILE",
                   help="also the texts of these corpora, queries or background files: text files (one "
                        "per line), folders, CSV/JSONL files")
    p.add_argument("--column", help="text column of CSV/JSONL --documents files")
    p.add_argument("--per-file", action="store_true", help="one --documents text per file instead of per line")
    p.add_argument("--encoding", help="text encoding of the inputs (default: UTF-8/UTF-16 with BOM)")
    p.add_argument("--missing-from", action="append", default=[], metavar="VECTORS",
                   help="write only the texts that have no vector in this vectors file yet (repeatable)")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")


def run(args) -> int:
    from calibsim_gui.core.embedding.vectors_file import read_vectors_file, write_texts
    from calibsim_gui.core.io.inputs import load_documents, load_pairs
    from calibsim_gui.core.references.anchors import load_anchors
    from calibsim_gui.core.references.texts import texts_to_embed

    inputs = [*args.anchors, *args.pairs, *args.documents, *args.missing_from]
    out = common.check_output(args, args.out, inputs, formats=(".txt", ".jsonl"))
    tables = [load_pairs(path, text_a=args.text_a, text_b=args.text_b, encoding=args.encoding)
              for path in args.pairs]
    documents = [load_documents(args.documents, per_file=args.per_file, column=args.column,
                                encoding=args.encoding)] if args.documents else []
    texts = texts_to_embed([load_anchors(path) for path in args.anchors], tables, documents)
    have = {t for path in args.missing_from for t in read_vectors_file(path)[0]}
    if have:
        texts = [t for t in texts if t not in have]
    write_texts(out, texts)
    print(f"wrote {len(texts):,} texts to {out}" + (" (those without a vector yet)" if have else
                                                    " (reference sentences in 13 languages, anchor ladders, "
                                                    "your files' texts)"))
    common.say(args, f"next: embed every text of {out.name} with your model, in order, save the vectors as "
                     f"{out.with_suffix('.npy').name} beside it (numpy.save), and pass --vectors "
                     f"{out.with_suffix('.npy').name} to score, profile build or search")
    return 0
