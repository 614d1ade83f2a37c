"""`calibsim --self-test`: check, headless and offline, that this installation of calibsim works.

Each step prints one line to stdout, ``ok`` or ``FAILED`` with the reason (tracebacks go to
stderr); the exit code is 0 only if every step worked. The steps find the built-in resources and
library versions, load the built-in model, score the demo pairs against the built-in reference,
write a report in every format into a temporary folder, then open the main window offscreen and
close it. Outgoing network connections are refused throughout, and Qt is imported only by the
last step, so the headless part runs exactly as the command line does."""

from __future__ import annotations

import gc
import importlib.util
import json
import math
import os
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

WINDOW_TIMEOUT_S = 300


@dataclass(frozen=True)
class Step:
    """One check: `run(ctx)` returns a short detail or raises; skipped if a step it `needs` failed."""

    name: str
    run: Callable[[Context], str]
    needs: tuple[str, ...] = ()


@dataclass
class Context:
    """What the steps hand on to each other; `folder` is the temporary folder for outputs."""

    folder: Path
    values: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- core steps (no Qt)


def check_resources(ctx: Context) -> str:
    from calibsim_gui.core.references.anchors import builtin_anchors
    from calibsim_gui.core.embedding.model_folders import BUILTIN_MODEL_NAME
    from calibsim_gui.core.calibration.profile_builder import builtin_profile_path
    from calibsim_gui.core.resources import resource_path, resources_dir

    pairs = resource_path("demo", "pairs.csv")
    for path in (pairs, builtin_profile_path(BUILTIN_MODEL_NAME)):
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing")
    ladder = builtin_anchors()
    ctx.values["pairs_path"] = pairs
    return f"{resources_dir()} ({len(ladder.pairs)} anchor pairs)"


def check_library_versions(ctx: Context) -> str:
    from calibsim_gui.core.provenance import TORCH_ENGINE_LIBRARIES, library_versions

    versions = library_versions()
    missing = [name for name, version in versions.items() if version == "not installed"]
    if importlib.util.find_spec("torch") is None:         # the desktop bundle runs ONNX only
        missing = [name for name in missing if name not in TORCH_ENGINE_LIBRARIES]
    if missing:
        raise RuntimeError(f"no version found for {', '.join(missing)}: results could not record it")
    return ", ".join(f"{name} {version}" for name, version in versions.items())


def load_builtin_model(ctx: Context) -> str:
    from calibsim_gui.core.embedding.models import load_model

    start = time.perf_counter()
    embedder = load_model(None, device="cpu")
    ctx.values["embedder"] = embedder
    return f"{embedder.fingerprint.id} on {embedder.device} in {time.perf_counter() - start:.1f} s"


def load_builtin_reference(ctx: Context) -> str:
    from calibsim_gui.core.calibration.profile_builder import default_profile

    profile = default_profile(ctx.values["embedder"])
    if not profile.has_background:
        raise RuntimeError("the built-in background profile does not match the built-in model "
                           f"({ctx.values['embedder'].fingerprint.id}); got an anchors-only reference")
    ctx.values["profile"] = profile
    return f"{profile.provenance.get('name')}: {profile.background_pairs} background pairs"


def score_demo_pairs(ctx: Context) -> str:
    import numpy as np

    from calibsim_gui.core.analysis.pairs import score_pairs
    from calibsim_gui.core.io.inputs import load_pairs

    table = load_pairs(ctx.values["pairs_path"])
    scored = score_pairs(table, ctx.values["embedder"], ctx.values["profile"])
    calibrated = scored.frame["cosine_calibrated"].to_numpy(dtype=float)
    if not (np.isfinite(calibrated).all() and ((calibrated >= 0) & (calibrated <= 1)).all()):
        raise RuntimeError("calibrated cosine scores are not all within 0..1")
    rho = scored.provenance.get("agreement", {}).get("spearman_x100", {}).get("cosine_calibrated")
    if rho is None or not math.isfinite(rho) or rho < 50:
        raise RuntimeError(f"calibrated scores disagree with the demo's human scores (Spearman x100 = {rho})")
    ctx.values["scored"] = scored
    return f"{len(calibrated)} pairs, Spearman x100 with the human scores {rho:.1f}"


def write_reports(ctx: Context) -> str:
    from calibsim_gui.core.io.output import REPORT_FORMATS
    from calibsim_gui.core.reports import build_report, write_report

    scored = ctx.values["scored"]
    report = build_report(scored, ctx.values["profile"])
    written = [write_report(report, ctx.folder / f"self-test{suffix}") for suffix in REPORT_FORMATS]
    rows = json.loads((ctx.folder / "self-test.json").read_text(encoding="utf-8"))["rows"]
    if len(rows) != len(scored.frame):
        raise RuntimeError(f"self-test.json holds {len(rows)} rows, expected {len(scored.frame)}")
    empty = [p.name for p in written if p.stat().st_size == 0]
    if empty:
        raise RuntimeError(f"empty report file(s): {', '.join(empty)}")
    return f"{', '.join(p.name for p in written)} in {ctx.folder}"


# --------------------------------------------------------------------------- the window (Qt)


@contextmanager
def _private_qt_settings(folder: Path):
    """QSettings written while the window is open go to `folder`, not the user's settings.

    (Only where settings are files, as on Linux; macOS and Windows keep native settings in the
    system's store, which `QSettings.setPath` does not redirect.)
    """
    from PySide6.QtCore import QSettings, QStandardPaths

    formats, user = (QSettings.Format.NativeFormat, QSettings.Format.IniFormat), QSettings.Scope.UserScope
    for fmt in formats:
        QSettings.setPath(fmt, user, str(folder / "settings"))
    try:
        yield
    finally:
        default = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.GenericConfigLocation)
        for fmt in formats:
            QSettings.setPath(fmt, user, default)


def _show_and_close_window() -> dict:
    """Open the main window, wait until the model and reference are ready, close it."""
    from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QTimer

    from calibsim_gui.qt.shell.main_window import MainWindow
    from calibsim_gui.qt.widgets.workers import wait_for_workers

    start, outcome = time.perf_counter(), {"failures": []}
    window = MainWindow(autosave=False)          # never touch (or discard) the user's autosaved session
    loop, timeout = QEventLoop(), QTimer()
    window.state.profile_changed.connect(lambda: window.state.profile is not None and loop.quit())
    for runner in (window.model_runner, window.profile_runner):
        runner.failed.connect(outcome["failures"].append)
        runner.failed.connect(loop.quit)
    timeout.setSingleShot(True)
    timeout.timeout.connect(loop.quit)
    timeout.start(WINDOW_TIMEOUT_S * 1000)
    window.show()
    QTimer.singleShot(0, lambda: outcome.setdefault("shown_s", time.perf_counter() - start))
    if window.state.profile is None:
        loop.exec()
    timeout.stop()
    outcome["ready_s"] = time.perf_counter() - start
    outcome["ready"] = window.state.profile is not None
    window.close()
    outcome["stopped"] = wait_for_workers(15_000)
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    return outcome


def open_main_window(ctx: Context) -> str:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from calibsim_gui.qt.shell.app import application_icon

    app = QApplication.instance() or QApplication(sys.argv[:1])
    icon = application_icon()
    if icon.isNull():
        raise RuntimeError("the application icon cannot be loaded")
    app.setWindowIcon(icon)
    with _private_qt_settings(ctx.folder):
        outcome = _show_and_close_window()
        gc.collect()            # the window's QSettings write their last values here, not later
    if outcome["failures"]:
        raise RuntimeError(outcome["failures"][0].split("\n\n")[0])
    if not outcome["ready"]:
        raise RuntimeError(f"the model and reference were not ready after {WINDOW_TIMEOUT_S} s")
    if not outcome["stopped"]:
        raise RuntimeError("background tasks were still running after the window closed")
    return (f"shown in {outcome.get('shown_s', outcome['ready_s']):.1f} s, model and reference ready "
            f"in {outcome['ready_s']:.1f} s, closed cleanly")


CORE_STEPS = (
    Step("built-in resources", check_resources),
    Step("library versions", check_library_versions),
    Step("load the built-in model offline", load_builtin_model),
    Step("built-in reference profile", load_builtin_reference, needs=("load the built-in model offline",)),
    Step("score the demo pairs", score_demo_pairs,
         needs=("built-in resources", "built-in reference profile")),
    Step("write reports", write_reports, needs=("score the demo pairs",)),
)
def draw_in_child_process(ctx: Context) -> str:
    """The app draws and writes reports in a child process (`qt.widgets.child_process`): it must start
    (a packaged app's spawned child included) and write a report with its figures."""
    from calibsim_gui.core.reports import build_report, write_report_files
    from calibsim_gui.qt.widgets.child_process import run_in_child

    report = build_report(ctx.values["scored"], ctx.values["profile"])
    written = run_in_child(write_report_files, report, ctx.folder / "child-process.html", figures=True,
                           progress=lambda *_: None, should_stop=lambda: False)
    empty = [p.name for p in written if p.stat().st_size == 0]
    if len(written) < 2 or empty:
        raise RuntimeError(f"the child process wrote {[p.name for p in written]} (empty: {empty})")
    return f"{len(written)} files ({', '.join(p.name for p in written)})"


STEPS = CORE_STEPS + (
    Step("draw a report in the app's child process", draw_in_child_process, needs=("write reports",)),
    Step("open and close the main window offscreen", open_main_window),
)


# --------------------------------------------------------------------------- running


_connect = socket.socket.connect


def _refuse_network(sock, address):
    if sock.family == getattr(socket, "AF_UNIX", None):
        return _connect(sock, address)
    raise ConnectionRefusedError(f"calibsim --self-test refuses network connections (to {address!r})")


@contextmanager
def no_network():
    """Refuse outgoing network connections (local sockets still work) inside the block."""
    saved = socket.socket.connect, socket.socket.connect_ex
    socket.socket.connect = socket.socket.connect_ex = _refuse_network
    try:
        yield
    finally:
        socket.socket.connect, socket.socket.connect_ex = saved


@contextmanager
def _environment(**values):
    """Set environment variables inside the block (the embedding cache goes to the temporary folder)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _last_line(exc: Exception) -> str:
    """The most specific line of a message (numpy's import error ends with its cause)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else ""


def run_self_test(steps=STEPS, *, out=None) -> int:
    """Run `steps` in a temporary folder with the network refused; 0 if every step worked, else 1."""
    out = out or sys.stdout
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="calibsim-self-test-") as tmp, no_network(), \
            _environment(CALIBSIM_CACHE_DIR=str(Path(tmp) / "cache")):
        ctx = Context(Path(tmp))
        for step in steps:
            missing = [name for name in step.needs if name in failed]
            if missing:
                line = f"FAILED  {step.name}: skipped because '{missing[0]}' failed"
            else:
                try:
                    line = f"ok      {step.name}: {step.run(ctx)}"
                except Exception as exc:    # every failure is reported, the next steps still run
                    line = f"FAILED  {step.name}: {type(exc).__name__}: {_last_line(exc)}"
                    traceback.print_exc(file=sys.stderr)
            if line.startswith("FAILED"):
                failed.append(step.name)
            print(line, file=out, flush=True)
    verdict = "passed" if not failed else f"FAILED ({len(failed)} of {len(steps)} steps)"
    print(f"calibsim self-test {verdict}", file=out, flush=True)
    return 1 if failed else 0
