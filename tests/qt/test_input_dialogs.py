import pandas as pd
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from calibsim_gui.qt.input_dialogs import ColumnMappingDialog, DocumentModeDialog

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
