"""The torch engine's graph prepared in a child process, for a window that must keep answering.

Tracing a model and checking its graph (`torch_graph.prepare_graph`) holds the interpreter lock
in single calls of 0.1-0.2 s (the trace, the first runs of the loaded graph): in the app's
process the window could not answer for as long, more on a busy machine (#44). The app therefore
loads a model without a prepared graph through sentence-transformers and has the graph prepared
by a child process (`graph_child`) beside it, at a lower priority; the next load uses the graph.
Preparations still running when the app quits are stopped (`stop_preparations`): the graph and
its record are written atomically, so a stopped one leaves nothing half-written, and the next
load starts it again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_running: dict[Path, subprocess.Popen] = {}
"""Preparations started by this process, by the graph each prepares."""
CHILD = "calibsim_gui.core.embedding.graph_child"
_PACKAGE_HOME = Path(__file__).resolve().parents[3]
"""The folder holding calibsim_gui: the child's working folder, so ``-m`` finds it uninstalled too."""
NICENESS = 10
"""How much lower than the app's the child's priority is (POSIX)."""


def start_preparation(folder: Path, device: str, precision: str, graph: Path,
                      allow_pickle: bool = False) -> subprocess.Popen | None:
    """Start preparing the torch graph `graph` of the model in `folder` on `device` in
    `precision` (its weights read from pickles if `allow_pickle`) in a child process, unless one
    is already preparing it; None in a frozen app (it has no torch) or when the child cannot be
    started."""
    running = _running.get(graph)
    if running is not None and running.poll() is None:
        return running
    if getattr(sys, "frozen", False):
        return None
    try:
        child = subprocess.Popen([sys.executable, "-m", CHILD, str(folder), device, precision,
                                  *(["--allow-pickle"] if allow_pickle else [])], cwd=_PACKAGE_HOME,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None
    if hasattr(os, "setpriority"):
        try:
            os.setpriority(os.PRIO_PROCESS, child.pid, os.getpriority(os.PRIO_PROCESS, 0) + NICENESS)
        except OSError:
            pass                       # already ended, or not allowed: it runs at the app's priority
    _running[graph] = child
    return child


def stop_preparations() -> None:
    """Stop the preparations still running (the app quits); the next load starts them again."""
    for child in _running.values():
        if child.poll() is None:
            child.terminate()
            child.wait()
    _running.clear()


def wait_for_preparations() -> None:
    """Wait until every preparation started here has ended."""
    for child in _running.values():
        child.wait()
