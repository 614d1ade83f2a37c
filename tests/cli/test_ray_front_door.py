"""`profile build --engine ray` runs the local engine's input checks on the driver, before the
model loads or Ray starts, and a dead --address fails at once (#43). Before, Ray built a profile
(exit 0) from a CSV with NUL bytes, ran over 200 s on a CSV of 100,000 columns, and hung 300 s on
``--address 127.0.0.1:1``, and SIGTERM ended a build with Ray's stack trace and no word."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from calibsim_gui import cli
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.tables import check_text_source
from tests import conftest

ray = pytest.importorskip("ray")


@pytest.fixture
def no_ray_start(monkeypatch):
    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("Ray was started"))


def _build(tmp_path, background, *extra):
    return cli.main(["profile", "build", "--engine", "ray", "--background", str(background),
                     "--out", str(tmp_path / "p.calibsim-profile"), "--quiet", *extra])


@pytest.mark.parametrize("content, words", [
    (b"text\n" + b"A cat sat.\n" * 1000 + b"A dog\x00 ran.\n", "line 1002: holds a NUL character"),  # past 8 KB
    (",".join(f"c{i}" for i in range(100_000)).encode() + b"\n" + b"x," * 99_999 + b"x\n",
     "has 100,000 columns, more than the 1,000"),
], ids=["NUL byte", "100k columns"])
def test_a_background_the_local_engine_refuses_is_refused_before_ray_or_the_model(
        tmp_path, capsys, loads, no_ray_start, content, words):
    background = tmp_path / "background.csv"
    background.write_bytes(content)
    assert _build(tmp_path, background) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"calibsim: error: {background}") and words in err and "Fix:" in err
    assert loads == [] and not (tmp_path / "p.calibsim-profile").exists()


def test_a_fifo_background_is_refused_unopened(tmp_path, capsys, loads, no_ray_start):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    assert _build(tmp_path, fifo) == 2
    assert "is a named pipe (FIFO)" in capsys.readouterr().err and loads == []


def test_an_address_nobody_listens_at_fails_at_once_with_the_fix(tmp_path, capsys, monkeypatch, loads, no_ray_start):
    monkeypatch.setattr(socket.socket, "connect", conftest._connect)     # 127.0.0.1 is no network
    background = tmp_path / "news.txt"
    background.write_text("A cat sat on the mat.\nMarkets fell today.\n")
    assert _build(tmp_path, background, "--address", "127.0.0.1:1") == 2
    err = capsys.readouterr().err
    assert "cannot reach a Ray cluster at 127.0.0.1:1: Connection refused" in err
    assert "Fix: start the cluster (ray start --head)" in err and loads == []


def test_the_streamed_checks_name_the_line_across_blocks(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"first line\n" * 30 + b"bad\x00line\n")
    with pytest.raises(InputError, match="line 31: holds a NUL character"):
        check_text_source(path, block=64)
    path.write_bytes(b"first line\n" * 30)
    check_text_source(path, block=64)


def _until_encoding(process) -> tuple[list, threading.Thread]:
    """The stderr of `process` read until its progress bar appears (a model export may come first),
    and the thread that reads the rest."""
    seen, started = [], threading.Event()

    def read():
        while chunk := os.read(process.stderr.fileno(), 4096):
            seen.append(chunk.decode(errors="replace"))
            if "encoding:" in "".join(seen):
                started.set()
        started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert started.wait(600) and process.poll() is None, "".join(seen)
    return seen, reader


@pytest.mark.slow
@pytest.mark.parametrize("signum, words, status", [
    (signal.SIGTERM, "calibsim: stopped by SIGTERM", 143), (signal.SIGINT, "calibsim: stopped by the user", 130),
], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_a_ray_build_with_a_word_no_profile_and_ray_shut_down(tmp_path, signum, words, status):
    background, out = tmp_path / "corpus.txt", tmp_path / "p.calibsim-profile"
    background.write_text("".join(f"Sentence number {i} is about {i % 97} cats and {i % 89} dogs.\n"
                                  for i in range(20_000)))
    process = subprocess.Popen(
        [sys.executable, "-m", "calibsim_gui", "profile", "build", "--engine", "ray", "--workers", "1",
         "--background", str(background), "--pairs", "2000", "--out", str(out)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))   # Ctrl+C even in a background job
    try:
        seen, reader = _until_encoding(process)
        ray_processes = psutil.Process(process.pid).children(recursive=True)
        process.send_signal(signum)
        assert process.wait(120) == status
    finally:
        process.kill()
    assert ray_processes and psutil.wait_procs(ray_processes, timeout=60)[1] == []    # Ray shut down
    reader.join(60)
    err = "".join(seen)
    assert err.rstrip().endswith(words) and "SIGTERM received" not in err
    assert not out.exists() and not list(tmp_path.glob(".p.calibsim-profile*"))
