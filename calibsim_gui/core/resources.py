"""The one place that knows where calibsim's resources live (source tree or frozen bundle)."""

from __future__ import annotations

import sys
from pathlib import Path


def resources_dir() -> Path:
    """`resources/` beside the package, or inside a PyInstaller bundle when frozen."""
    if getattr(sys, "frozen", False):
        return Path(getattr(sys, "_MEIPASS", Path(sys.executable).parent)) / "resources"
    return Path(__file__).resolve().parents[2] / "resources"


def resource_path(*parts: str) -> Path:
    """A file or folder inside `resources/`, e.g. ``resource_path("icons", "calibsim.png")``."""
    return resources_dir().joinpath(*parts)
