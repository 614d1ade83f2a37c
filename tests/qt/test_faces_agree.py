"""#41's acceptance: the command line, the Python API and the app drive one session model, so
they write byte-identical score tables for the same pairs, model, references, anchors, geometry
fix and human calibration. 40 STS-B pairs scored with the fake model by each face."""

import json

import pandas as pd
import pytest
from PySide6.QtWidgets import QFileDialog

import calibsim
from calibsim_gui import cli
from calibsim_gui.cli import common
from calibsim_gui.core.io.output import write_frame
from calibsim_gui.core.references.anchors import builtin_anchors, load_anchors
from tests.conftest import DATA
from tests.fakes import FakeEmbedder
from tests.qt.conftest import REFERENCES_MS, drop

SCORING_MS = 120_000               # bounds, not paces
EXPORT_MS = 120_000


@pytest.fixture
def pairs(tmp_path):
    """The first 40 pairs of STS-B test (score, sentence1, sentence2)."""
    path = tmp_path / "stsb40.csv"
    pd.read_csv(DATA / "stsb" / "test.csv", nrows=40, dtype=str, keep_default_na=False).to_csv(path, index=False)
    return path


@pytest.fixture
def profile_file(profile, tmp_path):
    """The fake model's references with a background (so geometry fixes can be fitted), saved."""
    path = tmp_path / "fake.calibsim-profile"
    profile.save(path)
    return path


@pytest.fixture
def ladder(tmp_path):
    """The built-in anchor ladder with every other pair left out: an edited ladder."""
    anchors = builtin_anchors().to_dict()
    anchors["pairs"] = anchors["pairs"][::2]
    path = tmp_path / "ladder.json"
    path.write_text(json.dumps(anchors))
    return path


def human_fit(tmp_path, profile=None, geometry="none"):
    """A human calibration fitted by `calibsim human fit` on the next 200 STS-B test pairs (fake
    model), under `geometry` with the references of `profile`."""
    labelled = tmp_path / "stsb200.csv"
    pd.read_csv(DATA / "stsb" / "test.csv", skiprows=range(1, 41), nrows=200).to_csv(labelled, index=False)
    command = ["human", "fit", str(labelled), "--scale", "0,5", "--geometry", geometry, "--out", str(tmp_path / "fit")]
    assert cli.main(command + (["--profile", str(profile)] if profile else []) + ["-q"]) == 0
    return tmp_path / "fit.calibsim-human"


def export_csv(window, qtbot, path) -> None:
    """File ▸ Export, past its dialog: the current results as a CSV table."""
    with qtbot.waitSignal(window.export_runner.finished, timeout=EXPORT_MS):
        window.exports.start(path=str(path), metric="cosine", form="calibrated", figures=False, force=False)


def app_scores(window, qtbot, pairs, out, monkeypatch, *, profile=None, anchors=None, geometry="none",
               human=None) -> None:
    """Open `profile`, `anchors` and a `human` calibration file and choose `geometry` in the app,
    drop `pairs`, export the results at rest to `out`."""
    state = window.state
    if human is not None:
        monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(human), ""))
        window.human.choose_file()
        assert state.human is not None
    if profile is not None:
        with qtbot.waitSignal(state.profile_changed, timeout=REFERENCES_MS):
            window.open_profile(str(profile))
        qtbot.waitUntil(lambda: not window.profile_runner.running, timeout=REFERENCES_MS)
    if anchors is not None:
        with qtbot.waitSignal(state.profile_changed, timeout=REFERENCES_MS):
            window.apply_anchors(load_anchors(anchors))
        qtbot.waitUntil(lambda: not window.profile_runner.running, timeout=REFERENCES_MS)
    state.set_geometry(geometry)
    with qtbot.waitSignal(window.results_shown, timeout=SCORING_MS):
        drop(window, [pairs])
    qtbot.waitUntil(lambda: not window.score_runner.running and state.results is not None, timeout=SCORING_MS)
    assert state.profile_path == (str(profile) if profile else None)
    export_csv(window, qtbot, out)


CASES = {
    "built-in references": {},
    "a background profile, whitened": {"profile": True, "geometry": "whiten"},
    "an edited anchor ladder": {"anchors": True},
    "a profile, edited anchors, centred": {"profile": True, "anchors": True, "geometry": "center"},
    "a human calibration": {"human": "none"},
    "a human calibration fitted under centring": {"profile": True, "human": "center"},
}


@pytest.mark.parametrize("case", CASES)
def test_the_cli_the_api_and_the_app_write_the_same_table(case, window, qtbot, pairs, profile_file, ladder,
                                                          tmp_path, monkeypatch):
    monkeypatch.setattr(common, "load_model", lambda args: FakeEmbedder())   # as the app's and the API's
    chosen = CASES[case]
    profile = profile_file if chosen.get("profile") else None
    human = human_fit(tmp_path, profile, chosen["human"]) if "human" in chosen else None
    anchors = ladder if chosen.get("anchors") else None
    geometry = chosen.get("geometry", "none")

    command = ["score", str(pairs), "--out", str(tmp_path / "cli.csv"), "-q"]
    command += ["--profile", str(profile)] if profile else []
    command += ["--anchors", str(anchors)] if anchors else []
    command += ["--geometry", geometry] if geometry != "none" else []
    command += ["--human", str(human)] if human else []
    assert cli.main(command) == 0

    session = calibsim.Session(profile=profile, anchors=anchors, progress=False)
    frame = session.score(pairs, geometry=[] if geometry == "none" else [geometry], human=human)
    write_frame(frame, frame.attrs["provenance"], tmp_path / "api.csv")

    app_scores(window, qtbot, pairs, tmp_path / "app.csv", monkeypatch, profile=profile, anchors=anchors,
               geometry=geometry, human=human)

    tables = {face: (tmp_path / f"{face}.csv").read_bytes() for face in ("cli", "api", "app")}
    header = tables["cli"].split(b"\n", 1)[0].decode()
    assert "cosine_calibrated" in header
    assert (f"@{geometry}" in header) == (geometry != "none")
    human_column = "cosine_human" + ("" if chosen.get("human", "none") == "none" else f"@{chosen['human']}")
    assert (human_column in header) == (human is not None)
    assert tables["api"] == tables["cli"], "the API's table differs from the command line's"
    assert tables["app"] == tables["cli"], "the app's table differs from the command line's"
