"""`profile build --engine ray` runs the local engine's input checks on the driver, before the
model loads or Ray starts, and a dead --address fails at once (#43). Before, Ray built a profile
(exit 0) from a CSV with NUL bytes, ran over 200 s on a CSV of 100,000 columns, and hung 300 s on
``--address 127.0.0.1:1``."""

from __future__ import annotations

import os
import socket

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
