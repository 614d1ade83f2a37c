"""Fault injection: a scoring run of the real command line, killed with SIGKILL mid-way.

The run is a subprocess (`python driver.py score ...`) whose driver swaps in the fake embedder,
slowed down per batch so the kill lands while vectors are being cached, or holds the run just
before the output is renamed into place. Afterwards the output location holds no output, the
embedding cache is sound, and a re-run reuses what was cached and writes the same table as a
clean run.

Also here: texts holding control characters, which must not break any output format.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

from calibsim_gui.core.embedding.cache import EmbeddingCache
from tests.fakes import random_sentences

REPO = Path(__file__).resolve().parents[2]
DRIVER = textwrap.dedent("""
    import os, sys, time
    from calibsim_gui import cli
    from calibsim_gui.cli import common
    from tests.fakes import FakeEmbedder

    class SlowFake(FakeEmbedder):
        encoded = 0

        def encode_batch(self, texts):
            SlowFake.encoded += len(texts)
            time.sleep(float(os.environ.get("FAKE_DELAY", "0")))
            return super().encode_batch(texts)

    common.load_model = lambda args: SlowFake()
    marker = os.environ.get("HOLD_BEFORE_RENAME")
    if marker:                         # stop inside the atomic write, after the temporary is complete
        replace = os.replace

        def held(src, dst, *args, **kwargs):
            if os.path.basename(dst) == os.environ["HOLD_TARGET"]:
                open(marker, "w").close()
                time.sleep(600)
            return replace(src, dst, *args, **kwargs)

        os.replace = held
    code = cli.main(sys.argv[1:])
    print(f"ENCODED {SlowFake.encoded}")
    sys.exit(code)
""")


@pytest.fixture
def big_csv(tmp_path):
    texts = random_sentences(4000, seed=21)
    path = tmp_path / "data" / "big.csv"
    path.parent.mkdir()
    pd.DataFrame({"sentence1": texts[:2000], "sentence2": texts[2000:]}).to_csv(path, index=False)
    return path


@pytest.fixture
def driver(tmp_path):
    path = tmp_path / "driver.py"
    path.write_text(DRIVER)
    return path


def start(driver, pairs, out, cache_dir, **env):
    return subprocess.Popen(
        [sys.executable, str(driver), "score", str(pairs), "--out", str(out), "--batch-size", "32", "-q"],
        env={**os.environ, "PYTHONPATH": str(REPO), "CALIBSIM_CACHE_DIR": str(cache_dir), **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process) -> int:
    """Wait for a run that must succeed; return how many texts its model encoded."""
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    return int(stdout.strip().splitlines()[-1].removeprefix("ENCODED "))


def cached_rows(db: Path) -> int:
    """Rows in the cache as another process sees them now (0 while it does not exist yet)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    except sqlite3.OperationalError:            # the table is not created yet
        return 0


def wait_for(condition, process, timeout=120):
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "the run never got there"
        time.sleep(0.05)


def kill(process) -> None:
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL


def clean_run(driver, pairs, tmp_path) -> tuple[Path, int]:
    """The output of a run on an empty cache, and how many texts it encoded."""
    out = tmp_path / "clean" / "out.csv"
    out.parent.mkdir()
    return out, finish(start(driver, pairs, out, tmp_path / "clean-cache"))


def test_a_run_killed_while_caching_leaves_no_output_and_a_sound_cache_the_rerun_reuses(
        driver, big_csv, tmp_path):
    cache_dir, out = tmp_path / "cache", big_csv.parent / "out.csv"
    db = cache_dir / "embeddings.sqlite"
    run = start(driver, big_csv, out, cache_dir, FAKE_DELAY="0.02")
    wait_for(lambda: cached_rows(db) >= 500, run)          # anchors, then some batches of pairs
    kill(run)

    assert sorted(p.name for p in big_csv.parent.iterdir()) == ["big.csv"]     # no output, no temporary
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with warnings.catch_warnings():
        warnings.simplefilter("error")                       # "cache was corrupt" would be a warning
        with EmbeddingCache(db) as cache:
            kept = cache.count()
    assert 500 <= kept < 4000
    assert not list(cache_dir.glob("*.corrupt-*"))

    encoded_again = finish(start(driver, big_csv, out, cache_dir))
    clean, encoded_clean = clean_run(driver, big_csv, tmp_path)
    assert encoded_again == encoded_clean - kept             # what was cached is not encoded again
    assert out.read_bytes() == clean.read_bytes()
    assert (big_csv.parent / "out.csv.provenance.json").exists()


def test_a_run_killed_while_renaming_its_output_leaves_only_a_hidden_temporary(driver, big_csv, tmp_path):
    cache_dir, out, marker = tmp_path / "cache", big_csv.parent / "out.csv", tmp_path / "holding"
    run = start(driver, big_csv, out, cache_dir, HOLD_BEFORE_RENAME=str(marker), HOLD_TARGET=out.name)
    wait_for(marker.exists, run)
    kill(run)

    left = sorted(p.name for p in big_csv.parent.iterdir() if p.name != "big.csv")
    assert not out.exists() and not (big_csv.parent / "out.csv.provenance.json").exists()
    # What may stay behind are the complete but unrenamed temporaries of the table and its
    # side-car: hidden, never named like the output, never read by calibsim.
    assert len(left) == 2 and all(n.startswith(".out.csv.") and n.endswith(".tmp") for n in left)

    finish(start(driver, big_csv, out, cache_dir))          # no --force needed: there is no output
    assert out.read_bytes() == clean_run(driver, big_csv, tmp_path)[0].read_bytes()


def test_an_unusable_cache_folder_is_a_clear_error_before_any_work(driver, big_csv, tmp_path):
    (tmp_path / "a file").write_text("not a folder")
    out = big_csv.parent / "out.csv"
    run = start(driver, big_csv, out, tmp_path / "a file" / "cache")
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 2
    assert "Cannot open the embedding cache" in stderr and "CALIBSIM_CACHE_DIR" in stderr
    assert not out.exists()


# --------------------------------------------------------------------------- hostile texts

CONTROL_TEXTS = ["bell\x07 and \x01 start of heading", "vertical\x0btab", "line\u2028separator",
                 "=HYPERLINK(\"http://x\")", "<script>alert(1)</script>"]     # NUL: refused as binary


@pytest.mark.parametrize("suffix", [
    ".csv", ".json", ".html", ".pdf", ".xlsx",
])
def test_texts_with_control_characters_reach_every_output_format(tmp_path, monkeypatch, suffix, capsys):
    from calibsim_gui import cli
    from calibsim_gui.cli import common
    from tests.fakes import FakeEmbedder

    monkeypatch.setattr(common, "load_model", lambda args: FakeEmbedder())
    pairs = tmp_path / "odd.csv"
    pd.DataFrame({"sentence1": CONTROL_TEXTS, "sentence2": CONTROL_TEXTS[::-1]}).to_csv(pairs, index=False)
    out = tmp_path / f"scored{suffix}"
    try:
        code = cli.main(["score", str(pairs), "--out", str(out), "-q"])
    except Exception as exc:                   # a crash, not a message: the point of this test
        raise AssertionError(f"{type(exc).__name__}: {exc}") from exc
    assert code == 0, capsys.readouterr().err
    assert out.stat().st_size > 0
    if suffix == ".csv":
        defused = ["'" + t if t.startswith("=") else t for t in CONTROL_TEXTS]    # formula protection
        assert pd.read_csv(out, keep_default_na=False)["sentence1"].tolist() == defused
