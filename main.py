"""Launcher for calibsim (also PyInstaller's entry script)."""

from calibsim_gui.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
