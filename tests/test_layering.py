"""docs/architecture.md's layering: the core, the session model, the CLI and the Python API never
load Qt, and torch only when a model is used."""

import subprocess
import sys
import textwrap


def test_core_session_cli_and_api_import_without_qt_or_torch():
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        import calibsim_gui.core as core
        import calibsim_gui.session as session
        for package in (core, session):
            for m in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                importlib.import_module(m.name)
        import calibsim_gui.cli
        import calibsim
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


def _product_modules(package: str = ""):
    import ast
    from pathlib import Path

    import calibsim_gui

    root = Path(calibsim_gui.__file__).parent
    for path in sorted((root / package).rglob("*.py")):
        yield path.relative_to(root.parent), ast.parse(path.read_text(encoding="utf-8"))


def test_no_core_import_hides_inside_a_function():
    """In the core and the session model, function-level imports are for heavy optional libraries
    only (torch, onnxruntime, ray, ...), never to dodge a cycle (cycles are checked by lint-imports)."""
    import ast

    hidden = []
    for path, tree in [*_product_modules("core"), *_product_modules("session")]:
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in (sub for f in functions for sub in ast.walk(f)):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom) else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if (isinstance(node, ast.ImportFrom) and node.level) or any(
                    n.split(".")[0] == "calibsim_gui" for n in names):
                hidden.append(f"{path}:{node.lineno}")
    assert sorted(set(hidden)) == []


def test_no_module_imports_another_modules_private_names():
    import ast

    private = [f"{path}:{node.lineno} {node.module}.{alias.name}"
               for path, tree in _product_modules() for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("calibsim_gui")
               for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert private == []


def test_rooms_stay_small():
    """docs/architecture.md: core and session modules up to 600 lines, other window modules up to 650, the
    main window up to 500 (it is wiring), each command-line module up to 300."""
    from pathlib import Path

    import calibsim_gui

    root = Path(calibsim_gui.__file__).parent
    limits = [(path, 600) for package in ("core", "session") for path in (root / package).rglob("*.py")]
    limits += [(path, 500 if path.name == "main_window.py" else 600) for path in (root / "qt").rglob("*.py")]
    limits += [(path, 300) for path in (root / "cli").glob("*.py")]
    too_big = {str(path.relative_to(root)): n for path, limit in limits
               if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit}
    assert too_big == {}
