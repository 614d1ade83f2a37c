"""Launcher for calibsim (also PyInstaller's entry script)."""

import os

# calibsim never downloads: keep Hugging Face libraries offline from the first import on.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from calibsim_gui.cli import main  # noqa: E402

if __name__ == "__main__":
    import sys

    if getattr(sys, "frozen", False):       # a packaged app: let its child processes start (qt/widgets/child_process)
        import multiprocessing

        multiprocessing.freeze_support()
    raise SystemExit(main())
