"""The one place where the command line turns failures into messages (`calibsim_gui.cli.main`).

A failure a user can fix (a full disk, too little memory, an ONNX runtime error, references too
degenerate to fit, a number beyond float range in a profile) is one paragraph naming the file
and the fix, exit 2. Anything else is "unexpected error", exit 3, its traceback shown only with
--debug. A closed stdout (`| head -1`) ends the run quietly, as `cat` does.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.cli import common, score
from calibsim_gui.core.calibration.profile import DIGEST_KEY, content_digest
from calibsim_gui.core.calibration.profile_builder import builtin_profile_path
from calibsim_gui.core.references.anchors import builtin_anchors
from tests.fakes import FakeEmbedder, random_sentences

REPO = Path(__file__).resolve().parents[2]
BEYOND_FLOAT = 10 ** 400          # written as 401 digits: a JSON integer that overflows the first float


@pytest.fixture(autouse=True)
def fake_model(monkeypatch):
    monkeypatch.setattr(common, "load_model", lambda args: FakeEmbedder())


@pytest.fixture
def pairs(tmp_path):
    texts = random_sentences(20, seed=3)
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": texts[:10], "sentence2": texts[10:]}).to_csv(path, index=False)
    return path


def message_of(capsys) -> str:
    """stderr of the run, checked to be calibsim's one message and no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert err.startswith("calibsim: ") and err.count("\n") == 1, err
    return err


def failing_run(monkeypatch, exc: BaseException) -> None:
    """`calibsim score` fails with `exc` once its input is read."""
    def run(args):
        raise exc
    monkeypatch.setattr(score, "run", run)


def test_an_unknown_error_is_unexpected_with_its_traceback_only_behind_debug(monkeypatch, pairs, capsys):
    failing_run(monkeypatch, RuntimeError("a bug"))
    assert cli.main(["score", str(pairs)]) == 3
    err = message_of(capsys)
    assert "unexpected error" in err and "RuntimeError: a bug" in err and "--debug" in err
    assert cli.main(["score", str(pairs), "--debug"]) == 3      # --debug after the command too
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "unexpected error" in err.splitlines()[-1]


@pytest.mark.parametrize("exc, says, fix", [
    (MemoryError(), "ran out of memory while working on {pairs}.", "--memory-budget"),
    (OSError(errno.ENOSPC, "No space left on device", "/tmp/out.csv"),
     "/tmp/out.csv: No space left on device", "free some disk space"),
    (PermissionError(errno.EACCES, "Permission denied", "/srv/x.csv"), "/srv/x.csv: Permission denied",
     "permission"),
])
def test_known_system_errors_are_one_paragraph_naming_the_file_and_the_fix(monkeypatch, pairs, capsys,
                                                                            exc, says, fix):
    failing_run(monkeypatch, exc)
    assert cli.main(["score", str(pairs)]) == 2
    err = message_of(capsys)
    assert err.startswith("calibsim: error: ") and says.format(pairs=pairs) in err
    assert fix in err.partition("Fix: ")[2]


def test_an_onnxruntime_error_is_a_message_naming_the_input_and_another_engine(monkeypatch, pairs, capsys):
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

    failing_run(monkeypatch, InvalidArgument("[ONNXRuntime] INVALID_ARGUMENT: idx 30600 out of range\nmore"))
    assert cli.main(["score", str(pairs)]) == 2
    err = message_of(capsys)
    assert "ONNX engine failed" in err and str(pairs) in err and "idx 30600" in err
    assert "--engine torch" in err


def test_too_few_background_pairs_for_the_tail_fit_is_a_message(tmp_path, capsys):
    background = tmp_path / "six.txt"
    background.write_text("\n".join(random_sentences(6, seed=4)) + "\n")
    code = cli.main(["profile", "build", "--background", str(background), "--pairs", "10",
                     "--out", str(tmp_path / "p.calibsim"), "--quiet"])
    assert code == 2
    err = message_of(capsys)
    assert "too few background pairs" in err and str(background) in err and "--pairs" in err
    assert not (tmp_path / "p.calibsim").exists()


DRIVER = textwrap.dedent("""
    import sys
    from calibsim_gui import cli
    from calibsim_gui.cli import common
    from tests.fakes import FakeEmbedder

    common.load_model = lambda args: FakeEmbedder()
    code = cli.main(sys.argv[1:])
    print("EXIT", code, file=sys.stderr)
    sys.exit(code)
""")


def test_a_reader_that_closes_stdout_ends_the_run_quietly_like_cat(tmp_path):
    texts = random_sentences(100, seed=5)
    big = tmp_path / "big.csv"                  # ~3,000 rows of ~30 columns: far past a pipe's buffer
    pd.DataFrame({"sentence1": texts[:50] * 60, "sentence2": texts[50:] * 60}).to_csv(big, index=False)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    run = subprocess.Popen([sys.executable, str(driver), "score", str(big), "--out", "-", "--quiet"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.stdout.readline().startswith(b"sentence1,sentence2,")      # `head -1`
    run.stdout.close()
    err = run.stderr.read().decode()
    assert run.wait(timeout=300) == 141, err                             # 128 + SIGPIPE, as cat
    assert err.strip() == "EXIT 141", err                                # not a word more


def with_digest(d: dict) -> str:
    d[DIGEST_KEY] = content_digest(d)
    return json.dumps(d)


@pytest.mark.parametrize("key", ["identical", "prov"])
def test_a_profile_number_beyond_float_range_is_refused_by_profile_show_and_score(tmp_path, pairs, capsys,
                                                                                  key):
    d = json.loads(builtin_profile_path("all-MiniLM-L6-v2").read_text(encoding="utf-8"))
    if key == "identical":
        d["metrics"]["cosine"]["identical"] = BEYOND_FLOAT
    else:          # a number nothing reads as a float today: refused all the same
        d["provenance"]["background"]["pairs"] = BEYOND_FLOAT
    path = tmp_path / "huge.calibsim-profile"
    path.write_text(with_digest(d))
    for argv in (["profile", "show", str(path)], ["score", str(pairs), "--profile", str(path)]):
        assert cli.main(argv) == 2
        err = message_of(capsys)
        assert str(path) in err and "out of any sane range" in err and "1000000000" in err
        assert "Fix: rebuild it" in err


def test_an_anchor_target_beyond_float_range_is_refused_naming_the_file(tmp_path, pairs, capsys):
    d = builtin_anchors().to_dict()
    d["levels"][0]["target"] = BEYOND_FLOAT
    path = tmp_path / "ladder.json"
    path.write_text(json.dumps(d))
    assert cli.main(["score", str(pairs), "--anchors", str(path)]) == 2
    err = message_of(capsys)
    assert str(path) in err and "levels › 0 › target" in err and "between 0 and 1" in err


def test_a_human_calibration_number_beyond_float_range_is_refused_naming_the_file(tmp_path, capsys):
    labelled = tmp_path / "labelled.csv"
    texts = random_sentences(240, seed=6)
    pd.DataFrame({"sentence1": texts[:120], "sentence2": texts[120:],
                  "score": [i % 6 for i in range(120)]}).to_csv(labelled, index=False)
    fit = tmp_path / "human.json"
    assert cli.main(["human", "fit", str(labelled), "--label", "score", "--out", str(fit), "--quiet"]) == 0
    capsys.readouterr()
    d = json.loads(fit.read_text())
    d["calibrator"]["scale"] = [0, BEYOND_FLOAT]
    fit.write_text(json.dumps(d))
    assert cli.main(["score", str(labelled), "--human", str(fit)]) == 2
    err = message_of(capsys)
    assert str(fit) in err and "out of any sane range" in err and "fit it again" in err


def test_an_old_profile_to_upgrade_with_a_number_beyond_float_range_is_refused(tmp_path, capsys):
    old = tmp_path / "old.calibsim-profile"
    old.write_text(json.dumps({"format": "calibsim-profile", "schema_version": 2,
                               "metrics": {"cosine": {"identical": BEYOND_FLOAT}}}))
    assert cli.main(["profile", "upgrade", str(old), "--out", str(tmp_path / "new.calibsim-profile")]) == 2
    err = message_of(capsys)
    assert str(old) in err and "out of any sane range" in err and "metrics › cosine › identical" in err
    assert not (tmp_path / "new.calibsim-profile").exists()
