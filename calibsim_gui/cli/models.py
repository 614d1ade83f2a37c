"""`calibsim models`: the models calibsim can use, and the devices."""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("models", help="list usable models")
    p.add_argument("--folder", action="append", default=[], help="also inspect this local model folder")
    p.add_argument("--devices", action="store_true", help="also list devices and their availability")
    p.add_argument("--prepare", action="store_true",
                   help="prepare the fast (ONNX) engine of the built-in model, and of each --folder, now "
                        "(exported and checked once), and the built-in reference and language detection "
                        "in the cache folder, so the first score is as fast as the tenth")
    p.add_argument("--torch-device", metavar="DEVICE", default=None,
                   help="with --prepare: prepare the torch engine's graph on DEVICE (cpu, cuda, mps, auto) "
                        "instead, traced and checked once, so later torch runs need no sentence-transformers")


def first_run_caches(embedder) -> None:
    """Fill the cache folder with what a first score computes once: the built-in reference
    profile's checked copy and the language detector's uncompressed model."""
    from calibsim_gui.core.calibration.profile_builder import default_profile
    from calibsim_gui.core.embedding.languages import prepare_detector

    default_profile(embedder)
    prepare_detector()


def prepare(folders, torch_device: str | None = None) -> int:
    """Export and check the ONNX graph of the built-in model and of each folder (once: later loads
    reuse it), or with `torch_device` trace and check its torch graph on that device
    (`torch_graph`), and fill the first run's caches; say what it did; 2 if a model's fast engine
    cannot be prepared."""
    import time

    from calibsim_gui.core.embedding.folder_checks import check_model_folder
    from calibsim_gui.core.embedding.model_folders import resolve_model
    from calibsim_gui.core.embedding.models import load_model, load_onnx_model
    from calibsim_gui.core.errors import ModelError

    status = 0
    for spec in [None, *folders]:
        start = time.perf_counter()
        try:
            info = resolve_model(spec)
            check_model_folder(info)            # as every load does: its passing is remembered
            embedder = load_onnx_model(info) if torch_device is None else load_model(
                info, device=torch_device, engine="torch")
            if torch_device is not None and not hasattr(embedder, "graph"):     # sentence-transformers'
                raise ModelError(embedder.precision_note)
            if spec is None:
                first_run_caches(embedder)
        except ModelError as exc:
            print(f"{spec or 'the built-in model'}: the fast engine is not available ({exc}); scoring will use "
                  f"{'torch' if torch_device is None else 'sentence-transformers'}.")
            status = 2
            continue
        what = "fast engine" if torch_device is None else f"torch engine's graph on {embedder.device}"
        print(f"{info.name}: {what} ready in {time.perf_counter() - start:.1f} s ({embedder.graph})")
    return status


def run(args) -> int:
    if args.prepare:
        return prepare(args.folder, args.torch_device)
    if args.torch_device is not None:
        from calibsim_gui.core.errors import InputError

        raise InputError("--torch-device says where --prepare traces the torch engine's graph, and this "
                         "run prepares nothing.", fix=f"add --prepare (calibsim models --prepare "
                         f"--torch-device {args.torch_device})")
    from calibsim_gui.core.embedding.devices import available_devices
    from calibsim_gui.core.embedding.model_folders import discover_models

    rows = [(m.name, m.source, m.dimension or "?", m.max_seq_length or "?",
             f"{m.size_bytes / 1e6:.0f} MB", str(m.path)) for m in discover_models(args.folder)]
    header = ("name", "source", "dim", "max_len", "size", "path")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(5)]
    for row in [header] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)) + "  " + str(row[5]))
    if args.devices:
        for device, reason in available_devices().items():
            print(f"device {device}: {'available' if reason is None else reason}")
    return 0
