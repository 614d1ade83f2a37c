"""`calibsim --version` and `calibsim doctor`: what a user reads, and the exit status they get."""

import json
import os
import subprocess
import sys
import time
from importlib import metadata

import pytest

import calibsim_gui
from calibsim_gui import cli
from calibsim_gui.core import doctor
from calibsim_gui.core.embedding import devices

_QT_FAILURE = """\
qt.core.library: "/x/PySide6/Qt/plugins/platforms/libqxcb.so" cannot load: Cannot load library \
/x/PySide6/Qt/plugins/platforms/libqxcb.so: libxcb-cursor.so.0: cannot open shared object file: No such file or directory
qt.qpa.plugin: From 6.5.0, xcb-cursor0 or libxcb-cursor0 is needed to load the Qt xcb platform plugin.
qt.qpa.plugin: Could not load the Qt platform plugin "xcb" in "" even though it was found.
This application failed to start because no Qt platform plugin could be initialized.
"""


@pytest.fixture
def qt_probe(monkeypatch):
    """Replace the child Qt process (and ldd) by a canned answer: set ``qt_probe.result``."""

    class Probe:
        result = (0, "platform=xcb\n")
        ldd = []

    monkeypatch.setattr(doctor, "probe_window", lambda timeout=None: Probe.result)
    monkeypatch.setattr(doctor, "ldd_missing", lambda platform_name: Probe.ldd)
    return Probe


def _doctor(capsys, *args):
    code = cli.main(["doctor", *args])
    return code, capsys.readouterr().out


def _line(out, name):
    return " ".join(next(line for line in out.splitlines() if line.startswith(name + ":")).split())


def test_version_is_the_installed_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"calibsim {metadata.version('calibsim')}"
    assert calibsim_gui.__version__ == metadata.version("calibsim")


def test_report_names_versions_device_cache_and_memory(qt_probe, capsys):
    code, out = _doctor(capsys)
    assert code == 0
    assert f"calibsim {calibsim_gui.__version__}" in _line(out, "versions")
    assert f"torch {metadata.version('torch')}" in _line(out, "versions")
    assert _line(out, "device").startswith(f"device: {devices.resolve_device('auto')} (--device auto")
    assert os.environ["CALIBSIM_CACHE_DIR"] in _line(out, "cache")
    assert "budget" in _line(out, "memory")
    assert _line(out, "window") == "window: Qt can open a window (platform xcb)"
    assert "ok: the command line works" in out


@pytest.mark.parametrize("bf16, expected", [
    ("1", "bfloat16 here (CPU has AVX512-BF16)"),
    ("0", "float32 here: this CPU has no bfloat16 instructions (AMX-BF16 or AVX512-BF16)"),
])
def test_precision_line_says_default_and_what_auto_would_do(qt_probe, monkeypatch, capsys, bf16, expected):
    monkeypatch.setattr(devices, "resolve_device", lambda device="auto": "cpu")
    monkeypatch.setenv("CALIBSIM_CPU_BF16", bf16)
    _, out = _doctor(capsys)
    assert _line(out, "precision") == ("precision: float32 (default: identical results on every machine); "
                                       f"--precision auto would use {expected}")


@pytest.mark.parametrize("device, expected", [("cpu", "onnx"), ("cuda", "torch")])
def test_engine_line_says_what_auto_picks(qt_probe, monkeypatch, capsys, device, expected):
    monkeypatch.setattr(doctor, "check_device", lambda: doctor.Check("device", "ok", device,
                                                                     data={"device": device}))
    _, out = _doctor(capsys)
    assert _line(out, "engine").startswith(f"engine: {expected} (--engine auto: ")
    assert f"onnxruntime {metadata.version('onnxruntime')}" in _line(out, "engine")
    # int8 is offered with its measured trade, never as "the fastest" (#44: no faster on a quiet CPU)
    assert "fastest" not in _line(out, "engine")
    assert "scores move by up to 0.06" in _line(out, "engine")


def test_engine_line_warns_without_onnxruntime(qt_probe, monkeypatch, capsys):
    from calibsim_gui.core.embedding import onnx_engine

    monkeypatch.setattr(onnx_engine, "onnxruntime_missing", lambda: "onnxruntime is not installed")
    code, out = _doctor(capsys)
    assert code == 0
    assert _line(out, "engine").startswith("engine: WARNING: torch (--engine auto: onnxruntime is not installed)")


def test_json_report_has_every_check(qt_probe, capsys):
    code, out = _doctor(capsys, "--json")
    report = json.loads(out)
    assert report["calibsim"] == calibsim_gui.__version__ and report["exit_code"] == code == 0
    checks = report["checks"]
    assert list(checks) == ["versions", "os", "device", "engine", "precision", "model", "cache", "memory",
                            "window"]
    assert all({"status", "summary", "fix"} <= set(check) for check in checks.values())
    assert checks["versions"]["PySide6"] and checks["precision"]["default"] == "float32"
    assert {"budget_bytes", "physical_bytes"} <= set(checks["memory"])
    assert {"path", "size_bytes", "writable"} <= set(checks["cache"])


def test_missing_qt_library_is_named_with_its_debian_package(qt_probe, monkeypatch, capsys):
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    qt_probe.result, qt_probe.ldd = (-6, _QT_FAILURE), ["libxcb-icccm.so.4", "libxcb-cursor.so.0", "libfoo.so.2"]
    code, out = _doctor(capsys)
    assert code == 0   # no window is a warning: the headless commands work
    window = _line(out, "window")
    assert window.startswith('window: WARNING: Qt cannot open a window (platform xcb): Could not load the Qt '
                             'platform plugin "xcb"')
    assert "missing libxcb-cursor.so.0, libxcb-icccm.so.4, libfoo.so.2" in window
    assert "no display (DISPLAY and WAYLAND_DISPLAY are not set)" in window
    assert "fix: Debian/Ubuntu: sudo apt-get install libxcb-cursor0 libxcb-icccm4; " \
           "apt-file search libfoo.so.2 names its package" in out
    assert "1 warning(s)" in out


def test_qt_that_never_answers_is_killed_and_reported(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "_PROBE", "import time; time.sleep(60)")
    start = time.perf_counter()
    assert doctor.probe_window(timeout=0.5) == (None, "")
    assert time.perf_counter() - start < 10
    monkeypatch.setattr(doctor, "probe_window", lambda timeout=None: (None, ""))
    assert _line(_doctor(capsys)[1], "window") == "window: WARNING: Qt did not start within 30 s"


def test_invalid_memory_budget_is_a_problem_with_exit_1(qt_probe, monkeypatch, capsys):
    monkeypatch.setenv("CALIBSIM_MEMORY_BUDGET", "lots")
    code, out = _doctor(capsys)
    assert code == 1
    assert _line(out, "memory") == "memory: PROBLEM: CALIBSIM_MEMORY_BUDGET='lots' is not a memory size"
    assert "PROBLEMS: the command line fails until they are fixed" in out


def test_doctor_exits_0_headless_and_never_loads_qt():
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    code = ("import sys; from calibsim_gui.cli import main; status = main(['doctor']); "
            "print('QT' if any(k.startswith('PySide6') for k in sys.modules) else 'NOQT'); sys.exit(status)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "NOQT"
    assert "window:" in result.stdout and "ok: the command line works" in result.stdout


def test_the_app_names_missing_system_libraries_as_doctor_does_before_qt_aborts(qt_probe, capsys, monkeypatch):
    from calibsim_gui.qt.shell import app

    qt_probe.ldd = ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    class NotStarted:                          # no Qt application yet, and none may start: it would abort
        instance = staticmethod(lambda: None)

        def __init__(self, *args):
            raise AssertionError("Qt was started")

    monkeypatch.setattr(app, "QApplication", NotStarted)
    assert cli.main([]) == 1
    err = capsys.readouterr().err
    assert "libxcb-icccm.so.4, libxcb-keysyms.so.1" in err
    assert "sudo apt-get install libxcb-icccm4 libxcb-keysyms1" in err and "calibsim doctor" in err
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb;offscreen")   # Qt has another plugin to fall back on
    assert doctor.window_libraries_problem() is None
