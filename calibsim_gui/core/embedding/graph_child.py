"""``python -m calibsim_gui.core.embedding.graph_child FOLDER DEVICE PRECISION [--allow-pickle]``:
the child process in which `graph_preparation` has the app's torch graphs prepared."""

from __future__ import annotations

import signal
import sys

from calibsim_gui.core.embedding.model_folders import resolve_model
from calibsim_gui.core.embedding.torch_graph import load_torch_engine
from calibsim_gui.core.errors import ModelError


def main(argv: list[str]) -> int:
    """Prepare the graph of the model in folder ``argv[0]`` on device ``argv[1]`` in precision
    ``argv[2]`` (``--allow-pickle``: its weights may be pickles): 0 when it is ready, 2 when the
    model runs through sentence-transformers (the reason on stderr)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))     # stopped: atomic writes remove their temporaries
    folder, device, precision, *flags = argv
    try:
        embedder = load_torch_engine(resolve_model(folder), device=device, precision=precision,
                                     allow_pickle="--allow-pickle" in flags)
    except ModelError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not hasattr(embedder, "graph"):
        print(embedder.precision_note, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
