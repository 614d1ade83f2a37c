"""`profile build --clean-html`, and a command-line report (a profile file, a human calibration
file, an anchors file) whose Reproduce commands, run in a fresh copy of the folders, give its
numbers; the fake model stands in for the real one (tests/core/test_reproduce_real.py runs it)."""

import json
import shlex
import shutil

import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.cli import common
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.io.output import dump_json
from calibsim_gui.core.provenance import file_digest
from calibsim_gui.core.references.anchors import AnchorSet, builtin_anchors
from tests.fakes import FakeEmbedder
from tests.reproduce_data import write_user_files


@pytest.fixture(autouse=True)
def fake_model(monkeypatch):
    monkeypatch.setattr(common, "load_model", lambda args: FakeEmbedder())


@pytest.fixture
def user(tmp_path):
    return write_user_files(tmp_path / "user")


def test_clean_html_cleans_the_background_and_says_so_in_the_profile(user, tmp_path, capsys):
    news = user / "data" / "agnews" / "test.csv"
    for flags, name in (([], "raw"), (["--clean-html"], "clean")):
        assert cli.main(["profile", "build", "--background", str(news), "--column", "text", "--pairs", "500",
                         *flags, "--out", str(tmp_path / f"{name}.calibsim-profile")]) == 0
    raw, clean = (ReferenceProfile.load(tmp_path / f"{n}.calibsim-profile").provenance["background"]
                  for n in ("raw", "clean"))
    assert raw["clean_html"] is False and clean["clean_html"] is True
    assert "cleaned HTML leftovers from 134 texts" in capsys.readouterr().err
    plain = tmp_path / "plain.txt"                  # no leftovers: nothing to clean, none recorded
    plain.write_text("\n".join(f"sentence  number {i}" for i in range(50)))
    assert cli.main(["profile", "build", "--background", str(plain), "--clean-html", "-q",
                     "--out", str(tmp_path / "plain.calibsim-profile")]) == 0
    background = ReferenceProfile.load(tmp_path / "plain.calibsim-profile").provenance["background"]
    assert background["clean_html"] is False and background["sentences"] == 50


def test_a_command_line_report_names_its_files_by_role_and_reproduces_in_a_fresh_folder(user, tmp_path,
                                                                                       monkeypatch):
    data, work, reports = user / "data", user / "work", user / "reports"
    work.mkdir()
    ladder = builtin_anchors()
    (work / "edited.json").write_text(dump_json(AnchorSet(ladder.name, ladder.levels, ladder.pairs[1::2]).to_dict()))
    profile, human = work / "news.calibsim-profile", work / "stsb.calibsim-human"
    assert cli.main(["profile", "build", "--background", str(data / "agnews" / "test.csv"), "--column", "text",
                     "--clean-html", "--pairs", "800", "--seed", "3", "--out", str(profile), "-q"]) == 0
    assert cli.main(["human", "fit", str(data / "stsb" / "train.csv"), "--profile", str(profile),
                     "--out", str(human), "-q"]) == 0
    for out in ("r.json", "r.csv"):
        assert cli.main(["score", str(data / "stsb" / "test.csv"), "--profile", str(profile), "--anchors",
                         str(work / "edited.json"), "--human", str(human), "--geometry", "whiten",
                         "--out", str(reports / out), "-q"]) == 0
    sidecar = json.loads((reports / "r.csv.provenance.json").read_text())     # a table's side-car too
    assert {"pairs", "background", "profile", "human calibration"} <= {f["role"] for f in sidecar["files"]}
    report = json.loads((reports / "r.json").read_text())
    files = {(f["role"], f["name"]): f for f in report["provenance"]["files"]}
    assert {("pairs", "test.csv"), ("background", "test.csv"), ("profile", "news.calibsim-profile"),
            ("anchors", "r-anchors.json"), ("human calibration", "stsb.calibsim-human"),
            ("human training pairs", "train.csv")} <= set(files)
    assert all(len(f["sha256"] or "") == 64 for f in files.values()), files
    assert files["anchors", "r-anchors.json"]["sha256"] == file_digest(reports / "r-anchors.json")
    assert files["profile", "news.calibsim-profile"]["sha256"] == file_digest(profile)
    (entry,) = report["provenance"]["human"]
    assert entry["file"] == str(human) and entry["training_file"].endswith("train.csv")
    assert entry["cross_validated"]["mae"] is not None
    (command,) = report["reproduce"]          # the profile is a file: no build command
    argv = shlex.split(command)
    assert argv[:3] == ["calibsim", "score", "../data/stsb/test.csv"]
    for flag, value in (("--profile", "../work/news.calibsim-profile"), ("--anchors", "r-anchors.json"),
                        ("--human", "../work/stsb.calibsim-human"), ("--geometry", "whiten"),
                        ("--text-a", "sentence1"), ("--label", "score")):
        assert argv[argv.index(flag) + 1] == value, flag

    fresh = tmp_path / "fresh"
    shutil.copytree(user, fresh)
    for written in (fresh / "reports").glob("r*"):
        if written.name not in ("r.json", "r-anchors.json"):
            written.unlink()
    monkeypatch.chdir(fresh / "reports")
    assert cli.main(argv[1:] + ["-q"]) == 0
    again = json.loads((fresh / "reports" / argv[argv.index("--out") + 1]).read_text())
    first, second = pd.DataFrame(report["rows"]), pd.DataFrame(again["rows"])
    assert "cosine_human" in first and "cosine_calibrated@whiten" in first
    scores = [c for c in first.columns if c.split("_")[0] in ("cosine", "dot", "euclidean")]
    pd.testing.assert_frame_equal(first[scores], second[scores], rtol=1e-6)
