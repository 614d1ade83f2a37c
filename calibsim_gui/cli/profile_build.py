"""`calibsim profile build`: a reference profile from a background corpus and anchors."""

from __future__ import annotations

from pathlib import Path

from calibsim_gui.cli import common, options
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.provenance import file_digest
from calibsim_gui.core.references.anchors import load_anchors

# More background pairs than this only add memory: percentiles are already within 0.001.
_MAX_BACKGROUND_PAIRS = 10_000_000


def add_parser(psub) -> None:
    b = psub.add_parser("build", help="build a profile from a background corpus and anchors")
    b.add_argument("--background", nargs="+", default=[], metavar="FILE",
                   help="background corpus: .txt/.md (one sentence per line), folders, CSV/JSONL; "
                        "with --engine ray also quoted globs and s3://... URIs")
    b.add_argument("--column", help="text column of CSV/JSONL background files")
    b.add_argument("--clean-html", action="store_true",
                   help="clean HTML leftovers off the background texts before building, as the app's "
                        "\"Clean them before building\": decode entities (&lt; &#39; quot;), remove "
                        "tags; texts left empty or duplicated are dropped (nothing is done to a corpus "
                        "without leftovers)")
    b.add_argument("--anchors", help="anchor ladder (.json or .csv); default: the built-in STS ladder")
    b.add_argument("--pairs", type=options.whole_number(1, _MAX_BACKGROUND_PAIRS), default=20_000,
                   help=f"random background pairs, 1 to {_MAX_BACKGROUND_PAIRS:,} (default 20,000)")
    b.add_argument("--seed", type=options.whole_number(0, 2**32 - 1), default=0,
                   help="seed that draws the background pairs, 0 to 4,294,967,295 (default 0)")
    b.add_argument("--encoding", help="text encoding of the background files (default: UTF-8/UTF-16 with BOM)")
    b.add_argument("--band-pairs", metavar="FILE",
                   help="labelled pairs (score,sentence1,sentence2) on which to measure the human "
                        "agreement band: where people's scores fall around each calibrated score; "
                        "use pairs you will not evaluate on")
    b.add_argument("--band-scale", type=options.scale, default="0,5",
                   help="the scale of --band-pairs' scores (default 0,5)")
    b.add_argument("--out", required=True, help="profile file to write (.calibsim-profile)")
    b.add_argument("--force", action="store_true", help="replace an existing profile")
    b.add_argument("--metrics", type=options.metrics,
                   help="comma-separated metrics to build references for (default: every metric, "
                        "scaled90, scaled50, wrd and radial included)")
    b.add_argument("--abtt-directions", type=options.whole_number(1, 100_000), metavar="D",
                   help="all-but-the-top: number of top principal directions removed (default: "
                        "dim/100, e.g. 4 for 384-d)")
    b.add_argument("--whiten-dim", type=options.whole_number(1, 100_000), metavar="K",
                   help="whitening: keep the top K whitened dimensions (default: every direction "
                        "the background spans)")
    b.add_argument("--soft-factors", type=options.whole_number(1, 100_000), metavar="K",
                   help="soft cosine (geometry fix soft): factors kept of the background's "
                        "correlation matrix S (default: 64)")
    b.add_argument("--engine", choices=["auto", "torch", "onnx", "local", "ray"], default="auto",
                   help=options.ENGINE_HELP + "; local: the same as auto; ray: encode the background "
                        "on a Ray cluster, with the engine a local run would choose on each worker "
                        "(ONNX on CPUs, torch on GPUs) (pip install 'calibsim[cluster]')")
    b.add_argument("--address", help="with --engine ray: address of a running Ray cluster (e.g. "
                                     "auto, or ray://head:10001); default: start a local Ray instance")
    b.add_argument("--workers", type=options.whole_number(1, 10_000), metavar="N",
                   help="with --engine ray: encoder workers (default: the cluster's GPUs, else its "
                        "CPUs; a local instance gets N CPUs)")
    options.add_model_options(b, engine=False)


def build(args, out: Path) -> int:
    """Build the profile of `args` and save it to `out`, whose name was checked."""
    from calibsim_gui.core.calibration.profile_builder import build_profile
    from calibsim_gui.core.calibration.profile_settings import ProfileSettings
    from calibsim_gui.core.geometry.transforms import geometry_settings
    from calibsim_gui.core.io.inputs import load_documents

    on_ray = args.engine == "ray"
    if not on_ray and (args.address or args.workers):
        raise InputError("--address and --workers apply to the ray engine only.", fix="add --engine ray")
    fixes = geometry_settings(abtt_directions=args.abtt_directions, whiten_dim=args.whiten_dim,
                              soft_factors=args.soft_factors)
    if on_ray and args.vectors:
        raise InputError("--engine ray runs a model on the cluster's machines; vectors files are read here.",
                         fix="leave out --engine ray, or give --model")
    if fixes and not args.background:
        raise InputError("--abtt-directions, --whiten-dim and --soft-factors set geometry fixes, which "
                         "are fitted on a background.", fix="add --background FILES")
    if on_ray and not args.background:
        raise InputError("--engine ray builds a background: give it files with --background.",
                         fix="add --background FILES, or leave out --engine ray for an anchors-only profile")
    if on_ray:
        from calibsim_gui.core.calibration.cluster import check_reachable, checked_sources, import_ray

        import_ray()
        checked_sources(args.background, args.encoding)     # before the model loads or Ray starts
        if args.address:
            check_reachable(args.address)
    elif args.background:
        common.check_input_memory(args, args.background, pairs=args.pairs)
    docs = load_documents(args.background, column=args.column, encoding=args.encoding,
                          memory_budget=args.memory_budget) if args.background and not on_ray else None
    if args.clean_html and on_ray:
        raise InputError("--clean-html cleans a background read on this machine, not on Ray.",
                         fix="leave out --engine ray, or clean the files first")
    cleaned = False
    if docs is not None and args.clean_html:
        from calibsim_gui.core.io.text_cleaning import clean_documents, find_html_leftovers

        if find_html_leftovers(docs.texts):          # as the app: only a corpus with leftovers
            docs, cleaned = clean_documents(docs), True
    if docs is not None:
        for note in docs.notes:
            common.say(args, f"background: {note}")
        common.say(args, f"background: {len(docs.documents)} sentences from {len(docs.files)} files")
    anchors = load_anchors(args.anchors) if args.anchors else None
    embedder = common.load_model(args)
    progress = common.Progress(args.quiet)
    settings = ProfileSettings(anchors=anchors, n_pairs=args.pairs, seed=args.seed, metrics=args.metrics,
                               geometry_settings=fixes, clean_html=cleaned, name=out.name)
    run = dict(cache=common.embedding_cache(args), batch_size=args.batch_size)
    try:
        if on_ray:
            profile = _build_on_ray(args, embedder, settings, progress, **run)
        else:
            profile = build_profile(embedder, docs, settings, progress=progress,
                                    memory_budget=args.memory_budget, **run)
        if args.band_pairs:
            _fit_band(args, profile, embedder)
    finally:
        progress.close()
    profile.save(out)
    for warning in profile.warnings():
        common.say(args, f"warning: {warning}")
    print(f"wrote {out} ({profile.background_pairs} background pairs, "
          f"{len(profile.anchors.pairs)} anchor pairs)")
    return 0


def _build_on_ray(args, embedder, settings, progress, **run):
    """The profile with its background read and encoded on a Ray cluster."""
    from calibsim_gui.core.calibration.cluster import build_profile_on_ray

    def progress_with_rate(done, total, message):
        progress(done, total, message)
        if progress.bar is not None:
            progress.bar.set_postfix_str(message)

    common.say(args, "background: reading and encoding on Ray "
                     + (f"at {args.address}" if args.address else "(a local instance)"))
    info = embedder.info
    profile = build_profile_on_ray(
        embedder, args.background, settings, model=None if info.source == "built-in" else str(info.path),
        device=args.device, precision=embedder.precision, allow_pickle=args.allow_pickle,
        column=args.column, encoding=args.encoding, workers=args.workers,
        address=args.address, progress=progress_with_rate, **run)
    ray_info = profile.provenance["ray"]
    common.say(args, f"background: {profile.provenance['background']['sentences']:,} distinct "
                     f"sentences of {ray_info['sentences_read']:,} read, {ray_info['blocks']} blocks "
                     f"on {ray_info['workers']} {ray_info['worker_device']} workers "
                     f"({ray_info['worker_engine']} engine)")
    return profile


def _fit_band(args, profile, embedder) -> None:
    """Measure the human agreement band of `profile` on ``--band-pairs``."""
    from calibsim_gui.core.calibration.human import load_human_pairs
    from calibsim_gui.core.calibration.profile_builder import fit_agreement_bands

    low, high = args.band_scale
    pairs = load_human_pairs(args.band_pairs, scale=args.band_scale, encoding=args.encoding,
                             memory_budget=args.memory_budget)
    fit_agreement_bands(profile, embedder, pairs.texts_a, pairs.texts_b, (pairs.human - low) / (high - low),
                        cache=common.embedding_cache(args), batch_size=args.batch_size,
                        source={"files": [{"name": Path(args.band_pairs).name,
                                           "sha256": file_digest(args.band_pairs)}], "scale": [low, high]})
    common.say(args, f"human agreement band: measured on {len(pairs.human):,} labelled pairs of "
                     f"{args.band_pairs}")
