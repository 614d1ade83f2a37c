"""A typical session in the app (a cleaned background, edited anchors, a human calibration, the
ONNX engine in int8), exported; the report's Reproduce commands, run through the command line in
a fresh folder holding copies of the files laid out as the user's, give the report's numbers."""

import json
import re
import shlex
import shutil
from html import unescape

import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.cli import common
from calibsim_gui.core.embedding import model_folders, models
from calibsim_gui.core.references.anchors import AnchorSet
from tests.fakes import FakeEmbedder
from tests.qt.conftest import REFERENCES_MS, drop
from tests.reproduce_data import write_user_files


def engine_embedder(engine="onnx", precision="int8"):
    """The fake model, saying it runs on `engine` in `precision` (as the ONNX int8 model would)."""
    embedder = FakeEmbedder()
    embedder.engine, embedder.precision, embedder.precision_note = engine, precision, precision
    return embedder


@pytest.fixture
def user_files(tmp_path):
    return write_user_files(tmp_path / "user")


@pytest.fixture
def session_window(qtbot, monkeypatch, window):
    """The window with the fake model on the ONNX engine in int8 (the Model tab's choice)."""
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: engine_embedder())
    window.session.load_model(None, "auto")
    qtbot.waitUntil(lambda: getattr(window.state.embedder, "engine", "") == "onnx"
                    and window.state.profile is not None and not window.profile_runner.running, timeout=REFERENCES_MS)
    return window


def edited(ladder: AnchorSet) -> AnchorSet:
    """The ladder with every other pair dropped, as a user edits it in the Anchors tab."""
    return AnchorSet(ladder.name, ladder.levels, ladder.pairs[::2])


def test_a_typical_session_reproduces_from_its_report_in_a_fresh_folder(session_window, qtbot, user_files,
                                                                        tmp_path, monkeypatch):
    window, state = session_window, session_window.state
    agnews, stsb = user_files / "data" / "agnews" / "test.csv", user_files / "data" / "stsb" / "test.csv"
    background = window.background
    background.add_paths([agnews])                               # Background tab: add the corpus
    qtbot.waitUntil(lambda: background.clean_html.isVisibleTo(background)
                    and background.build_button.isEnabled(), timeout=120_000)
    background.clean_html.setChecked(True)                        # "Clean them before building"
    background.set_options(1500, 7)
    background.build_button.click()
    qtbot.waitUntil(lambda: state.profile_label.startswith("built from") and not window.profile_runner.running,
                    timeout=REFERENCES_MS)
    assert state.profile.provenance["background"]["clean_html"] is True
    window.session.apply_anchors(edited(state.profile.anchors))   # Anchors tab: edit, Apply
    qtbot.waitUntil(lambda: state.profile_label.endswith("+ edited anchors")
                    and not window.profile_runner.running, timeout=REFERENCES_MS)
    assert "edited" in state.profile.provenance["anchors"]["name"]
    assert state.profile.provenance["anchors"]["builtin"] is False
    window.human.fit(str(user_files / "data" / "stsb" / "train.csv"), "0–5")   # File ▸ Fit human calibration
    qtbot.waitUntil(lambda: state.human is not None, timeout=120_000)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [stsb])
    assert "cosine_human" in state.results.frame.columns

    reports = user_files / "reports"
    for report in (reports / "session.json", reports / "session.html"):    # File ▸ Export report
        window.exports.start(path=str(report), metric="cosine", form="calibrated", figures=False, force=False)
        qtbot.waitUntil(lambda written=report: written.is_file() and not window.export_runner.running,
                        timeout=120_000)
    data = json.loads((reports / "session.json").read_text())
    commands = data["reproduce"]
    page = (reports / "session.html").read_text()
    shown = unescape(re.search(r'id="reproduce".*?<pre>(.*?)</pre>', page, re.DOTALL).group(1)).split("\n")
    same = [re.sub(r"again\.(json|html)$", "again", c) for c in commands]
    assert same == [re.sub(r"again\.(json|html)$", "again", c) for c in shown if c]     # HTML and JSON agree

    # what the report says: each file by role with its sha256, the profile it builds, the human fit
    prov = data["provenance"]
    roles = {(f["role"], f["name"]): f for f in prov["files"]}
    assert {("pairs", "test.csv"), ("background", "test.csv"), ("anchors", "session-anchors.json"),
            ("human training pairs", "train.csv")} <= set(roles)
    assert all(len(f["sha256"]) == 64 for f in prov["files"])
    assert roles["background", "test.csv"]["path"] != roles["pairs", "test.csv"]["path"]
    (human,) = prov["human"]
    assert human["training_file"].endswith("train.csv") and len(human["training_sha256"]) == 64
    assert 0 <= human["cross_validated"]["mae"] < 1
    assert prov["choices"]["clean_html"] is True and prov["choices"]["engine"] == "onnx"
    summary = re.search(r'id="summary"(.*?)id="how-to-read"', page, re.DOTALL).group(1)
    assert "1 files" not in summary and "session-profile.calibsim-profile" in summary
    assert "train.csv" in summary and "cross-validated error" in summary

    build, fit, score = (shlex.split(c) for c in commands)
    assert build[:3] == ["calibsim", "profile", "build"] and "--clean-html" in build
    assert build[build.index("--background") + 1] == "../data/agnews/test.csv"
    assert fit[:4] == ["calibsim", "human", "fit", "../data/stsb/train.csv"]
    assert score[:3] == ["calibsim", "score", "../data/stsb/test.csv"]
    assert score[score.index("--human") + 1] == fit[fit.index("--out") + 1]
    for argv in (build, fit, score):
        assert argv[argv.index("--engine") + 1] == "onnx" and argv[argv.index("--precision") + 1] == "int8"

    # a fresh folder holding copies of the inputs, laid out as the user's, and the report's files
    fresh = tmp_path / "fresh"
    shutil.copytree(user_files / "data", fresh / "data")
    (fresh / "reports").mkdir()
    for name in ("session.json", "session-anchors.json"):
        shutil.copy(reports / name, fresh / "reports" / name)
    loaded = []

    def load_model(args):
        loaded.append((args.engine, args.precision))
        return engine_embedder(args.engine, args.precision)

    monkeypatch.setattr(common, "load_model", load_model)
    monkeypatch.setattr(model_folders, "resolve_model", lambda name: FakeEmbedder().info)
    monkeypatch.chdir(fresh / "reports")
    for argv in (build, fit, score):
        assert cli.main(argv[1:] + ["--quiet"]) == 0, argv
    assert loaded == [("onnx", "int8")] * 3
    again = json.loads((fresh / "reports" / score[score.index("--out") + 1]).read_text())
    first, second = pd.DataFrame(data["rows"]), pd.DataFrame(again["rows"])
    columns = [c for c in first.columns if c.startswith("cosine_")]
    assert {"cosine_raw", "cosine_calibrated", "cosine_anchor_minmax", "cosine_bg_percentile",
            "cosine_human"} <= set(columns)
    pd.testing.assert_frame_equal(first[columns], second[columns], rtol=1e-6)
    assert again["provenance"]["choices"]["clean_html"] is True
