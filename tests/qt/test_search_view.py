"""The Search tab and the Threshold dialog, on the fake model."""

import json
import time

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from tests.fakes import random_sentences
from tests.qt.conftest import HOLD_S, drop  # noqa: F401  (the window's own drop helper)


@pytest.fixture
def search_files(tmp_path):
    texts = random_sentences(200, seed=8)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n")
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join([texts[3], texts[150], "words not in the corpus at all"]) + "\n")
    return queries, corpus, texts


def drop_on(widget, paths) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    event = QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                       Qt.KeyboardModifier.NoModifier)
    widget.dropEvent(event)


def test_search_tab_ranks_hits_in_a_worker_and_exports_them(window, qtbot, search_files, tmp_path):
    queries, corpus, texts = search_files
    view = window.search
    window.tabs.setCurrentWidget(view)
    assert not view.search_button.isEnabled()                # no queries or corpus yet
    drop_on(view.queries, [queries])
    drop_on(view.corpus, [corpus])
    assert view.queries.paths() == [str(queries)] and view.corpus.paths() == [str(corpus)]
    view.top_k.setValue(5)
    assert view.search_button.isEnabled()
    with qtbot.waitSignal(view.runner.finished, timeout=120_000):
        view.search_button.click()
    model = view.model
    assert model.rowCount() == 3 * 5
    headers = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
    assert headers[:6] == ["Query", "Rank", "Document id", "Document", "Raw", "Calibrated"]
    assert "Local min-max" in headers
    assert model.data(model.index(0, 2)) == "corpus.txt:4"           # where the hit is
    assert model.data(model.index(0, 3)) == texts[3]                  # the query itself comes first
    assert float(model.data(model.index(0, 5))) > 0.99
    assert "local to each query" in view.note.text().lower()
    assert view.progress.value() == 1000 and view.export_button.isEnabled()
    view.table.resize(1100, 400)
    view.resize(1150, 650)
    view.grab().save("/tmp/search_tab.png")

    out = tmp_path / "hits.html"
    messages = []
    view.export_runner.progress.connect(lambda done, total, message: messages.append(message))
    with qtbot.waitSignal(view.export_runner.finished, timeout=120_000):
        view.start_export(path=str(out), metric="cosine", form="calibrated", figures=True, force=False)
    assert "NOT comparable across queries" in out.read_text()
    figures = sorted(p.name for p in tmp_path.glob("hits-*"))
    assert figures and all(name.endswith((".png", ".svg")) for name in figures)
    # written as File > Export writes: the child process's progress, the same closing message
    assert messages[:2] == ["writing hits.html", "drawing figures"] and messages[-1] == "wrote hits.html"
    assert view.message.text() == f"Exported {out} and {len(figures)} figure files"


def test_search_export_never_replaces_its_inputs_and_names_a_file_it_cannot_write(window, qtbot,
                                                                                  search_files, tmp_path):
    from calibsim_gui.qt.views.search_view import run_search

    queries, _, texts = search_files
    corpus = tmp_path / "corpus.csv"                 # a table the user may pick as the report's name
    pd.DataFrame({"text": texts}).to_csv(corpus, index=False)
    view = window.search
    state = window.state
    view.hits = run_search([queries], [corpus], state.embedder, state.profile, top_k=3, metric="cosine",
                           geometry="none", cache=None, memory_budget=None, progress=lambda *a: None,
                           should_stop=lambda: False)
    view.hits_profile = state.profile
    before = corpus.read_bytes()
    with qtbot.waitSignal(view.export_runner.failed, timeout=120_000):
        view.start_export(path=str(corpus), metric="cosine", form="calibrated", figures=False, force=True)
    assert f"would overwrite the input {corpus}" in view.message.text() and corpus.read_bytes() == before
    taken = tmp_path / "taken.json"
    taken.mkdir()                        # a folder where the file goes: the rename fails, even as root
    with qtbot.waitSignal(view.export_runner.failed, timeout=120_000):
        view.start_export(path=str(taken), metric="cosine", form="calibrated", figures=False, force=True)
    assert view.message.text().startswith(f"{taken}: could not write the file")
    assert "Fix: a folder has that name; choose another output name" in view.message.text()
    assert list(taken.iterdir()) == [] and not list(tmp_path.glob(".taken*"))    # no temporary left


def searched(window, qtbot, search_files):
    """The Search tab after searching the queries file in the corpus file."""
    queries, corpus, _ = search_files
    view = window.search
    view.set_inputs([queries], [corpus])
    with qtbot.waitSignal(view.runner.finished, timeout=120_000):
        view.search_button.click()
    return view


def test_a_search_report_names_the_profile_file_and_model_as_file_export_does(window, qtbot, search_files,
                                                                            tmp_path, profile):
    from tests.qt.conftest import REFERENCES_MS

    opened = tmp_path / "news.calibsim-profile"
    profile.save(opened)
    with qtbot.waitSignal(window.profile_runner.finished, timeout=REFERENCES_MS):
        window.open_profile(str(opened))
    view = searched(window, qtbot, search_files)
    out = tmp_path / "hits.json"
    with qtbot.waitSignal(view.export_runner.finished, timeout=120_000):
        view.start_export(path=str(out), metric="cosine", form="calibrated", figures=False, force=False)
    report = json.loads(out.read_text())
    assert report["provenance"]["model"]["name"] == window.state.embedder.fingerprint.name == "fake-bow"
    files = {(f["role"], f["name"]) for f in report["provenance"]["files"]}
    assert files >= {("queries", "queries.txt"), ("corpus", "corpus.txt"), ("profile", "news.calibsim-profile")}
    assert report["reproduce"][-1].startswith("calibsim search queries.txt --corpus corpus.txt")
    assert "--profile news.calibsim-profile" in report["reproduce"][-1]


def test_the_search_export_offers_the_last_format_and_folder_in_a_new_session(window, qtbot, search_files,
                                                                            tmp_path, monkeypatch):
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QDialog

    from calibsim_gui.qt.session.exports import ExportDialog
    from calibsim_gui.qt.views.search_view import SearchView

    view = searched(window, qtbot, search_files)
    chosen = tmp_path / "reports" / "mine.json"
    chosen.parent.mkdir()
    offered = []

    def user_chooses(dialog):                   # what the user sees, then what they pick
        offered.append((dialog.path_edit.text(), dialog.format_combo.currentData()))
        dialog.path_edit.setText(str(chosen))
        dialog.accept()
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(ExportDialog, "exec", user_chooses)
    with qtbot.waitSignal(view.export_runner.finished, timeout=120_000):
        view.export_button.click()
    assert json.loads(chosen.read_text())["format"] == "calibsim-search"
    monkeypatch.setattr(ExportDialog, "exec", lambda dialog: offered.append(
        (dialog.path_edit.text(), dialog.format_combo.currentData())) or QDialog.DialogCode.Rejected)
    view.export()                               # reopened: the last format and folder
    assert offered[-1] == (str(chosen.parent / "queries-search.json"), ".json")
    window.settings.sync()

    # the next session: a Search tab on settings read back from disk
    again = SearchView(window.state, settings=QSettings("calibsim", "calibsim"), run_sources=dict)
    qtbot.addWidget(again)
    again.set_inputs(view.queries.paths(), view.corpus.paths())
    again.hits, again.hits_profile = view.hits, view.hits_profile
    offered.clear()
    again.export()
    assert offered[-1] == (str(chosen.parent / "queries-search.json"), ".json")
    assert window.exports.default_path() == str(chosen.parent / "calibsim-report.json")   # File > Export too


def test_search_can_be_cancelled_and_failures_are_shown(window, qtbot, search_files, monkeypatch):
    from calibsim_gui.core.analysis import search as core_search

    queries, corpus, _ = search_files
    view = window.search
    view.set_inputs([queries], [corpus])

    def slow_top_hits(*args, should_stop=None, **kwargs):        # runs in the worker thread
        for _ in range(HOLD_S * 100):                              # a bound, not a pace
            if should_stop():
                break
            time.sleep(0.01)
        from calibsim_gui.core.errors import Cancelled

        raise Cancelled("stopped")

    monkeypatch.setattr(core_search, "top_hits", slow_top_hits)
    with qtbot.waitSignal(view.runner.cancelled, timeout=120_000):
        view.start_search()
        qtbot.waitUntil(lambda: view.cancel_button.isEnabled(), timeout=120_000)
        view.cancel_button.click()
    assert view.message.text() == "Search cancelled." and view.hits is None
    monkeypatch.undo()
    view.set_inputs([queries.parent / "missing.txt"], [corpus])
    with qtbot.waitSignal(view.runner.failed, timeout=120_000):
        view.start_search()
    assert "missing.txt" in view.message.text()
    assert view.search_button.isEnabled()
    view.set_inputs([queries], [corpus])
    monkeypatch.setattr(core_search, "search_run_bytes", lambda *args: 10**15)   # past any budget
    with qtbot.waitSignal(view.runner.failed, timeout=120_000):
        view.start_search()
    assert "In this window: lower Top k." in view.message.text()   # the flag the message names


@pytest.fixture
def labelled_csv(tmp_path):
    texts = random_sentences(240, seed=9)
    rng = np.random.default_rng(0)
    rows = []
    for i in range(120):            # identical pairs labelled 4-5, unrelated ones 0-3, a few mislabelled
        same = i % 2 == 0
        rows.append((texts[i], texts[i] if same else texts[i + 120],
                     float(rng.uniform(4, 5) if same != (i % 17 == 0) else rng.uniform(0, 3))))
    path = tmp_path / "labelled.csv"
    pd.DataFrame(rows, columns=["sentence1", "sentence2", "score"]).to_csv(path, index=False)
    return path


def test_threshold_dialog_shows_curves_and_raw_and_calibrated_cuts(window, qtbot, labelled_csv):
    from calibsim_gui.qt.views.threshold_view import ThresholdDialog

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [labelled_csv])
    window.compare.show_threshold()
    dialog = window.compare.threshold_dialog
    assert isinstance(dialog, ThresholdDialog) and dialog.isVisible()
    assert dialog.same_at.value() == pytest.approx(4, abs=0.2)        # upper fifth of the labels' range
    qtbot.waitUntil(lambda: getattr(dialog, "found", None) is not None, timeout=120_000)
    x, y = dialog.raw_curve.getData()
    assert len(x) > 2 and y.min() >= 0 and y.max() <= 1
    assert "cosine_raw ≥" in dialog.raw_text.text() and "cosine_calibrated ≥" in dialog.cal_text.text()
    assert dialog.found["calibrated"]["precision"] >= 0.9
    first = dialog.found["calibrated"]["threshold"]
    dialog.target.setValue(0.6)
    qtbot.waitUntil(lambda: dialog.found is not None and dialog.found["calibrated"]["threshold"] != first,
                    timeout=120_000)
    assert dialog.target_line.value() == pytest.approx(0.6)
    dialog.target.setValue(0.9)
    qtbot.waitUntil(lambda: dialog.found is not None and dialog.found["calibrated"]["threshold"] == first,
                    timeout=120_000)
    dialog.grab().save("/tmp/threshold.png")
    dialog.same_at.setValue(dialog.same_at.maximum() + 1)             # nothing above the cut
    assert "both kinds" in dialog.raw_text.text()
    dialog.close()
    qtbot.waitUntil(lambda: not dialog.runner.running, timeout=120_000)


def test_threshold_without_labels_says_what_it_needs(window, qtbot, good_results, tmp_path):
    path = tmp_path / "unlabelled.csv"
    texts = random_sentences(10, seed=3)
    pd.DataFrame({"sentence1": texts, "sentence2": texts[::-1]}).to_csv(path, index=False)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [path])
    window.compare.show_threshold()
    from tests.qt.conftest import shown_error

    assert "human scores" in shown_error(window, qtbot)


def test_a_typed_query_hit_selects_its_pair_in_results(window, qtbot, good_results, pairs_csv):
    good_results()                                          # 30 scored pairs are the input
    view, frame = window.search, window.state.results.frame
    window.tabs.setCurrentWidget(view)
    target = frame["sentence1"].iloc[7]
    view.query_edit.setText(target)                         # no corpus files: the input's texts
    assert view.search_button.isEnabled()
    with qtbot.waitSignal(view.runner.finished, timeout=120_000):
        qtbot.keyClick(view.query_edit, Qt.Key.Key_Return)
    model = view.model
    headers = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
    assert headers[:4] == ["Query", "Rank", "Document id", "Document"]
    assert model.data(model.index(0, 2)) == "row 8 A" and model.data(model.index(0, 3)) == target
    assert model.data(model.index(0, 0)) == target and model.data(model.index(1, 0)) == ""   # said once
    view.table.selectRow(1)                                 # the second hit: another text of the input
    hit = view.hits.frame["document"].iat[1]
    row = window.state.selected_row
    assert hit in (frame["sentence1"].iloc[row], frame["sentence2"].iloc[row])
    results = window.results
    assert results.model.frame_row(results.table.currentIndex().row()) == row   # Results follows
    assert "Selected in Results" in view.message.text()


def test_search_view_state_round_trips_the_set_up(window, search_files):
    queries, corpus, _ = search_files
    view = window.search
    view.set_inputs([queries], [corpus])
    view.top_k.setValue(7)
    view.query_edit.setText("a typed question")
    saved = view.view_state()
    assert saved == {"queries": [str(queries)], "corpus": [str(corpus)], "query_text": "a typed question",
                     "top_k": 7}
    view.set_inputs([], [])
    view.top_k.setValue(10)
    view.query_edit.clear()
    view.restore_view_state({**saved, "later_key": True})
    assert view.view_state() == saved
    view.restore_view_state({"top_k": "many", "corpus": [3]})    # wrong types keep the set-up
    assert view.view_state() == saved
