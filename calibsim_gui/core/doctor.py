"""`calibsim doctor`: what this installation would use, and whether it works.

Each check returns a `Check`; the command line prints them. A "problem" breaks the headless
commands; a "warning" does not (a machine with no display cannot open the app's window, but the
command line works there). Qt is only ever imported by a child process (`probe_window`), with a
time limit, so the doctor never loads Qt itself and never hangs.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import calibsim_gui
from calibsim_gui.core.embedding import devices, model_folders, models, onnx_engine
from calibsim_gui.core.embedding.cache import default_cache_dir
from calibsim_gui.core.errors import CalibsimError, InputError
from calibsim_gui.core.io import memory

WINDOW_TIMEOUT_S = 30
LDD_TIMEOUT_S = 10
# Debian (bookworm) packages of the system libraries that PySide6's window needs and a minimal
# Debian lacks; pip cannot install them.
DEBIAN_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xinput.so.0": "libxcb-xinput0",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libwayland-client.so.0": "libwayland-client0",
    "libwayland-cursor.so.0": "libwayland-cursor0",
    "libwayland-egl.so.1": "libwayland-egl1",
}
_CANNOT_OPEN = re.compile(r"([\w.+-]+\.so(?:\.\d+)*): cannot open shared object file")
# Qt >= 6.5 may print this when the xcb plugin fails for another reason, with libxcb-cursor0
# installed (seen on Debian 12 lacking libxcb-icccm4); the loader's own messages and `ldd` name
# the libraries that are really missing.
_XCB_CURSOR_HINT = "xcb-cursor0 or libxcb-cursor0 is needed"
_PROBE = ("import sys\nfrom PySide6.QtWidgets import QApplication\n"
          "app = QApplication(sys.argv[:1])\nprint('platform=' + app.platformName())\n")


@dataclass(frozen=True)
class Check:
    """One line of the report.

    Parameters
    ----------
    name : str
    status : {"ok", "warning", "problem"}
        "problem": the headless commands fail until it is fixed; "warning": they work.
    summary : str
    fix : str, optional
    data : dict
        Machine-readable details (``calibsim doctor --json``).
    """

    name: str
    status: str
    summary: str
    fix: str | None = None
    data: dict = field(default_factory=dict)


def _version(*distributions: str) -> str | None:
    for name in distributions:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return None


def check_versions() -> Check:
    """Versions of calibsim, Python and the libraries it runs on."""
    versions = {"calibsim": calibsim_gui.__version__, "python": platform.python_version()}
    for name in ("torch", "sentence-transformers", "transformers", "numpy"):
        versions[name] = _version(name)
    versions["PySide6"] = _version("PySide6", "PySide6-Essentials")
    missing = [name for name, version in versions.items() if version is None]
    summary = ", ".join(f"{name} {version or 'NOT INSTALLED'}" for name, version in versions.items())
    if not missing:
        return Check("versions", "ok", summary, data=versions)
    status = "warning" if missing == ["PySide6"] else "problem"
    return Check("versions", status, summary, data=versions,
                 fix=f"install {', '.join(missing)}: make install (or pip install -e . in the virtualenv)")


def check_os() -> Check:
    """The operating system, with the distribution's name on Linux."""
    try:
        distribution = platform.freedesktop_os_release()["PRETTY_NAME"] + ", "
    except (AttributeError, OSError, KeyError):
        distribution = ""
    return Check("os", "ok", distribution + platform.platform(),
                 data={"platform": platform.platform(), "machine": platform.machine()})


def check_device() -> Check:
    """The device `--device auto` picks, and why."""

    device = devices.resolve_device("auto")
    if device == "cuda":
        import torch

        why = f"CUDA GPU {torch.cuda.get_device_name(0)}"
    elif device == "mps":
        why = "Apple GPU (MPS)"
    else:
        why = "; ".join(f"{name}: {reason}" for name, reason in devices.available_devices().items()
                        if reason is not None)
    return Check("device", "ok", f"{device} (--device auto: {why})", data={"device": device, "reason": why})


def check_precision(device: str) -> Check:
    """The default precision, and what `--precision auto` would pick on `device`."""

    reason = devices.bfloat16_support(device)
    if reason is None:
        auto = "bfloat16"
        why = f"CPU has {', '.join(devices.cpu_bfloat16_instructions())}"   # the only device auto picks it on
        text = f"bfloat16 here ({why})"
    else:
        auto, why = "float32", reason
        text = f"float32 here: {reason}"
    summary = (f"{devices.DEFAULT_PRECISION} (default: identical results on every machine); "
               f"--precision auto would use {text}")
    return Check("precision", "ok", summary,
                 data={"default": devices.DEFAULT_PRECISION, "auto": auto, "reason": why})


# What int8 is, as measured (README "int8, measured"): never advertised as the fastest run.
INT8_TRADE = ("--precision int8 trades exactness for CPU time: scores move by up to 0.06; it used "
              "~1.4x less CPU on a busy 2-core AVX2 machine and was no faster on a quiet one")


def check_engine(device: str) -> Check:
    """Whether ONNX Runtime is installed, and the engine `--engine auto` picks on `device`."""

    missing = onnx_engine.onnxruntime_missing()
    auto = models.choose_engine("auto", device)
    data = {"auto": auto, "onnxruntime": _version("onnxruntime", "onnxruntime-gpu")}
    why = f"{device} is a GPU" if device != "cpu" else "the CPU runs ONNX Runtime"
    if missing is not None:
        return Check("engine", "warning", f"{auto} (--engine auto: {missing})", data=data,
                     fix="pip install onnxruntime for the faster, lighter CPU engine")
    return Check("engine", "ok", f"{auto} (--engine auto: {why}); onnxruntime {data['onnxruntime']}; "
                                 f"{INT8_TRADE}", data=data)


def check_builtin_model() -> Check:
    """Whether the bundled model's files are installed."""

    path = model_folders.builtin_model_path()
    return Check("model", "ok", f"built-in {model_folders.BUILTIN_MODEL_NAME} at {path}", data={"path": str(path)})


def _folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def check_cache() -> Check:
    """Where the embedding cache lives, its size, and whether it can be written."""
    folder = default_cache_dir()
    size = _folder_size(folder) if folder.is_dir() else 0
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    writable = os.access(existing, os.W_OK)
    data = {"path": str(folder), "size_bytes": size, "writable": writable}
    summary = f"{folder}, {memory.format_size(size) if folder.is_dir() else 'not created yet'}"
    if not writable:
        return Check("cache", "problem", f"{summary}; {existing} is not writable", data=data,
                     fix="make it writable, set CALIBSIM_CACHE_DIR to another folder, or pass --no-cache")
    return Check("cache", "ok", summary + " (CALIBSIM_CACHE_DIR moves it)", data=data)


def check_memory() -> Check:
    """The memory budget a run is checked against (`calibsim_gui.core.io.memory`)."""
    physical = memory.physical_memory()
    try:
        budget = memory.default_budget()
    except InputError as exc:
        return Check("memory", "problem", f"{memory.BUDGET_ENV}={os.environ[memory.BUDGET_ENV]!r} is not "
                                          "a memory size", data={"physical_bytes": physical},
                     fix=f"{exc.fix}, or unset {memory.BUDGET_ENV}")
    source = (f"{memory.BUDGET_ENV}={os.environ[memory.BUDGET_ENV]}" if os.environ.get(memory.BUDGET_ENV)
              else f"half the physical memory of {memory.format_size(physical)}")
    return Check("memory", "ok", f"budget {memory.format_size(budget)} ({source}; --memory-budget or "
                                 f"{memory.BUDGET_ENV} sets it)",
                 data={"budget_bytes": budget, "physical_bytes": physical, "source": source})


def probe_window(timeout: float = WINDOW_TIMEOUT_S) -> tuple[int | None, str]:
    """Start a Qt application in a child Python process, killed after `timeout` seconds.

    Returns
    -------
    tuple
        (exit code, or None if it was killed; its stdout and stderr). Qt's plugin loader reports
        why a platform plugin failed (``QT_DEBUG_PLUGINS=1``).
    """
    env = {**os.environ, "QT_DEBUG_PLUGINS": "1"}
    with tempfile.TemporaryFile() as log:   # a file, not a pipe: a stray grandchild cannot block us
        child = subprocess.Popen([sys.executable, "-c", _PROBE], stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = child.wait(timeout)
        except subprocess.TimeoutExpired:
            if os.name == "posix":
                os.killpg(child.pid, signal.SIGKILL)
            else:
                child.kill()
            child.wait()
            code = None
        log.seek(0)
        return code, log.read().decode(errors="replace")


def ldd_missing(platform_name: str) -> list[str]:
    """Libraries that PySide6's `platform_name` plugin needs and the loader cannot find (Linux)."""
    spec = importlib.util.find_spec("PySide6")   # finds the package without importing it
    ldd = shutil.which("ldd")
    if spec is None or not spec.submodule_search_locations or ldd is None:
        return []
    plugin = Path(spec.submodule_search_locations[0], "Qt", "plugins", "platforms", f"libq{platform_name}.so")
    if not plugin.is_file():
        return []
    try:
        out = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=LDD_TIMEOUT_S).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return re.findall(r"^\s*(\S+) => not found", out, flags=re.MULTILINE)


def _qt_message(output: str) -> str:
    lines = [line.split(": ", 1)[1] for line in output.splitlines()
             if line.startswith("qt.qpa.") and ": " in line and _XCB_CURSOR_HINT not in line]
    if not lines:
        lines = [line for line in output.splitlines() if line.strip()][-1:]
    return "; ".join(line.strip().rstrip(".") for line in lines) or "no message"


def wanted_platform() -> str:
    """The Qt platform plugin the window would use first ("xcb" on Linux unless QT_QPA_PLATFORM says)."""
    requested = os.environ.get("QT_QPA_PLATFORM", "")
    return re.split(r"[;:]", requested)[0] or ("xcb" if sys.platform.startswith("linux") else "default")


def library_fixes(missing: list[str]) -> list[str]:
    """How to install the missing system libraries: the Debian packages, else how to find them."""
    packages = list(dict.fromkeys(DEBIAN_PACKAGES[lib] for lib in missing if lib in DEBIAN_PACKAGES))
    return (([f"Debian/Ubuntu: sudo apt-get install {' '.join(packages)}"] if packages else [])
            + [f"apt-file search {lib} names its package" for lib in missing if lib not in DEBIAN_PACKAGES])


def window_libraries_problem() -> str | None:
    """Why Qt's window cannot start here, found before Qt tries (and aborts with a generic hint):
    the system libraries its platform plugin lacks, in `calibsim doctor`'s words; None when none
    is missing or QT_QPA_PLATFORM offers Qt another plugin to fall back on."""
    if re.search(r"[;:]", os.environ.get("QT_QPA_PLATFORM", "")):
        return None
    platform = wanted_platform()
    missing = ldd_missing(platform)
    if not missing:
        return None
    return (f"calibsim cannot open its window: Qt's {platform} platform plugin needs "
            f"{', '.join(missing)}, not installed on this system.\nFix: " + "; ".join(library_fixes(missing))
            + ".\n`calibsim doctor` checks the whole installation; the headless commands work without a window.")


def check_window(timeout: float = WINDOW_TIMEOUT_S) -> Check:
    """Whether Qt can open the app's window here, checked in a child process; never a problem."""
    requested = os.environ.get("QT_QPA_PLATFORM", "")
    wanted = wanted_platform()
    data = {"QT_QPA_PLATFORM": requested or None, "platform": wanted, "missing": {}}
    if getattr(sys, "frozen", False):
        return Check("window", "warning", "not checked inside the desktop bundle", data=data,
                     fix="start calibsim: Qt says why when it cannot open the window")
    code, output = probe_window(timeout)
    found = re.search(r"^platform=(\S+)", output, flags=re.MULTILINE)
    if code == 0 and found:
        data["platform"] = found[1]
        if found[1] in ("offscreen", "minimal"):
            return Check("window", "warning", f"Qt works with platform {found[1]} (QT_QPA_PLATFORM), "
                                              "which draws windows off screen: none is shown", data=data,
                         fix="unset QT_QPA_PLATFORM to open the window on your display")
        return Check("window", "ok", f"Qt can open a window (platform {found[1]})", data=data)
    if code is None:
        return Check("window", "warning", f"Qt did not start within {timeout:g} s", data=data,
                     fix="start calibsim with QT_DEBUG_PLUGINS=1 to see where Qt stops")
    missing = list(dict.fromkeys(_CANNOT_OPEN.findall(output) + ldd_missing(wanted)))
    data["missing"] = {lib: DEBIAN_PACKAGES.get(lib) for lib in missing}
    summary = f"Qt cannot open a window (platform {wanted}): {_qt_message(output)}"
    fixes = []
    if missing:
        summary += "; missing " + ", ".join(missing)
        fixes += library_fixes(missing)
    if wanted in ("xcb", "wayland") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        summary += "; no display (DISPLAY and WAYLAND_DISPLAY are not set)"
    fixes.append("the headless commands work without a window")
    return Check("window", "warning", summary, fix="; ".join(fixes), data=data)


def _guarded(name: str, check: Callable[[], Check]) -> Check:
    try:
        return check()
    except Exception as exc:  # a broken library must become a line of the report, not a traceback
        text = str(exc) if isinstance(exc, CalibsimError) else f"{type(exc).__name__}: {exc}"
        return Check(name, "problem", text)


def run_checks(*, window_timeout: float = WINDOW_TIMEOUT_S) -> list[Check]:
    """Every check, in report order; one that raises becomes a "problem" with the error."""
    checks = [_guarded("versions", check_versions), _guarded("os", check_os),
              _guarded("device", check_device)]
    device = checks[-1].data.get("device", "cpu")
    return checks + [_guarded("engine", lambda: check_engine(device)),
                     _guarded("precision", lambda: check_precision(device)),
                     _guarded("model", check_builtin_model), _guarded("cache", check_cache),
                     _guarded("memory", check_memory),
                     _guarded("window", lambda: check_window(window_timeout))]


def exit_code(checks: list[Check]) -> int:
    """0 when the headless commands work (warnings allowed), 1 when a check found a problem."""
    return int(any(check.status == "problem" for check in checks))
