import pandas as pd
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox

from calibsim_gui.qt.session.input_dialogs import ColumnMappingDialog, DocumentModeDialog

COLUMNS = ["id", "left", "right", "rating"]


def preview_frame():
    return pd.DataFrame({"id": ["1", "2"], "left": ["a cat", "a dog"],
                         "right": ["a kitten", "a car"], "rating": ["4.5", "0.5"]})


def test_column_mapping_starts_from_the_guess_and_returns_the_choice(qtbot, tmp_path):
    dialog = ColumnMappingDialog(tmp_path / "pairs.csv", COLUMNS,
                                 {"text_a": "left", "text_b": "right", "label": None},
                                 preview=preview_frame())
    qtbot.addWidget(dialog)
    assert dialog.mapping() == {"text_a": "left", "text_b": "right", "label": None}
    assert "pairs.csv" in dialog.windowTitle()

    dialog.label.setCurrentText("rating")
    assert dialog.mapping() == {"text_a": "left", "text_b": "right", "label": "rating"}
    headers = [dialog.preview_model.headerData(c, Qt.Orientation.Horizontal) for c in range(4)]
    assert headers == ["id", "left\n[first text]", "right\n[second text]", "rating\n[human score]"]
    assert dialog.preview_model.rowCount() == 2


def test_ok_is_disabled_while_both_texts_are_the_same_column(qtbot, tmp_path):
    dialog = ColumnMappingDialog(tmp_path / "pairs.csv", COLUMNS)
    qtbot.addWidget(dialog)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert ok.isEnabled()                       # no guess: first two columns
    dialog.text_b.setCurrentText("id")
    assert not ok.isEnabled()
    assert "two different columns" in dialog.problem.text()
    dialog.text_b.setCurrentText("right")
    assert ok.isEnabled()
    dialog.label.setCurrentText("right")
    assert not ok.isEnabled()


def test_document_mode_dialog_returns_per_file_and_shows_counts(qtbot):
    dialog = DocumentModeDialog(lines=1234, files=3)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog, timeout=120_000)
    assert "1,234 lines" in dialog.per_line_button.text()
    assert "3 files" in dialog.per_file_button.text()
    assert dialog.per_file() is False
    qtbot.mouseClick(dialog.per_file_button, Qt.MouseButton.LeftButton)
    assert dialog.per_file() is True
    assert DocumentModeDialog(per_file=True).per_file() is True


def test_a_dropped_folder_of_one_line_files_defaults_to_one_document_per_file(window, qtbot, tmp_path,
                                                                              monkeypatch):
    from calibsim_gui.qt.session import session
    from tests.fakes import random_sentences
    from tests.qt.conftest import drop

    folder = tmp_path / "notes"
    folder.mkdir()
    for i, text in enumerate(random_sentences(30, seed=11)):
        (folder / f"note{i:02d}.txt").write_text(text + "\n")
    asked = []

    class Accepted(session.DocumentModeDialog):         # the user presses OK on the default
        def exec(self):
            asked.append((self.per_file(), self.per_file_button.text(), self.why.text()))
            return QDialog.DialogCode.Accepted
    monkeypatch.setattr(session, "DocumentModeDialog", Accepted)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [folder])
    per_file, label, why = asked[0]
    assert per_file is True and "30 files" in label
    assert "a median of 1 non-blank line each" in why and "one document per file" in why
    assert len(window.state.input.documents) == 30
    assert {d.id for d in window.state.input.documents} == {f"note{i:02d}.txt" for i in range(30)}


def test_files_of_many_lines_default_to_one_document_per_line(tmp_path):
    from calibsim_gui.core.io.inputs import MANY_LINES, text_layout

    for i in range(4):
        (tmp_path / f"list{i}.txt").write_text("\n".join(f"line {k} of {i}" for k in range(MANY_LINES + 2)))
    (tmp_path / "pairs.csv").write_text("a,b\nx,y\n")             # tables are not counted
    layout = text_layout([tmp_path])
    assert (layout.files, layout.lines, layout.median_lines, layout.per_file) == (4, 4 * (MANY_LINES + 2),
                                                                                  MANY_LINES + 2, False)
    one = tmp_path / "list0.txt"
    assert text_layout([one]).per_file is False                      # one file: its lines
    dialog = DocumentModeDialog(files=4, lines=20, median_lines=5.0)
    assert "many lines, so one document per line" in dialog.why.text() and not dialog.per_file()


def news_csv(tmp_path):
    """An AG News-like table: a class label, a title and a description (three columns)."""
    from tests.fakes import random_sentences

    path = tmp_path / "news.csv"
    pd.DataFrame({"label": [str(1 + i % 4) for i in range(12)], "title": random_sentences(12, seed=5),
                  "description": random_sentences(12, seed=6)}).to_csv(path, index=False)
    return path


def test_a_table_that_reads_as_pairs_or_documents_asks_and_cancel_keeps_the_work(window, qtbot, tmp_path,
                                                                                 pairs_csv, monkeypatch):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    before = window.state.results
    asked = []

    def cancel(dialog):
        asked.append((dialog.mapping(), dialog.document_combo.currentText()))
        return QDialog.DialogCode.Rejected

    monkeypatch.setattr(ColumnMappingDialog, "exec", cancel)
    with qtbot.waitSignal(window.input_runner.finished, timeout=120_000):
        window.open_inputs([news_csv(tmp_path)])
    assert asked == [({"text_a": "title", "text_b": "description", "label": "label"}, "description")]
    assert window.state.results is before and window.state.input.path == pairs_csv
    assert "not opened" in window.status_label.text()


def test_a_table_read_as_a_document_set_from_the_chosen_column(window, qtbot, tmp_path, monkeypatch):
    from calibsim_gui.core.io.inputs import DocumentSet

    def documents(dialog):
        dialog.as_documents.setChecked(True)
        assert not dialog.text_a.isEnabled() and dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(ColumnMappingDialog, "exec", documents)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([news_csv(tmp_path)])
    assert isinstance(window.state.input, DocumentSet) and len(window.state.input.documents) == 12
    assert window.input_spec["options"]["column"] == "description"
