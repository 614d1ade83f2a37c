"""`calibsim models`: the models calibsim can use, and the devices."""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("models", help="list usable models")
    p.add_argument("--folder", action="append", default=[], help="also inspect this local model folder")
    p.add_argument("--devices", action="store_true", help="also list devices and their availability")


def run(args) -> int:
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
