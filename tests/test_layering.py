"""DESIGN.md layering: the core and the CLI never load Qt, and torch only when a model is used."""

import subprocess
import sys
import textwrap


def test_core_and_cli_import_without_qt_or_torch():
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        import calibsim_gui.core as core
        for m in pkgutil.walk_packages(core.__path__, "calibsim_gui.core."):
            importlib.import_module(m.name)
        import calibsim_gui.cli
        loaded = {k.split(".")[0] for k in sys.modules}
        print(sorted(loaded & {"PySide6", "pyqtgraph", "shiboken6", "torch", "sentence_transformers"}))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_headless_command_never_loads_qt(tmp_path):
    code = ("import sys; from calibsim_gui.cli import main; main(['models']); "
            "print('QT' if any(k.startswith('PySide6') for k in sys.modules) else 'NOQT')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().endswith("NOQT")
