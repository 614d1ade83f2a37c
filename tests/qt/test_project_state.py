"""What shapes a number survives: a saved project reopens with the same numbers, another engine
of the same model keeps the human calibration, an own background keeps the human band (#42)."""

import threading

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import Qt

from calibsim_gui.core.calibration.calibrators import AgreementBand
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.embedding import models
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.references.anchors import AnchorSet
from calibsim_gui.qt.editors import background_loader
from calibsim_gui.session import references
from tests.fakes import FakeEmbedder, random_sentences
from tests.qt.conftest import REFERENCES_MS

ANCHORS = AnchorSet.from_dict({"name": "mine", "levels": [
    {"name": "low", "target": 0.1}, {"name": "high", "target": 1.0}], "pairs": [
    {"level": "low", "text_a": "w1 w2 w3", "text_b": "w7 w8 w9"},
    {"level": "high", "text_a": "w1 w2 w3", "text_b": "w1 w2 w3"}]})


def engine_fake(spec, device="auto", *, engine="auto", precision="float32", **kw):
    """The fake model, saying which engine and precision it was loaded with."""
    fake = FakeEmbedder()
    fake.engine = "torch" if engine == "auto" else engine
    fake.precision = "float32" if precision == "auto" else precision
    return fake


@pytest.fixture(scope="module")
def banded_profile():
    """The fake's built-in references with a human agreement band (as the built-in model's have)."""
    fake, rng = FakeEmbedder(), np.random.default_rng(0)
    profile = build_profile(fake, None)
    calibrated = rng.uniform(0, 1, 2000)
    people = np.clip(calibrated + rng.normal(0, 0.1, 2000), 0, 1)
    for ref in profile.metrics.values():
        ref.band = AgreementBand().fit(calibrated, people, source={"name": "people.csv"},
                                       model=fake.fingerprint.id)
    profile.provenance["human_band"] = {"name": "people.csv", "pairs": 2000}
    return profile


@pytest.fixture
def banded(window, qtbot, monkeypatch, banded_profile):
    """The window on the fake with engines, its built-in references carrying a band."""
    monkeypatch.setattr(models, "load_model", engine_fake)
    monkeypatch.setattr(references, "default_profile", lambda embedder, **kw: banded_profile)
    with qtbot.waitSignal(window.state.profile_changed, timeout=REFERENCES_MS):
        window.use_builtin_reference()
    return window


def choose_engine(window, engine):
    """Model tab ▸ Engine."""
    window.models.engine_combo.setCurrentIndex(window.models.engine_combo.findData(engine))


def load_engine(window, qtbot, engine):
    choose_engine(window, engine)
    window.load_model(None)
    qtbot.waitUntil(lambda: getattr(window.state.embedder, "engine", "") == engine and window.state.results is not None,
                    timeout=REFERENCES_MS)


def build_html_background(window, qtbot, tmp_path):
    """A corpus with HTML leftovers, cleaned before building (the checkbox ticked)."""
    corpus = tmp_path / "news.txt"
    corpus.write_text("\n".join(f"{s} &lt;b&gt;read more&lt;/b&gt; &#39;quoted&#39;"
                                for s in random_sentences(1200, seed=8)))
    window.background.add_paths([corpus])
    qtbot.waitUntil(lambda: window.background.documents() is not None, timeout=120_000)
    window.background.clean_html.setChecked(True)
    with qtbot.waitSignal(window.state.profile_changed, timeout=REFERENCES_MS):
        window.build_background(window.background.documents(), 900, 4)


def test_a_reopened_project_has_every_column_it_was_saved_with(banded, qtbot, tmp_path, pairs_csv, labelled_pairs):
    window = banded
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    load_engine(window, qtbot, "onnx")                                  # not the default engine
    window.anchors.set_anchor_set(ANCHORS)
    with qtbot.waitSignal(window.state.profile_changed, timeout=REFERENCES_MS):
        window.apply_anchors(ANCHORS)
    build_html_background(window, qtbot, tmp_path)
    qtbot.waitUntil(lambda: window.state.results is not None and not window.score_runner.running, timeout=120_000)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.human.fit(str(labelled_pairs), "0,5")
    window.set_long_texts("chunk:max")
    qtbot.waitUntil(lambda: window.state.results is not None and not window.score_runner.running, timeout=120_000)
    before = window.state.results.frame.copy()
    band = window.state.profile.metrics["cosine"].band
    assert "cosine_human" in before and band is not None                  # a fit, a band
    assert window.state.profile.provenance["background"]["clean_html"] is True
    path = tmp_path / "study.calibsim"
    assert window.write_project(str(path))

    # another session's choices: default engine, no cleaning, built-in ladder, truncation, no fit
    load_engine(window, qtbot, "torch")
    window.state.set_human(None)
    window.background.clean_html.setChecked(False)
    window.anchors.reset_to_builtin()
    window.background.clear()
    with qtbot.waitSignal(window.state.profile_changed, timeout=REFERENCES_MS):
        window.use_builtin_reference()
    window.set_long_texts("truncate")
    qtbot.waitUntil(lambda: not any(runner.running for runner in window.runners), timeout=REFERENCES_MS)
    window.state.set_input(None)

    with qtbot.waitSignal(window.results_shown, timeout=REFERENCES_MS):
        window.open_project(str(path))
    # a loaded machine can show a first score (the built-in ladder) before the project's anchors
    # are applied and scored again: wait for the session at rest with the saved ladder's scores;
    # the frame comparison below says what differs if it never gets there
    def settled_as_saved() -> bool:
        results = window.state.results
        return (results is not None and not any(runner.running for runner in window.runners)
                and results.frame["cosine_anchor_minmax"].equals(before["cosine_anchor_minmax"]))

    try:
        qtbot.waitUntil(settled_as_saved, timeout=REFERENCES_MS)
    except qtbot.TimeoutError:
        pass
    assert window.state.embedder.engine == "onnx"
    assert window.state.profile.provenance["background"]["clean_html"] is True
    assert window.long_text_options()["long_texts"] == "chunk"
    assert window.state.profile.metrics["cosine"].band.to_dict() == band.to_dict()
    pd.testing.assert_frame_equal(window.state.results.frame, before)


def saved_with_background(window, qtbot, tmp_path, pairs_csv):
    """A project of scored pairs with its own anchors and a built background, saved with the onnx
    engine, then the torch engine loaded (reopening loads the model again); returns its file and
    its scores."""
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    load_engine(window, qtbot, "onnx")
    window.anchors.set_anchor_set(ANCHORS)
    with qtbot.waitSignal(window.state.profile_changed, timeout=REFERENCES_MS):
        window.apply_anchors(ANCHORS)
    build_html_background(window, qtbot, tmp_path)
    qtbot.waitUntil(lambda: at_rest(window), timeout=120_000)
    saved = window.state.results.frame["cosine_anchor_minmax"].copy()
    path = tmp_path / "study.calibsim"
    assert window.write_project(str(path))
    load_engine(window, qtbot, "torch")
    qtbot.waitUntil(lambda: at_rest(window), timeout=120_000)
    return str(path), saved


def at_rest(window) -> bool:
    return window.state.results is not None and not any(runner.running for runner in window.runners)


def has_project_anchors(anchors) -> bool:
    return (anchors.levels, anchors.pairs) == (ANCHORS.levels, ANCHORS.pairs)


def test_a_reopened_project_never_shows_scores_of_references_it_does_not_use(banded, qtbot, tmp_path, pairs_csv,
                                                                            monkeypatch):
    """Reopening loads the model again, which starts the built-in references; when they arrive
    before the project's background is read (a busy machine), they neither settle the project
    nor replace its anchor ladder: every score shown is made with the project's references."""
    window = banded
    path, saved = saved_with_background(window, qtbot, tmp_path, pairs_csv)
    read, read_corpus = threading.Event(), background_loader._read_corpus    # the background's reading
    monkeypatch.setattr(background_loader, "_read_corpus",
                        lambda documents: read.wait(REFERENCES_MS / 1000) and read_corpus(documents))
    shown = []
    window.state.results_changed.connect(lambda: shown.append(window.state.results))
    try:
        window.open_project(path)
        # the model is loaded and the input read again while the background is still being read
        qtbot.waitUntil(lambda: window.state.embedder.engine == "onnx" and not any(
            r.running for r in (window.model_runner, window.profile_runner, window.input_runner,
                                window.score_runner)), timeout=REFERENCES_MS)
    finally:
        read.set()
    qtbot.waitUntil(lambda: at_rest(window), timeout=REFERENCES_MS)
    assert has_project_anchors(window.anchors.anchor_set())
    scores = [results.frame["cosine_anchor_minmax"] for results in shown if results is not None]
    assert scores and all(score.equals(saved) for score in scores)


def test_a_reopened_project_whose_background_cannot_be_read_scores_on_the_built_in_one(
        banded, qtbot, tmp_path, pairs_csv, monkeypatch):
    """The background not read again: said, and the input scored on the built-in references
    with the project's anchors."""
    window = banded
    path, _ = saved_with_background(window, qtbot, tmp_path, pairs_csv)

    def unreadable(documents):
        raise InputError("news.txt cannot be read", fix="check the file")

    monkeypatch.setattr(background_loader, "_read_corpus", unreadable)
    window.open_project(path)
    qtbot.waitUntil(lambda: window.state.embedder.engine == "onnx" and at_rest(window), timeout=REFERENCES_MS)
    assert window._last_error.windowTitle() == "Background not rebuilt"
    assert window.state.profile.provenance.get("background") is None
    assert has_project_anchors(window.state.profile.anchors) and has_project_anchors(window.anchors.anchor_set())


def test_another_engine_of_the_same_model_keeps_the_human_calibration(banded, qtbot, pairs_csv, labelled_pairs):
    window = banded
    asked = []
    window.ask_unsaved = lambda action, what: asked.append(what) or "cancel"
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.human.fit(str(labelled_pairs), "0,5")
    table = window.results
    table.table.sortByColumn(table.model.column_of("cosine_human"), Qt.SortOrder.DescendingOrder)
    choose_engine(window, "onnx")
    window.models.load_requested.emit(window.state.model_info, "auto")            # Model tab ▸ Load
    qtbot.waitUntil(lambda: getattr(window.state.embedder, "engine", "") == "onnx"
                    and window.state.results is not None and not window.score_runner.running, timeout=REFERENCES_MS)
    assert asked == []                                          # nothing to ask: nothing goes
    assert window.state.human is not None and "cosine_human" in window.state.results.frame
    header = table.table.horizontalHeader()
    assert table.model.column_names[header.sortIndicatorSection()] == "cosine_human"
    assert "+ human" in table.columns_combo.currentText()
    assert "the human calibration" in window.unsaved_work()     # the quit prompt still names it


def test_an_own_background_keeps_the_human_band(banded, qtbot, tmp_path, pairs_csv):
    window = banded
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    calibrated = window.state.results.frame["cosine_calibrated"].copy()
    assert window.state.profile.metrics["cosine"].band is not None
    build_html_background(window, qtbot, tmp_path)
    qtbot.waitUntil(lambda: window.state.results is not None and not window.score_runner.running, timeout=120_000)
    profile = window.state.profile
    assert profile.has_background and profile.metrics["cosine"].band is not None   # tooltips and reports read it
    assert profile.provenance["human_band"]["name"] == "people.csv"
    pd.testing.assert_series_equal(window.state.results.frame["cosine_calibrated"], calibrated)


def test_a_project_whose_engine_cannot_run_here_asks_before_opening(window, qtbot, tmp_path, pairs_csv, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    from calibsim_gui.core.analysis.project import Project, ProjectInput

    path = Project(engine="onnx", precision="bfloat16", inputs=[ProjectInput(str(pairs_csv))]).save(
        tmp_path / "elsewhere.calibsim")
    asked = []
    monkeypatch.setattr(QMessageBox, "exec", lambda box: asked.append(box.text()) or QMessageBox.StandardButton.Cancel)
    window.open_project(str(path))
    assert "onnx in bfloat16" in asked[0] and "cannot run" in asked[0]
    assert window.project_path is None and window.state.input is None      # nothing changed
    monkeypatch.setattr(QMessageBox, "exec", lambda box: QMessageBox.StandardButton.Open)
    with qtbot.waitSignal(window.results_shown, timeout=REFERENCES_MS):
        window.open_project(str(path))
    assert window.project_path == str(path) and len(window.state.results.frame) == 30


def test_save_project_starts_in_documents_then_in_the_last_project_folder(window, tmp_path, monkeypatch):
    from PySide6.QtCore import QStandardPaths
    from PySide6.QtWidgets import QFileDialog

    documents = tmp_path / "Documents"
    monkeypatch.setattr(QStandardPaths, "writableLocation", lambda where: str(documents))
    offered = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda parent, title, start, *a: offered.append(start) or ("", ""))
    window.projects.save_as()
    assert offered == [str(documents / "study.calibsim")]                 # not the program's folder
    (tmp_path / "work").mkdir()
    assert window.write_project(str(tmp_path / "work" / "a.calibsim"))
    window.projects.path = None                                           # a new session
    window.projects.save_as()
    assert offered[-1] == str(tmp_path / "work" / "study.calibsim")


def test_an_older_project_that_did_not_say_whether_it_cleaned_html_asks(window, qtbot, tmp_path, pairs_csv,
                                                                       monkeypatch):
    import json

    from PySide6.QtWidgets import QMessageBox

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    build_html_background(window, qtbot, tmp_path)
    path = tmp_path / "old.calibsim"
    assert window.write_project(str(path))
    data = json.loads(path.read_text())
    del data["background"]["options"]                               # as an older calibsim saved it
    path.write_text(json.dumps(data))
    window.background.clean_html.setChecked(False)
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda parent, title, text: asked.append(text)
                        or QMessageBox.StandardButton.Yes)
    qtbot.waitUntil(lambda: not any(runner.running for runner in window.runners), timeout=REFERENCES_MS)
    with qtbot.waitSignal(window.state.profile_changed, timeout=REFERENCES_MS):
        window.open_project(str(path))
    assert len(asked) == 1 and "HTML leftovers" in asked[0]
    assert window.state.profile.provenance["background"]["clean_html"] is True


def test_a_project_opened_as_the_app_starts_loads_its_model_once(qtbot, tmp_path, pairs_csv, monkeypatch):
    """A project opened from the file manager: the window's start-up load and the project want the
    same model. It is loaded once; before, a second load started beside the first (two threads
    importing torch and loading its graph) and the first's model was thrown away."""
    from calibsim_gui.core.analysis.project import Project, ProjectInput
    from calibsim_gui.qt.shell.main_window import MainWindow
    from calibsim_gui.qt.widgets.workers import wait_for_workers
    from tests.qt.conftest import WORKERS_END_MS, Gate

    gate, loads = Gate(), []

    def load(spec, device="auto", **kw):
        loads.append((spec, device))
        gate()
        return FakeEmbedder()

    monkeypatch.setattr(models, "load_model", load)
    path = Project(inputs=[ProjectInput(str(pairs_csv))]).save(tmp_path / "study.calibsim")
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: gate.holding, timeout=REFERENCES_MS)        # the start-up load is on its way
    window.open_project(str(path))
    gate.release()
    qtbot.waitUntil(lambda: window.state.results is not None, timeout=REFERENCES_MS)
    assert window.project_path == str(path) and len(window.state.results.frame) == 30
    assert loads == [(None, "auto")]
    window.close()
    assert wait_for_workers(WORKERS_END_MS)
