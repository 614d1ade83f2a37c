"""`calibsim --self-test`: the headless, offline check that an installation works."""

import io
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from calibsim_gui import selftest
from calibsim_gui.core.embedding import models
from calibsim_gui.core.errors import ModelError


FIRST_QT_IMPORT_HOOK = textwrap.dedent("""
    import os, sys

    class FirstQtImport:
        \"\"\"Write the name of the self-test step that first imports Qt to $CALIBSIM_TEST_QT_LOG.\"\"\"

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] not in ("PySide6", "pyqtgraph"):
                return None
            sys.meta_path.remove(self)
            frame, step = sys._getframe(1), "outside any step"
            while frame is not None:
                if frame.f_code.co_name == "run_self_test" and "step" in frame.f_locals:
                    step = frame.f_locals["step"].name
                    break
                frame = frame.f_back
            try:
                with open(os.environ["CALIBSIM_TEST_QT_LOG"], "x", encoding="utf-8") as log:
                    log.write(step)
            except FileExistsError:         # a child process, after its parent
                pass
            return None

    sys.meta_path.insert(0, FirstQtImport())
""")


def _isolated_env(tmp_path) -> dict:
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "CALIBSIM_CACHE_DIR": str(tmp_path / "cache"), "CALIBSIM_STATE_DIR": str(tmp_path / "state"),
            "CALIBSIM_DATA_DIR": str(tmp_path / "data")}


@pytest.fixture(scope="module")
def self_test_run(tmp_path_factory):
    """One `calibsim --self-test` process (the real model: a minute) whose result the tests share;
    a `sitecustomize` on its path records which step first imports Qt."""
    tmp_path = tmp_path_factory.mktemp("self-test")
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(FIRST_QT_IMPORT_HOOK, encoding="utf-8")
    env = _isolated_env(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hook), env.get("PYTHONPATH")) if p)
    env["CALIBSIM_TEST_QT_LOG"] = str(tmp_path / "first-qt-import.txt")
    result = subprocess.run([sys.executable, "-m", "calibsim_gui", "--self-test"], capture_output=True,
                            text=True, env=env, timeout=600)
    return tmp_path, result


@pytest.mark.slow
def test_self_test_passes_offline_and_leaves_no_trace(self_test_run):
    tmp_path, result = self_test_run
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line.split(":")[0] for line in lines[:-1]] == [f"ok      {s.name}" for s in selftest.STEPS]
    assert lines[-1] == "calibsim self-test passed"
    report_line = next(line for line in lines if "write reports" in line)
    assert "self-test.csv" in report_line and "self-test.json" in report_line
    folder = Path(report_line.rsplit(" in ", 1)[1])
    assert not folder.exists()                          # the temporary folder is cleaned up
    assert not (tmp_path / "config" / "calibsim").exists()     # the user's settings were not touched
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


@pytest.mark.slow
def test_headless_steps_never_load_qt(self_test_run):
    """Every core step passes, and Qt is first imported by a step after them (none of the core steps,
    nor the command line before the steps run)."""
    tmp_path, result = self_test_run
    assert result.returncode == 0, result.stdout + result.stderr
    first_qt = (tmp_path / "first-qt-import.txt").read_text(encoding="utf-8")
    qt_steps = [step.name for step in selftest.STEPS if step not in selftest.CORE_STEPS]
    assert first_qt in qt_steps, f"Qt was first imported in: {first_qt}"


def test_a_failing_step_fails_the_self_test_and_skips_what_needs_it(monkeypatch):
    def broken(*args, **kwargs):
        raise ModelError("the model files are gone")

    monkeypatch.setattr(models, "load_model", broken)
    out = io.StringIO()
    assert selftest.run_self_test(selftest.CORE_STEPS, out=out) == 1
    *steps, verdict = out.getvalue().splitlines()
    parsed = [re.fullmatch(r"(ok|FAILED) +([^:]+): (.*)", line).groups() for line in steps]
    assert [(status, name) for status, name, _ in parsed] == [
        ("ok", "built-in resources"), ("ok", "library versions"),
        ("FAILED", "load the built-in model offline"), ("FAILED", "built-in reference profile"),
        ("FAILED", "score the demo pairs"), ("FAILED", "write reports")]
    reasons = [reason for _, _, reason in parsed]
    assert reasons[2] == "ModelError: the model files are gone"
    assert all(reason.startswith("skipped because") for reason in reasons[3:])
    assert verdict == "calibsim self-test FAILED (4 of 6 steps)"


def test_steps_that_all_work_exit_zero():
    out = io.StringIO()
    assert selftest.run_self_test(selftest.CORE_STEPS[:2], out=out) == 0
    assert all(line.startswith("ok") for line in out.getvalue().splitlines()[:-1])


def test_a_step_reaching_for_the_network_fails():
    def phone_home(ctx):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
        return "connected"

    out = io.StringIO()
    assert selftest.run_self_test([selftest.Step("phone home", phone_home)], out=out) == 1
    assert "refuses network connections" in out.getvalue()
