"""Exporting a report from the window: the dialog, the confirmation, the worker."""

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from PySide6.QtWidgets import QDialog, QMessageBox

from calibsim_gui.qt.session.exports import ExportDialog
from tests.qt.conftest import drop


@pytest.fixture
def scored_window(window, qtbot, pairs_csv):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    return window


def test_first_export_goes_to_documents_not_the_inputs_folder(scored_window, pairs_csv, tmp_path):
    from PySide6.QtCore import QStandardPaths

    default = Path(scored_window.exports.default_path())
    documents = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    assert default.parent == Path(documents) != pairs_csv.parent and default.name == "pairs-report.html"
    scored_window.settings.setValue("export/folder", str(tmp_path / "reports"))
    assert Path(scored_window.exports.default_path()).parent == tmp_path / "reports"   # the last one used


def dialog_for(tmp_path, name="report.html", figures=False):
    return ExportDialog(default_path=str(tmp_path / name), metrics=["cosine", "dot"],
                        forms=["calibrated", "anchor_minmax"], metric="dot", form="anchor_minmax",
                        figures=figures)


def test_dialog_keeps_format_and_file_extension_in_step(qtbot, tmp_path):
    dialog = dialog_for(tmp_path)
    qtbot.addWidget(dialog)
    assert dialog.format_combo.currentData() == ".html"
    dialog.format_combo.setCurrentIndex(dialog.format_combo.findData(".pdf"))
    assert dialog.path().name == "report.pdf"
    dialog.path_edit.setText(str(tmp_path / "scores.xlsx"))
    dialog.path_edit.textEdited.emit(dialog.path_edit.text())
    assert dialog.format_combo.currentData() == ".xlsx"
    assert dialog.options()["metric"] == "dot" and dialog.options()["form"] == "anchor_minmax"


def test_dialog_asks_before_replacing_and_stays_open_on_no(qtbot, tmp_path, monkeypatch):
    (tmp_path / "report.html").write_text("keep me")
    (tmp_path / "report-distribution.png").write_bytes(b"old")
    dialog = dialog_for(tmp_path, figures=True)
    qtbot.addWidget(dialog)
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda parent, title, text: asked.append(text) or QMessageBox.StandardButton.No)
    dialog.accept()
    assert dialog.result() != QDialog.DialogCode.Accepted
    assert "report.html" in asked[0] and "report-distribution.png" in asked[0]
    monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.Yes)
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted and dialog.options()["force"] is True


def test_one_question_covers_a_tables_provenance_side_file(qtbot, tmp_path, monkeypatch):
    (tmp_path / "scores.csv.provenance.json").write_text("{}")        # the table itself was deleted
    dialog = dialog_for(tmp_path, name="scores.csv")
    qtbot.addWidget(dialog)
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda parent, title, text: asked.append(text) or QMessageBox.StandardButton.Yes)
    dialog.accept()
    assert len(asked) == 1 and "scores.csv.provenance.json" in asked[0]
    assert dialog.options()["force"] is True            # so the write replaces it without asking again


def test_dialog_refuses_an_unknown_extension(qtbot, tmp_path, monkeypatch):
    dialog = dialog_for(tmp_path, name="report.docx")
    qtbot.addWidget(dialog)
    warned = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: warned.append(text))
    dialog.accept()
    assert dialog.result() != QDialog.DialogCode.Accepted and ".html" in warned[0]


@pytest.mark.parametrize("folder", ["report.html", "report-distribution.png"])
def test_dialog_refuses_a_folder_where_the_report_or_a_figure_goes(qtbot, tmp_path, monkeypatch, folder):
    (tmp_path / folder).mkdir()
    dialog = dialog_for(tmp_path, figures=True)
    qtbot.addWidget(dialog)
    warned = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: warned.append(text))
    monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.Yes)
    dialog.accept()
    assert dialog.result() != QDialog.DialogCode.Accepted
    assert warned and str(tmp_path / folder) in warned[0] and "is a folder" in warned[0]


@pytest.mark.parametrize("suffix", [".html", ".xlsx", ".json", ".csv", ".pdf"])
def test_export_writes_each_format_in_a_worker(scored_window, qtbot, tmp_path, suffix):
    out = tmp_path / f"report{suffix}"
    with qtbot.waitSignal(scored_window.export_runner.finished, timeout=120_000):
        scored_window.exports.start(path=str(out), metric="cosine", form="calibrated",
                                    figures=suffix == ".html", force=False)
    frame = scored_window.state.results.frame
    if suffix == ".html":
        tables = pd.read_html(io.StringIO(out.read_text()))
        assert len(next(t for t in tables if "sentence1" in t.columns)) == len(frame)
        assert (tmp_path / "report-distribution.svg").exists()
    elif suffix == ".xlsx":
        assert len(pd.read_excel(out, sheet_name="results")) == len(frame)
    elif suffix == ".json":
        assert len(json.loads(out.read_text())["rows"]) == len(frame)
    elif suffix == ".csv":
        assert list(pd.read_csv(out).columns) == list(frame.columns)
    else:
        assert out.read_bytes().startswith(b"%PDF")
    assert "Exported" in scored_window.status_label.text() and str(out) in scored_window.status_label.text()
    assert scored_window.settings.value("export/format") == suffix


def test_export_failure_is_shown_and_leaves_nothing(scored_window, qtbot, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    with qtbot.waitSignal(scored_window.export_runner.failed, timeout=120_000) as failed:
        scored_window.exports.start(path=str(blocker / "report.html"), metric="cosine",
                                    form="calibrated", figures=False, force=False)
    assert "report.html" in failed.args[0] or "not-a-folder" in failed.args[0]
    assert blocker.read_text() == "a file where a folder should be"


def test_export_progress_from_the_report_process_reaches_the_window(scored_window, qtbot, tmp_path):
    out = tmp_path / "report.html"
    messages = []
    scored_window.export_runner.progress.connect(lambda done, total, message: messages.append(message))
    with qtbot.waitSignal(scored_window.export_runner.finished, timeout=120_000) as finished:
        scored_window.exports.start(path=str(out), metric="cosine", form="calibrated", figures=True,
                                    force=False)
    assert messages[:2] == ["writing report.html", "drawing figures"] and messages[-1] == "wrote report.html"
    assert finished.args[0][0] == out and "<html" in out.read_text().lower()


def test_a_stopped_export_in_the_report_process_writes_nothing(scored_window, tmp_path):
    from calibsim_gui.core import reports
    from calibsim_gui.core.errors import Cancelled
    from calibsim_gui.qt.widgets.child_process import child_process

    report = reports.build_report(scored_window.state.results, scored_window.state.profile)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(Cancelled, match="nothing was written"):
        child_process().run(reports.write_report_files, report, out / "report.pdf", figures=True,
                            progress=lambda *_: None, should_stop=lambda: True)
    assert list(out.iterdir()) == []                          # no report, no figure, no temporary


def test_export_without_results_says_what_to_do(window, monkeypatch):
    shown = []
    monkeypatch.setattr(window.exports, "show_error", lambda title, text: shown.append(text))
    window.exports.ask()
    assert "Score a pairs file" in shown[0]


def test_dialog_names_the_edited_ladder_file_and_asks_before_replacing_it(qtbot, tmp_path, monkeypatch):
    from calibsim_gui.core.references.anchors import AnchorSet, builtin_anchors

    ladder = builtin_anchors()
    edited = AnchorSet(ladder.name, ladder.levels, ladder.pairs[::2])
    dialog = ExportDialog(default_path=str(tmp_path / "report.html"), metrics=["cosine"],
                          forms=["calibrated"], metric="cosine", form="calibrated", anchors=edited)
    qtbot.addWidget(dialog)
    assert "report-anchors.json" in dialog.anchors_note.text() and not dialog.anchors_note.isHidden()
    (tmp_path / "report-anchors.json").write_text("{}")
    assert dialog.existing_files() == [tmp_path / "report-anchors.json"]
    dialog.path_edit.setText(str(tmp_path / "table.csv"))          # a table holds no commands
    assert dialog.anchors_note.isHidden() and dialog.existing_files() == []
    plain = ExportDialog(default_path=str(tmp_path / "report.html"), metrics=["cosine"],
                         forms=["calibrated"], metric="cosine", form="calibrated", anchors=ladder)
    qtbot.addWidget(plain)
    assert plain.anchors_note.isHidden() and plain.existing_files() == []


def test_a_ladder_file_an_earlier_export_wrote_is_not_asked_about(qtbot, tmp_path):
    from calibsim_gui.core.io.output import dump_json
    from calibsim_gui.core.references.anchors import AnchorSet, builtin_anchors

    ladder = builtin_anchors()
    edited = AnchorSet(ladder.name, ladder.levels, ladder.pairs[::2])
    (tmp_path / "report-anchors.json").write_text(dump_json(edited.to_dict()))     # as an export writes it
    dialog = ExportDialog(default_path=str(tmp_path / "report.pdf"), metrics=["cosine"],
                          forms=["calibrated"], metric="cosine", form="calibrated", anchors=edited)
    qtbot.addWidget(dialog)
    assert dialog.existing_files() == []                 # the same ladder: nothing of the user's is replaced
    (tmp_path / "report-anchors.json").write_text(dump_json(ladder.to_dict()))      # another ladder
    assert dialog.existing_files() == [tmp_path / "report-anchors.json"]


@pytest.mark.parametrize("typed", ["/", "", "  "])
def test_typing_a_path_that_names_no_file_yet_keeps_the_dialog_working(qtbot, tmp_path, typed):
    from calibsim_gui.core.references.anchors import AnchorSet, builtin_anchors

    ladder = builtin_anchors()
    dialog = ExportDialog(default_path=str(tmp_path / "report.html"), metrics=["cosine"], forms=["calibrated"],
                          metric="cosine", form="calibrated", anchors=AnchorSet("edited", ladder.levels, ladder.pairs[::2]))
    qtbot.addWidget(dialog)
    dialog.path_edit.setText(typed)                 # raised ValueError: PosixPath('/') has an empty name
    dialog.format_combo.setCurrentIndex(1)          # choosing a format adds no suffix to a folder
    assert dialog.anchors_note.isHidden() and dialog.path_edit.text() == typed
    dialog.path_edit.setText(str(tmp_path / "typed.html"))
    assert "typed-anchors.json" in dialog.anchors_note.text()


def test_export_while_the_results_are_scored_again_says_to_wait_and_writes_nothing(scored_window, qtbot, tmp_path,
                                                                                monkeypatch):
    """The Export dialog may be accepted after the results were cleared for a new scoring (here
    new references arrived): the window says to export once scoring finishes, never an
    unexpected error, and writes nothing."""
    shown = []
    monkeypatch.setattr(scored_window.exports, "show_error", lambda title, text: shown.append(text))
    with qtbot.waitSignal(scored_window.results_shown, timeout=120_000):
        scored_window.state.set_profile(scored_window.state.profile, "edited anchors")
        assert scored_window.state.results is None and scored_window.score_runner.running
        scored_window.exports.start(path=str(tmp_path / "report.html"), metric="cosine", form="calibrated",
                                    figures=False, force=False)
    assert shown == ["The results are being scored; export them once scoring has finished."]
    assert not scored_window.export_runner.running and not (tmp_path / "report.html").exists()
