"""The main window driven like a user would, with the fake embedder standing in for the model."""

from pathlib import Path

import pandas as pd
from PySide6.QtCore import QThreadPool
from PySide6.QtWidgets import QMessageBox

from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import ScoredPairs
from calibsim_gui.core.analysis.project import Project
from calibsim_gui.core.embedding import models
from calibsim_gui.qt.shell.main_window import MainWindow
from calibsim_gui.qt.widgets.workers import wait_for_workers
from tests.fakes import FakeEmbedder, random_sentences
from tests.qt.conftest import REFERENCES_MS, WORKERS_END_MS, Gate, build_background, drop


def test_starts_with_a_model_and_the_built_in_ladder(window):
    assert window.state.embedder.fingerprint.name == "fake-bow"
    assert window.state.profile.anchors.name == "calibsim built-in STS ladder"
    assert "fake-bow" in window.status_label.text()


def test_dropping_a_pairs_file_shows_raw_and_calibrated_results(window, qtbot, pairs_csv):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    results = window.state.results
    assert isinstance(results, ScoredPairs)
    assert {"cosine_raw", "cosine_calibrated"} <= set(results.frame.columns)
    assert window.tabs.currentWidget() is window.results
    assert len(window.distributions.plot_data()["raw_user"][0]) > 0


def test_building_a_background_adds_percentiles(window, qtbot, tmp_path, pairs_csv):
    build_background(window, qtbot, tmp_path, sentences=1500, pairs=1000, seed=3)
    assert window.state.profile.has_background
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    assert window.state.results.frame["cosine_bg_percentile"].between(0, 100).all()


def test_documents_become_a_heatmap(window, qtbot, tmp_path):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(random_sentences(12, seed=5)))
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([docs], per_file=False)
    assert isinstance(window.state.results, DocumentMatrix)
    assert window.heatmap.shown_matrix().shape == (12, 12)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.state.set_view(metric="euclidean")
    assert window.state.results.metric == "euclidean"


def test_project_saves_and_reopens_with_the_same_results(window, qtbot, tmp_path, pairs_csv):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    window.state.set_view(metric="euclidean", form="bg_zscore" if window.state.profile.has_background else "anchor_minmax")
    before = window.state.results.frame.copy()
    path = tmp_path / "study.calibsim"
    window.write_project(str(path))
    window.state.set_input(None)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_project(str(path))
    pd.testing.assert_frame_equal(window.state.results.frame, before)
    assert window.state.metric == "euclidean"


def test_cancel_stops_scoring_and_the_window_stays_usable(window, qtbot, tmp_path, monkeypatch):
    slow, gate = FakeEmbedder(), Gate(free=1)                   # held in its second batch
    original = slow.encode_batch
    monkeypatch.setattr(slow, "encode_batch", lambda texts: (gate(), original(texts))[1])
    window.state.embedder = slow
    texts = random_sentences(3000, seed=11)
    path = tmp_path / "many.csv"
    pd.DataFrame({"text1": texts, "text2": texts[::-1]}).to_csv(path, index=False)
    window.open_inputs([path])
    qtbot.waitUntil(lambda: gate.holding, timeout=120_000)
    with qtbot.waitSignal(window.score_runner.cancelled, timeout=120_000):
        window.cancel_button.click()
    gate.release()
    assert window.state.results is None
    assert not window.cancel_button.isVisible()


def test_unreadable_input_shows_a_message_and_keeps_previous_results(window, qtbot, tmp_path, pairs_csv):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    bad = tmp_path / "latin.csv"
    bad.write_bytes("sentence1,sentence2\ncaf\xe9,th\xe9\n".encode("cp1252"))
    with qtbot.waitSignal(window.input_runner.failed, timeout=120_000):
        window.open_inputs([bad])
    assert "--encoding" in window._last_error.text()
    assert window.state.results is not None


def test_closing_during_a_run_stops_its_thread(qtbot, tmp_path, monkeypatch):
    slow, gate = FakeEmbedder(), Gate()
    original = slow.encode_batch
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: slow)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.state.profile is not None, timeout=REFERENCES_MS)
    monkeypatch.setattr(slow, "encode_batch", lambda texts: (gate(), original(texts))[1])
    cancel = w.score_runner.cancel

    def stop_then_let_go():
        running = w.score_runner.running               # (a start cancels nothing running: no release)
        cancel()
        if running:
            gate.release()

    monkeypatch.setattr(w.score_runner, "cancel", stop_then_let_go)
    texts = random_sentences(2000, seed=12)
    path = tmp_path / "many.csv"
    pd.DataFrame({"text1": texts, "text2": texts[::-1]}).to_csv(path, index=False)
    w.open_inputs([path])
    qtbot.waitUntil(lambda: gate.holding, timeout=120_000)          # in its first batch
    w.close()
    assert QThreadPool.globalInstance().activeThreadCount() == 0     # close() waited for the thread
    assert gate.steps == 1                                          # which stopped after that batch


def test_project_with_edited_anchors_and_a_built_background_reopens_the_same(window, qtbot, tmp_path, pairs_csv):
    from calibsim_gui.core.references.anchors import AnchorSet

    anchors = AnchorSet.from_dict({"name": "mine", "levels": [
        {"name": "low", "target": 0.1}, {"name": "high", "target": 1.0}], "pairs": [
        {"level": "low", "text_a": "w1 w2 w3", "text_b": "w7 w8 w9"},
        {"level": "high", "text_a": "w1 w2 w3", "text_b": "w1 w2 w3"}]})
    window.anchors.set_anchor_set(anchors)
    build_background(window, qtbot, tmp_path, sentences=1200, pairs=900, seed=4)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    before = window.state.results.frame.copy()
    assert window.state.profile.anchors.name == "mine"
    path = tmp_path / "p.calibsim"
    window.write_project(str(path))

    window.anchors.reset_to_builtin()
    window.background.clear()
    with qtbot.waitSignal(window.state.profile_changed, timeout=120_000):
        window.use_builtin_reference()
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_project(str(path))
    assert window.state.profile.anchors.name == "mine"
    assert window.state.profile.background_pairs == 900
    pd.testing.assert_frame_equal(window.state.results.frame, before)


def test_unrecognised_columns_are_asked_for_and_then_scored(window, qtbot, tmp_path, monkeypatch):
    import calibsim_gui.qt.session.session as session

    asked = {}

    class Answer:
        def __init__(self, path, columns, guess, parent, *, preview):
            asked.update(columns=columns, rows=len(preview))

        def exec(self):
            return session.QDialog.DialogCode.Accepted

        def mapping(self):
            return {"text_a": "left text", "text_b": "other", "label": None}

    monkeypatch.setattr(session, "ColumnMappingDialog", Answer)
    path = tmp_path / "odd.csv"
    pd.DataFrame({"left text": random_sentences(6, seed=1), "other": random_sentences(6, seed=2),
                  "note": random_sentences(6, seed=3)}).to_csv(path, index=False)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([path])
    assert asked == {"columns": ["left text", "other", "note"], "rows": 5}
    assert window.state.input.text_a == "left text" and len(window.state.results.frame) == 6


def test_a_killed_session_is_offered_back_and_restored(qtbot, monkeypatch, pairs_csv):
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: FakeEmbedder())
    first = MainWindow()
    qtbot.addWidget(first)
    qtbot.waitUntil(lambda: first.state.profile is not None, timeout=REFERENCES_MS)
    with qtbot.waitSignal(first.results_shown, timeout=120_000):
        first.open_inputs([pairs_csv])
    first.state.set_view(metric="euclidean")
    path = first.autosaver.path          # written within seconds of the last change (an earlier one may be)
    qtbot.waitUntil(lambda: path.exists() and '"euclidean"' in path.read_text(), timeout=120_000)
    expected = first.state.results.frame
    # the process dies: no closeEvent, the autosave stays
    assert wait_for_workers(WORKERS_END_MS)

    second = MainWindow()
    qtbot.addWidget(second)
    qtbot.waitUntil(lambda: second._restore_box is not None, timeout=120_000)
    assert "pairs.csv" in second._restore_box.text()
    with qtbot.waitSignal(second.results_shown, timeout=120_000):
        second._restore_box.button(QMessageBox.StandardButton.Yes).click()
    pd.testing.assert_frame_equal(second.state.results.frame, expected)
    assert second.state.metric == "euclidean"
    second.close()                        # a normal close forgets the autosave
    assert not second.autosaver.path.exists()
    first.close()
    assert wait_for_workers(WORKERS_END_MS)
    for w in (first, second):
        w.deleteLater()


def test_a_normal_close_forgets_the_autosave_even_while_the_worker_writes_it(window, qtbot, pairs_csv):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    window.autosaver.save_in_background()         # what the timer does: written in the worker
    window.autosaver.discard()                    # the window closes before or after it is written
    assert wait_for_workers(WORKERS_END_MS)
    assert not window.autosaver.path.exists()     # no restore offered at the next start
    window.autosaver.save_in_background()         # a later change is autosaved again
    qtbot.waitUntil(window.autosaver.path.exists, timeout=120_000)
    assert Path(Project.load(window.autosaver.path).inputs[0].path).name == pairs_csv.name


def test_declining_the_restore_forgets_it(window, qtbot, pairs_csv):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    window.autosaver.save_now()
    again = MainWindow(load_default_model=False)
    qtbot.addWidget(again)
    qtbot.waitUntil(lambda: again._restore_box is not None, timeout=120_000)
    again._restore_box.button(QMessageBox.StandardButton.No).click()
    assert not again.autosaver.path.exists() and again.state.input is None
    again.close()
    again.deleteLater()


def test_long_texts_setting_is_remembered_and_rescores(window, qtbot, tmp_path):
    from tests.core.test_chunking import DOC_A, DOC_B

    path = tmp_path / "long.csv"
    pd.DataFrame({"sentence1": [DOC_A, "a cat"], "sentence2": [DOC_B, "a cat"]}).to_csv(path, index=False)
    assert window.long_text_options() == {"long_texts": "truncate", "chunk_aggregate": "match",
                                          "chunk_overlap": 32}
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [path])
    assert list(window.state.results.frame["truncated"]) == ["both", ""]
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.set_long_texts("chunk:mean")
    results = window.state.results
    assert "truncated" not in results.frame.columns
    assert results.provenance["long_texts"]["aggregate"] == "mean"
    assert results.frame.loc[0, "cosine_raw"] < 0.999
    checked = [a.data() for a in window.long_text_actions.actions() if a.isChecked()]
    assert checked == ["chunk:mean"]
    assert window.settings.value("scoring/long_texts") == "chunk:mean"
    window.set_long_texts("truncate")                                  # back to the default


def test_a_model_loads_with_the_engine_and_precision_chosen_on_the_model_tab(window, qtbot, monkeypatch):
    calls = []
    monkeypatch.setattr(models, "load_model",
                        lambda spec, device="auto", **kw: calls.append(kw) or FakeEmbedder())
    window.models.engine_combo.setCurrentIndex(window.models.engine_combo.findData("onnx"))
    window.models.precision_combo.setCurrentIndex(window.models.precision_combo.findData("int8"))
    with qtbot.waitSignal(window.state.profile_changed, timeout=120_000):
        window.load_model(None, "cpu")
    assert calls[-1]["engine"] == "onnx" and calls[-1]["precision"] == "int8"


def test_a_folder_graph_runs_unverified_only_when_ticked_and_the_model_tab_says_so(window, qtbot, monkeypatch):
    """The app's way to --trust-folder-graph (#27): off by default and never remembered."""
    from calibsim_gui.core.embedding.models import UNVERIFIED_NOTE

    calls = []

    def load(spec, device="auto", **kw):
        calls.append(kw)
        fake = FakeEmbedder()
        if kw["trust_folder_graph"]:
            fake.precision_note = f"float32 (ONNX Runtime; {UNVERIFIED_NOTE})"
        return fake
    monkeypatch.setattr(models, "load_model", load)
    assert not window.models.trust_graph_box.isChecked()
    with qtbot.waitSignal(window.state.profile_changed, timeout=120_000):
        window.load_model(None, "cpu")
    assert calls[-1]["trust_folder_graph"] is False and "unverified" not in window.models.loaded_label.text()
    window.models.trust_graph_box.setChecked(True)
    with qtbot.waitSignal(window.state.profile_changed, timeout=120_000):
        window.load_model(None, "cpu")
    assert calls[-1]["trust_folder_graph"] is True
    assert "its folder's graph, unverified" in window.models.loaded_label.text()


def test_an_opened_profile_survives_loading_the_same_model_again(window, qtbot, tmp_path, profile, monkeypatch):
    """Another engine or precision of one model keeps its fingerprint, so its references stay."""
    path = tmp_path / "news.calibsim-profile"
    profile.save(path)
    with qtbot.waitSignal(window.profile_runner.finished, timeout=REFERENCES_MS):
        window.open_profile(str(path))
    assert window.state.profile_label == path.name
    with qtbot.waitSignal(window.profile_runner.finished, timeout=REFERENCES_MS):
        window.load_model("built-in")                       # the same (fake) model, reloaded
    assert window.state.profile_label == path.name and window.profile_path == str(path)

    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: FakeEmbedder(name="other"))
    with qtbot.waitSignal(window.profile_runner.finished, timeout=REFERENCES_MS):
        window.load_model("other")                          # another model: the built-in reference, said why
    assert window.state.profile_label == "built-in"
    assert "does not fit the model now loaded" in window._last_error.text()


def test_an_engine_switch_frees_the_replaced_model(window, qtbot, good_results, monkeypatch):
    """The model loaded before is freed once another replaces it (memory), even when the loading
    task's frames outlive it (kept by an import's garbage cycle, as torch.fx's `wrap` leaves them,
    then frozen), and no finished scoring or reference task still holds it (#44)."""
    import sys
    import weakref

    from calibsim_gui.core.embedding import models
    from tests.fakes import FakeEmbedder

    kept_frames = []

    def load_model(spec, device="auto", **kw):
        kept_frames.append(sys._getframe(1))        # load_and_warm_up's, and through it the runner's
        return FakeEmbedder()

    monkeypatch.setattr(models, "load_model", load_model)
    with qtbot.waitSignal(window.model_runner.finished, timeout=120_000):
        window.load_model(None, "cpu")
    good_results()                                  # scored with it: the scoring task held it
    replaced = weakref.ref(window.state.embedder)
    with qtbot.waitSignal(window.model_runner.finished, timeout=120_000):
        window.load_model(None, "cpu")
    assert window.state.embedder is not replaced()
    qtbot.waitUntil(lambda: replaced() is None, timeout=20_000)
    assert len(kept_frames) == 2
