"""Bad files dropped on the main window: a message naming the file, the line and the fix,
and the window still scores a good file afterwards."""

from __future__ import annotations

import codecs
import json
import zipfile

import pandas as pd
import pytest
from PySide6.QtWidgets import QDialog

from calibsim_gui.core.io import tables
from calibsim_gui.qt.session import preferences, projects, session
from tests.fakes import random_sentences
from tests.qt.conftest import REFERENCES_MS, WORKERS_END_MS, drop, shown_error

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00"


class OnePerLine:
    """The "one document per line or per file?" question, answered "per line"."""

    def __init__(self, *args, **kwargs):
        pass

    def exec(self):
        return QDialog.DialogCode.Accepted

    def per_file(self):
        return False


class CancelColumns:
    """The "which columns hold the texts?" question, cancelled."""

    def __init__(self, *args, **kwargs):
        pass

    def exec(self):
        return QDialog.DialogCode.Rejected


@pytest.fixture(autouse=True)
def answered_dialogs(monkeypatch):
    monkeypatch.setattr(session, "DocumentModeDialog", OnePerLine)
    monkeypatch.setattr(session, "ColumnMappingDialog", CancelColumns)


def zip_bytes(tmp_path) -> bytes:
    archive = tmp_path / "made.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("sentences.txt", "one\ntwo\n")
    return archive.read_bytes()


def sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)                     # no data blocks: costs no disk


def csv_text(*lines):
    return "\n".join(lines) + "\n"


# name, how to write it, what the message must say (besides the file's name)
BAD_FILES = [
    ("binary.txt", lambda p, t: p.write_bytes(bytes(range(256)) * 8),
     ["binary", "NUL bytes", "Fix: export"]),
    ("photo.txt", lambda p, t: p.write_bytes(PNG), ["a PNG image", "Fix: export"]),
    ("archive.txt", lambda p, t: p.write_bytes(zip_bytes(t)), ["a ZIP archive", "Fix: export"]),
    ("empty.txt", lambda p, t: p.write_bytes(b""), ["no non-empty text", "Fix: point at"]),
    ("empty.csv", lambda p, t: p.write_bytes(b""), ["holds no pairs", "Fix: add one pair per row"]),
    ("blank.txt", lambda p, t: p.write_text("\n   \n\t\n\n"), ["no non-empty text", "Fix:"]),
    ("huge.txt", lambda p, t: sparse(p, 2 * 1024**3), ["2,048 MiB", "512 MiB are accepted", "Fix: split"]),
    ("latin1.csv", lambda p, t: p.write_bytes(csv_text("sentence1,sentence2", "ok,fine", "caf\xe9,th\xe9")
                                              .encode("latin-1")),
     ["line 3", "not valid UTF-8", "re-save it as UTF-8"]),
    ("one column.csv", lambda p, t: p.write_text(csv_text("sentence", "a", "b")),
     ["no recognised pair of text columns", "'sentence'", "Fix: name the two text columns"]),
    ("twice.csv", lambda p, t: p.write_text(csv_text("sentence1,sentence2,sentence2", "a,b,c")),
     ["line 1", "more than one column named 'sentence2'", "Fix: rename"]),
    ("ragged.csv", lambda p, t: p.write_text(csv_text("sentence1,sentence2", "a,b", "c,d,e,f", "g,h")),
     ["line 3", "4 fields where the header line has 2", "Fix: quote fields"]),
    ("open quote.csv", lambda p, t: p.write_text(csv_text("sentence1,sentence2", "a,b", '"c,d', "e,f")),
     ["line 3", "never closed", "Fix: close the quote"]),
    ("bad line.jsonl", lambda p, t: p.write_text(
        '{"sentence1": "a", "sentence2": "b"}\n{"sentence1": "c", "sentence2": }\n'),
     ["line 2", "not valid JSON", "Fix: each line must hold one JSON object"]),
    ("half char.jsonl", lambda p, t: p.write_text(
        '{"sentence1": "a", "sentence2": "b"}\n\n{"sentence1": "emoji \\ud83d", "sentence2": "x"}\n'),
     ["line 3", "half of a character", "Fix: repair or remove"]),
    ("no pairs.csv", lambda p, t: p.write_text(csv_text("sentence1,sentence2", "a,", ",b", " , ")),
     ["no pair with two non-empty texts", "Fix:"]),
]


@pytest.mark.parametrize("name, write, expected", BAD_FILES, ids=[case[0] for case in BAD_FILES])
def test_a_dropped_bad_file_is_named_with_its_fix_and_the_window_keeps_working(
        window, qtbot, tmp_path, good_results, name, write, expected):
    path = tmp_path / name
    write(path, tmp_path)
    window._last_error = None
    drop(window, [path])
    message = shown_error(window, qtbot)
    assert str(path) in message
    for fragment in expected:
        assert fragment in message
    assert window.state.input is None and window.state.results is None
    assert message.splitlines()[0] in window.status_label.text()
    good_results()


def test_the_size_limit_refuses_before_reading(window, qtbot, tmp_path, monkeypatch, good_results):
    path = tmp_path / "huge.txt"
    sparse(path, tables.MAX_TEXT_BYTES + 1)
    read = []
    with monkeypatch.context() as patch:
        patch.setattr(type(path), "read_bytes", lambda self: read.append(self))
        drop(window, [path])
        assert "are accepted" in shown_error(window, qtbot)
    assert read == []
    good_results()


def test_a_run_over_the_memory_budget_is_refused_and_the_budget_is_shown_and_remembered(
        window, qtbot, pairs_csv, good_results):
    assert "(default)" in window.memory_label.text()
    window.set_memory_budget(1_000_000)
    assert window.memory_label.text() == "Memory budget 1.0 MB"
    drop(window, [pairs_csv])
    message = shown_error(window, qtbot)
    assert "reading 1 file of" in message and "needs about" in message   # from its size, unread
    assert "Settings ▸ Memory budget" in message
    assert window.state.results is None
    assert window.settings.value(preferences.MEMORY_BUDGET_KEY, type=int) == 1_000_000
    window.set_memory_budget(None)
    assert "(default)" in window.memory_label.text()
    good_results()


# --------------------------------------------------------------------------- odd but usable files


def test_embedded_newlines_quotes_and_extra_columns_are_kept_as_written(window, qtbot, tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_text('id,sentence1,sentence2,extra\n'
                    '1,"He said ""hi"",\nthen left.","A, b",x\n'
                    '2,plain,"x ""quoted""",y\n', encoding="utf-8")
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [path])
    frame = window.state.results.frame
    assert frame["sentence1"].tolist() == ['He said "hi",\nthen left.', "plain"]
    assert frame["sentence2"].tolist() == ["A, b", 'x "quoted"']
    assert frame["extra"].tolist() == ["x", "y"] and frame["cosine_calibrated"].notna().all()


def test_pairs_with_an_empty_side_are_listed_and_left_unscored(window, qtbot, tmp_path):
    path = tmp_path / "gaps.csv"
    texts = random_sentences(6, seed=5)
    pd.DataFrame({"sentence1": texts[:3] + ["", "alone"], "sentence2": texts[3:] + ["x", " "]}).to_csv(
        path, index=False)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [path])
    scored = window.state.results.frame["cosine_calibrated"]
    assert scored.notna().tolist() == [True, True, True, False, False]
    assert "2 pairs have an empty text (pairs 4, 5) and are left unscored" in notes(window)


def notes(window) -> str:
    window.results.notes_button.setChecked(True)
    assert window.results.notes.isVisible()
    return window.results.notes.text()


def test_texts_far_beyond_the_models_length_are_scored_and_their_truncation_counted(
        window, qtbot, tmp_path):
    long = [" ".join(random_sentences(2000, seed=s)) for s in (1, 2, 3)]      # ~20,000 words each
    path = tmp_path / "long.csv"
    pd.DataFrame({"sentence1": long + ["short one"],
                  "sentence2": ["short", "tiny", long[0], "short two"]}).to_csv(path, index=False)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [path])
    assert window.state.results.frame["cosine_calibrated"].notna().all()
    assert "3 texts are longer than the model's max length" in notes(window)


def test_a_hundred_thousand_identical_lines_are_counted_as_duplicates_and_encoded_once(
        window, qtbot, tmp_path):
    path = tmp_path / "same.csv"
    path.write_text("sentence1,sentence2\n" + "the same question,the same answer\n" * 100_000)
    calls = window.state.embedder.calls
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [path])
    frame = window.state.results.frame
    assert len(frame) == 100_000 and frame["cosine_calibrated"].nunique() == 1
    assert "99,999 duplicate pairs" in notes(window)
    assert window.state.embedder.calls - calls == 1               # two distinct texts, one batch


def test_a_hundred_thousand_identical_text_lines_become_one_document(window, qtbot, tmp_path, good_results):
    path = tmp_path / "same.txt"
    path.write_text("the same sentence\n" * 100_000)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [path])
    documents = window.state.input
    assert (documents.texts, documents.n_duplicates) == (["the same sentence"], 99_999)
    assert window.state.results.ids == ["same.txt:1"]
    assert "dropped 99,999 exact duplicates" in notes(window)
    good_results()


# --------------------------------------------------------------------------- profiles and projects


def damaged_profile(kind, window, path):
    data = window.state.profile.to_dict()
    if kind in ("not json", "a json list"):
        path.write_text("{ this is not json" if kind == "not json" else "[1, 2]")
        return
    if kind == "schema version":
        data["schema_version"] = 99
    elif kind == "missing keys":
        del data["metrics"]
    elif kind == "other model":
        data["model"]["digest"] = "0" * 64
        data["model"]["name"] = "another-model"
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("kind, expected", [
    ("not json", "not a readable profile"),
    ("schema version", "schema version 99"),
    ("missing keys", "damaged or hand-edited"),
    ("other model", "another-model"),
    ("a json list", "not a calibsim profile"),
])
def test_a_corrupt_profile_opened_on_the_background_tab_is_refused_and_the_reference_stays(
        window, qtbot, tmp_path, good_results, kind, expected):
    before = window.state.profile
    path = tmp_path / "bad.calibsim-profile"
    damaged_profile(kind, window, path)
    window._last_error = None
    window.open_profile(str(path))
    message = shown_error(window, qtbot)
    assert str(path) in message and expected in message
    assert window.state.profile is before
    good_results()


def test_a_project_with_moved_files_asks_for_them_and_then_scores(window, qtbot, tmp_path, pairs_csv,
                                                                   monkeypatch):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    expected = window.state.results.frame.copy()
    project = tmp_path / "study.calibsim"
    window.write_project(str(project))
    moved = tmp_path / "elsewhere" / "pairs.csv"
    moved.parent.mkdir()
    pairs_csv.rename(moved)
    window.state.set_input(None)
    asked = []
    monkeypatch.setattr(projects.QFileDialog, "getOpenFileName",
                        lambda parent, title, folder, *a: (asked.append(title), (str(moved), ""))[1])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_project(str(project))
    assert asked == ["Locate moved file pairs.csv"]
    assert window.state.input.path == moved
    pd.testing.assert_frame_equal(window.state.results.frame, expected)


def test_a_project_whose_moved_file_is_not_located_says_what_is_missing(window, qtbot, tmp_path, pairs_csv,
                                                                       monkeypatch, good_results):
    project = tmp_path / "study.calibsim"
    window.input_spec = {"paths": [str(tmp_path / "gone.csv")], "kind": "pairs", "options": {}}
    window.write_project(str(project))
    window.input_spec = None
    monkeypatch.setattr(projects.QFileDialog, "getOpenFileName", lambda *a: ("", ""))
    window._last_error = None
    window.open_project(str(project))
    message = shown_error(window, qtbot, timeout=120_000)
    assert "gone.csv" in message
    good_results()


@pytest.mark.parametrize("content, expected", [
    ("{ not json", "not a readable project file"),
    ('{"format": "calibsim-project", "schema_version": 7}', "schema version 7"),
    ('{"format": "calibsim-project", "schema_version": 1, "settings": {"metric": "nope"}}', "unknown metric"),
    ('{"format": "calibsim-project", "schema_version": 1, "background": {"seed": 1e99}}', "seed"),
    ('{"format": "calibsim-project", "schema_version": 1, '
     '"inputs": [{"path": "a.csv", "options": {"sep": ";"}}]}', "unknown option 'sep'"),
])
def test_a_damaged_project_is_refused_with_the_reason_and_the_window_keeps_working(
        window, qtbot, tmp_path, good_results, content, expected):
    path = tmp_path / "edited.calibsim"
    path.write_text(content)
    window._last_error = None
    window.open_project(str(path))
    message = shown_error(window, qtbot)
    assert str(path) in message and expected in message
    good_results()


def test_utf16_with_a_bom_is_read_like_utf8(window, qtbot, tmp_path):
    path = tmp_path / "wide.csv"
    path.write_bytes(codecs.BOM_UTF16_LE + "sentence1,sentence2\nnaïve café,thé\n".encode("utf-16-le"))
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [path])
    assert window.state.results.frame["sentence1"].tolist() == ["naïve café"]

def test_an_unusable_cache_folder_is_reported_and_scoring_works_without_it(
        qtbot, tmp_path, monkeypatch, pairs_csv):
    from calibsim_gui.core.embedding import models
    from calibsim_gui.qt.shell.main_window import MainWindow
    from calibsim_gui.qt.widgets.workers import wait_for_workers
    from tests.fakes import FakeEmbedder

    (tmp_path / "a file").write_text("not a folder")
    monkeypatch.setenv("CALIBSIM_CACHE_DIR", str(tmp_path / "a file" / "cache"))
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: FakeEmbedder())
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    try:
        qtbot.waitUntil(lambda: window.state.profile is not None, timeout=REFERENCES_MS)
        with qtbot.waitSignal(window.results_shown, timeout=120_000):
            drop(window, [pairs_csv])
        assert "embedding cache" in window._last_error.text()
    finally:
        window.close()
        assert wait_for_workers(WORKERS_END_MS)
