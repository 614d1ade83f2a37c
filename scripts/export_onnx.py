"""Export a model folder for the ONNX engine: a folder that encodes without torch.

The output holds the source's configs and tokenizer, its graph in ``onnx/model.onnx`` (exported
with torch, optimised by ONNX Runtime and checked to match torch float32 within 1e-5) and
``onnx/calibsim-export.json``. The torch weights are left out. The desktop bundle ships the
built-in model this way, where the manifest keeps the source's fingerprint, so the built-in
profile fits it. Any other exported folder has no weights to check its graph against: calibsim
runs it only with --trust-folder-graph, under its own fingerprint, marked unverified.

    .venv/bin/python scripts/export_onnx.py build/onnx-model            # the built-in model
    .venv/bin/python scripts/export_onnx.py out/ --model path/to/folder
"""

from __future__ import annotations

import argparse
import sys
import time

from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.embedding.model_folders import fingerprint_folder, resolve_model
from calibsim_gui.core.embedding.onnx_export import export_folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to write (must not exist, or be empty)")
    parser.add_argument("--model", default=None, help="model folder or name (default: the built-in model)")
    parser.add_argument("--allow-pickle", action="store_true",
                        help="allow a source whose weights exist only as pickle (.bin) files")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        info = resolve_model(args.model)
        out = export_folder(info, args.out, allow_pickle=args.allow_pickle)
        fingerprint = fingerprint_folder(info.path, info.name)
    except CalibsimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {out} from {fingerprint.id} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
