"""`calibsim diagnose`: how the embeddings fill the space, raw and under each geometry fix."""

from __future__ import annotations

from calibsim_gui.cli import common, options
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.atomic import write_text_atomic
from calibsim_gui.core.io.output import dump_json

MIN_DOCUMENTS = 3         # the fewest whose spread (IsoScore, rank, random pairs) means something


def add_parser(sub) -> None:
    p = sub.add_parser("diagnose", help="how the model's embeddings fill the space, raw and under "
                                        "each geometry fix")
    p.add_argument("inputs", nargs="*",
                   help="documents to diagnose (default: the reference's background sample)")
    p.add_argument("--profile", help="reference profile whose geometry fixes are used "
                                     "(default: the built-in reference)")
    p.add_argument("--per-file", action="store_true", help="one document per file instead of per line")
    p.add_argument("--column", help="text column of CSV/JSONL inputs")
    p.add_argument("--encoding")
    p.add_argument("--labels-from-files", action="store_true",
                   help="label each document by its file: adds cluster structure beside isotropy "
                        "(silhouette with cosine and euclidean distance, Calinski-Harabasz, "
                        "Davies-Bouldin, Dunn, a logistic-regression classifier's 5-fold accuracy)")
    p.add_argument("--out", help="also write the diagnostics as .json")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    options.add_model_options(p)


def run(args) -> int:
    from calibsim_gui.core.embedding.encoding import encode_texts
    from calibsim_gui.core.geometry.space import diagnostics_table, profile_space
    from calibsim_gui.core.geometry.transforms import GEOMETRIES

    if args.out:
        out = common.check_output(args, args.out, [*args.inputs, *([args.profile] if args.profile else [])])
        if out.suffix.lower() != ".json":
            raise InputError("diagnostics are written as JSON.", path=out, fix="end --out with .json")
    if args.inputs:
        common.check_input_memory(args, args.inputs)
    embedder, cache, profile = common.model_and_references(args)
    embeddings = labels = None
    what = f"{len(profile.query_reference) if profile.query_reference is not None else 0:,} " \
           "background texts of the reference"
    if args.inputs:
        from calibsim_gui.core.io.inputs import load_documents

        docs = load_documents(args.inputs, per_file=args.per_file, column=args.column,
                              encoding=args.encoding, memory_budget=args.memory_budget)
        if len(docs.documents) < MIN_DOCUMENTS:
            raise InputError(f"{len(docs.documents)} document(s) are too few to diagnose; at least "
                             f"{MIN_DOCUMENTS} are needed.", path=", ".join(args.inputs),
                             fix="give more documents")
        progress = common.Progress(args.quiet)
        try:
            embeddings = encode_texts(embedder, docs.texts, batch_size=args.batch_size, cache=cache,
                                      progress=progress).embeddings
        finally:
            progress.close()
        labels = [str(d.source) for d in docs.documents] if args.labels_from_files else None
        what = f"{len(docs.documents):,} documents from {len(docs.files)} file(s)"
    space = profile_space(profile, embeddings, labels=labels)
    names = list(space.diagnostics)
    print(f"diagnostics of {what}; geometry fixes fitted on the reference's background")
    header = [GEOMETRIES[n].label for n in names]
    rows = diagnostics_table(space)
    width = max(len(label) for label, _ in rows) + 2
    print("".ljust(width) + "".join(h.rjust(18) for h in header))
    for label, values in rows:
        print(label.ljust(width) + "".join(values[n].rjust(18) for n in names))
    for note in dict.fromkeys(note for d in space.diagnostics.values() for note in d["notes"]):
        print(f"note: {note}")
    if args.out:
        write_text_atomic(out, dump_json({"format": "calibsim-diagnostics", "schema_version": 1,
                                          "model": embedder.fingerprint.to_dict(),
                                          "reference": profile.provenance.get("name"), "texts": what,
                                          "geometries": space.diagnostics}))
        print(f"wrote {out}")
    return 0
