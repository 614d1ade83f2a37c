"""A killed ONNX export leaves its work folder (the ~90 MB raw graph); the next export removes it
(issue 30 item 6)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from calibsim_gui.core.embedding.onnx_export import (
    EXPORT_WORK_PREFIX,
    export_work_folder,
    remove_stale_exports,
)


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


def test_the_next_export_removes_the_work_folders_of_killed_exports_only(tmp_path):
    killed = tmp_path / f"{EXPORT_WORK_PREFIX}{_dead_pid()}-x1"
    running = tmp_path / f"{EXPORT_WORK_PREFIX}{os.getpid()}-x2"          # an export still running
    for folder in (killed, running):
        folder.mkdir()
        (folder / "raw.onnx").write_bytes(b"\0" * 1000)
    other = tmp_path / "my-model"                                        # not calibsim's: kept
    other.mkdir()
    work = export_work_folder(tmp_path)
    assert work.name.startswith(f"{EXPORT_WORK_PREFIX}{os.getpid()}-")
    assert not killed.exists() and running.exists() and other.exists()
    assert remove_stale_exports(tmp_path) == []


@pytest.mark.slow
def test_an_export_killed_midway_is_cleaned_by_the_next_start(tmp_path):
    graphs = tmp_path / "graphs"
    script = ("from calibsim_gui.core.embedding.models import load_model\n"
              "load_model(None, engine='onnx')\n")
    env = {**os.environ, "CALIBSIM_ONNX_DIR": str(graphs)}
    process = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.DEVNULL)
    try:
        raw = None
        while process.poll() is None and raw is None:   # until the raw graph is written in full
            raw = next((p for p in graphs.rglob("raw.onnx") if p.stat().st_size > 50_000_000), None)
            time.sleep(0.2)
        assert raw is not None, "the export ended before its raw graph was seen"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        process.kill()
    left = raw.parent
    assert left.name.startswith(EXPORT_WORK_PREFIX) and left.exists()
    export_work_folder(left.parent)                       # what the next export does first
    assert not left.exists()
