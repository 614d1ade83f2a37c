"""The real model on the ONNX engine in int8: a report made with a cleaned background built on it
and an edited ladder reproduces its numbers from its own Reproduce commands in a fresh folder."""

import json
import shlex
import shutil

import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.core.io.output import dump_json
from calibsim_gui.core.references.anchors import AnchorSet, builtin_anchors
from tests.reproduce_data import write_user_files

pytestmark = pytest.mark.slow


def test_an_int8_onnx_report_reproduces_from_its_commands(tmp_path, monkeypatch):
    user = write_user_files(tmp_path / "user")
    data, reports = user / "data", user / "reports"
    ladder = builtin_anchors()
    (user / "edited.json").write_text(dump_json(AnchorSet(ladder.name, ladder.levels, ladder.pairs[::2]).to_dict()))
    engine = ["--engine", "onnx", "--precision", "int8", "--device", "cpu", "-q"]
    profile = user / "news.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(data / "agnews" / "test.csv"), "--column", "text",
                     "--clean-html", "--pairs", "2000", "--out", str(profile), *engine]) == 0
    assert cli.main(["score", str(data / "stsb" / "test.csv"), "--profile", str(profile), "--anchors",
                     str(user / "edited.json"), "--out", str(reports / "r.json"), *engine]) == 0
    report = json.loads((reports / "r.json").read_text())
    assert report["provenance"]["model"]["engine"] == "onnx"
    (command,) = report["reproduce"]
    argv = shlex.split(command)
    assert argv[argv.index("--engine") + 1] == "onnx" and argv[argv.index("--precision") + 1] == "int8"
    fresh = tmp_path / "fresh"
    for name in ("data", "news.calibsim-profile"):
        (shutil.copytree if name == "data" else shutil.copy)(user / name, fresh / name)
    (fresh / "reports").mkdir()
    for name in ("r.json", "r-anchors.json"):
        shutil.copy(reports / name, fresh / "reports" / name)
    monkeypatch.chdir(fresh / "reports")
    assert cli.main(argv[1:] + ["-q", "--device", "cpu"]) == 0
    again = json.loads((fresh / "reports" / argv[argv.index("--out") + 1]).read_text())
    first, second = pd.DataFrame(report["rows"]), pd.DataFrame(again["rows"])
    scores = [c for c in first.columns if c.startswith(("cosine_", "dot_", "euclidean_"))]
    assert "cosine_calibrated" in scores
    pd.testing.assert_frame_equal(first[scores], second[scores], rtol=1e-6)
