"""Versions and file digests that make a result traceable."""

from __future__ import annotations

import hashlib
import platform
from importlib import metadata
from pathlib import Path

import calibsim_gui

RESULT_LIBRARIES = ("numpy", "scipy", "pandas", "scikit-learn", "torch",
                    "sentence-transformers", "transformers", "onnxruntime", "tokenizers", "faiss-cpu")
"""The libraries that shape a result's numbers: their versions go into every provenance."""
TORCH_ENGINE_LIBRARIES = ("torch", "sentence-transformers", "transformers")
"""The torch engine's libraries: absent from the desktop bundle, which runs ONNX Runtime only."""


def library_versions() -> dict[str, str]:
    """calibsim's version and those of the libraries that shape its numbers."""
    versions = {"calibsim": calibsim_gui.__version__, "python": platform.python_version()}
    for name in RESULT_LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def file_digest(path) -> str:
    """sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
