"""Hostile and broken input on the command line: no hang, no traceback, nothing written.

Each probe runs the command line with the fake embedder swapped in, which says when a model
would be loaded. A FIFO opened for reading would block forever, so its probes are a real
`calibsim` process killed if it runs past a timeout; the others run `cli.main` in this process.
A refused run exits non-zero with one paragraph that names what was wrong and the fix, prints
no traceback and leaves no output file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.cli import common
from tests.fakes import FakeEmbedder, random_sentences

REPO = Path(__file__).resolve().parents[2]
MODEL_LOADED = "FAKE MODEL LOADED"
DRIVER = textwrap.dedent(f"""
    import sys
    from calibsim_gui import cli
    from calibsim_gui.cli import common
    from tests.fakes import FakeEmbedder

    def load_model(args):
        print({MODEL_LOADED!r}, file=sys.stderr)
        return FakeEmbedder()

    common.load_model = load_model
    sys.exit(cli.main(sys.argv[1:]))
""")


@pytest.fixture
def calibsim(tmp_path, monkeypatch, capsys):
    """Run the command line in this process, from `tmp_path`; return (exit status, stderr)."""

    def load_model(args):
        print(MODEL_LOADED, file=sys.stderr)
        return FakeEmbedder()

    monkeypatch.setattr(common, "load_model", load_model)
    monkeypatch.chdir(tmp_path)

    def run(*args) -> tuple[int, str]:
        capsys.readouterr()
        try:
            code = cli.main(list(map(str, args)))
        except SystemExit as stop:              # argparse refusing an argument
            code = stop.code
        return code, capsys.readouterr().err

    return run


@pytest.fixture
def calibsim_process(tmp_path):
    """Run the command line in a process with a timeout; return (exit status, stderr)."""
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)

    def run(*args, timeout: float = 120) -> tuple[int, str]:
        done = subprocess.run([sys.executable, str(driver), *map(str, args)], cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                              text=True, timeout=timeout)
        return done.returncode, done.stderr

    return run


def assert_refused(code: int, err: str, *, names: str, says: str, fix: str) -> None:
    """A refusal: non-zero exit, the name and the fix in one paragraph, no traceback, no model."""
    assert code != 0, err
    assert "Traceback" not in err and MODEL_LOADED not in err, err
    message = err.strip().splitlines()[-1]
    assert names in message and says in message and fix in message, err


@pytest.fixture
def fifo(tmp_path):
    def make(name: str) -> Path:
        path = tmp_path / name
        os.mkfifo(path)
        return path

    return make


@pytest.fixture
def pairs(tmp_path):
    texts = random_sentences(20, seed=1)
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": texts[:10], "sentence2": texts[10:], "score": range(10)}).to_csv(
        path, index=False)
    return path


@pytest.mark.parametrize("command, name, out", [
    (["score", "{fifo}", "--out", "{out}"], "pairs.csv", "scores.csv"),
    (["matrix", "{fifo}", "--out", "{out}"], "docs.txt", "matrix.csv"),
    (["human", "fit", "{fifo}", "--out", "{out}"], "labelled.csv", "fit.calibsim-human"),
    (["profile", "build", "--background", "{fifo}", "--out", "{out}"], "corpus.txt",
     "bg.calibsim-profile"),
], ids=["score", "matrix", "human-fit", "profile-build"])
def test_a_fifo_as_input_is_refused_without_being_opened(calibsim_process, fifo, tmp_path, command, name,
                                                        out):
    pipe, out = fifo(name), tmp_path / out
    code, err = calibsim_process(*(a.format(fifo=pipe, out=out) for a in command), timeout=60)
    assert_refused(code, err, names=f"{pipe}: is a named pipe (FIFO)", says="not a regular file",
                   fix="Fix: save the data to a file first")
    assert not out.exists()


def test_a_fifo_or_a_broken_link_in_a_folder_is_named_never_opened(calibsim_process, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("\n".join(random_sentences(5, seed=2)))
    os.mkfifo(folder / "b.txt")
    (folder / "c.txt").symlink_to(tmp_path / "deleted.txt")
    out = tmp_path / "m.csv"
    code, err = calibsim_process("matrix", folder, "--out", out, timeout=60)
    assert_refused(code, err, names=f"{folder}: holds 2 entries that cannot be read",
                   says="b.txt (not a regular file but a pipe, socket or device); c.txt (a link to "
                        "something missing)", fix="Fix: make them readable")
    assert not out.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="chmod cannot lock root out (the core test fakes it)")
def test_an_unreadable_subfolder_is_named(calibsim, tmp_path):
    folder = tmp_path / "corpus"
    (folder / "locked").mkdir(parents=True)
    (folder / "a.txt").write_text("\n".join(random_sentences(5, seed=2)))
    (folder / "locked" / "b.txt").write_text("hidden from us")
    (folder / "locked").chmod(0)
    try:
        code, err = calibsim("profile", "build", "--background", folder, "--out", tmp_path / "p")
    finally:
        (folder / "locked").chmod(0o755)
    assert_refused(code, err, names="holds 1 entry that cannot be read", says="locked/ (Permission denied)",
                   fix="Fix: make them readable")


@pytest.mark.parametrize("value", ["0", "-5", "2.5", "many"])
def test_a_batch_size_below_1_or_not_whole_is_refused_when_parsed(calibsim, pairs, tmp_path, value):
    out = tmp_path / "scores.csv"
    code, err = calibsim("score", pairs, "--out", out, f"--batch-size={value}")
    assert_refused(code, err, names="argument --batch-size", says=f"{value!r} is not a whole number",
                   fix="from 1 to 4,096")
    assert not out.exists()


@pytest.mark.parametrize("option, value, allowed", [
    ("--pairs", "-5", "from 1 to 10,000,000"), ("--pairs", "100000000000", "from 1 to 10,000,000"),
    ("--seed", "-1", "from 0 to 4,294,967,295"), ("--workers", "0", "from 1 to 10,000"),
])
def test_profile_build_counts_are_checked_when_parsed(calibsim, tmp_path, option, value, allowed):
    out = tmp_path / "bg.calibsim-profile"
    code, err = calibsim("profile", "build", "--out", out, f"{option}={value}")
    assert_refused(code, err, names=f"argument {option}", says=f"{value!r} is not a whole number",
                   fix=allowed)
    assert not out.exists()


@pytest.mark.parametrize("scale", ["5,0", "0,inf", "0,nan", "0", "low,high"])
def test_a_scale_that_is_not_a_range_is_refused_when_parsed(calibsim, pairs, tmp_path, scale):
    code, err = calibsim("human", "fit", pairs, "--out", tmp_path / "h", f"--scale={scale}")
    assert_refused(code, err, names="argument --scale", says=f"{scale!r} is not LOW,HIGH", fix="e.g. 0,5")


def test_numbers_only_are_not_scored_as_texts(calibsim, tmp_path):
    numbers = tmp_path / "numbers.csv"
    numbers.write_text("a,b,c\n1,2,3\n4,5,6\n")
    out = tmp_path / "scores.csv"
    code, err = calibsim("score", numbers, "--out", out)
    assert_refused(code, err, names=f"{numbers}: has no two text columns",
                   says="columns 'a', 'b', 'c' hold only numbers",
                   fix="Fix: name the two text columns with --text-a COL --text-b COL")
    assert not out.exists()


def sparse_file(path: Path, size: int) -> Path:
    """`size` NUL bytes taking no disk: read, they would be refused as binary, not for memory."""
    with open(path, "wb") as f:
        f.truncate(size)
    return path


@pytest.mark.parametrize("command", [
    ["score", "{big}", "--out", "{out}"],
    ["human", "fit", "{big}", "--out", "{out}"],
    ["evaluate", "{big}", "--out", "{out}"],
    ["diagnose", "{big}", "--out", "{out}"],
], ids=["score", "human-fit", "evaluate", "diagnose"])
def test_a_file_over_the_memory_budget_is_refused_from_its_size_before_the_model(calibsim, tmp_path,
                                                                                command):
    big, out = sparse_file(tmp_path / "big.csv", 20_000_000), tmp_path / "out.json"
    code, err = calibsim(*(a.format(big=big, out=out) for a in command), "--memory-budget", "300M")
    assert_refused(code, err, names=f"{big}: reading 1 file of 20.0 MB needs about 520.0 MB",
                   says="more than the memory budget of 300.0 MB", fix="Fix: split the input")
    assert not out.exists()


def test_a_folder_is_checked_by_the_total_size_of_its_files(calibsim, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):                 # each alone fits, the three do not
        sparse_file(folder / name, 5_000_000)
    code, err = calibsim("matrix", folder, "--out", tmp_path / "m.csv", "--memory-budget", "300M")
    assert_refused(code, err, names="reading 3 files of 15.0 MB needs about 440.0 MB",
                   says="budget of 300.0 MB", fix="Fix: split the input")


def test_background_pairs_are_counted_before_reading_and_loading(calibsim, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(random_sentences(50, seed=3)))
    out = tmp_path / "bg.calibsim-profile"
    code, err = calibsim("profile", "build", "--background", corpus, "--pairs", "2000000", "--out", out,
                         "--memory-budget", "1G")
    assert_refused(code, err, names=f"{corpus}: reading", says="and drawing 2,000,000 background pairs",
                   fix="ask for fewer --pairs")
    assert not out.exists()


@pytest.mark.parametrize("variable", ["CALIBSIM_CACHE_DIR", "CALIBSIM_ONNX_DIR", "read-only cache"])
def test_a_cache_folder_that_cannot_be_used_is_refused_before_the_model_loads(tmp_path, monkeypatch, capsys, variable):
    """#43: an empty read-only cache folder, or CALIBSIM_CACHE_DIR / CALIBSIM_ONNX_DIR naming a
    file, failed only after 26-67 s of exporting the model's graph."""
    from calibsim_gui import cli
    from calibsim_gui.core.embedding import models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
    if variable == "read-only cache":
        folder = tmp_path / "readonly"
        folder.mkdir(mode=0o500)
        if os.geteuid() == 0:                        # root writes anywhere: its access check is faked
            real_access = os.access
            monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == folder
                                else real_access(path, mode))
        monkeypatch.setenv("CALIBSIM_CACHE_DIR", str(folder))
        variable, expected = "CALIBSIM_CACHE_DIR", f"{folder} cannot be written to"
    else:
        (tmp_path / "a file").write_text("not a folder")
        monkeypatch.setenv(variable, str(tmp_path / "a file"))
        expected = f"{tmp_path / 'a file'} is a file, not a folder"
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sentence1,sentence2\nA cat sat.,A dog ran.\n")
    assert cli.main(["score", str(pairs), "--engine", "onnx", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert expected in err and f"set {variable} to one" in err
