import os
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent

from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.io.inputs import load_documents
from calibsim_gui.qt.editors import background_loader
from calibsim_gui.qt.editors.background_loader import BackgroundLoader
from calibsim_gui.qt.session.state import AppState
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A small real profile with a background of 800 pairs, built from one recorded file."""
    source = tmp_path_factory.mktemp("corpus") / "news.txt"
    texts = random_sentences(2000)
    source.write_text("\n".join(texts), encoding="utf-8")
    return build_profile(FakeEmbedder(), load_documents(source),
                         ProfileSettings(n_pairs=800, seed=5, name="test background"))


@pytest.fixture
def loader(qtbot):
    state = AppState()
    widget = BackgroundLoader(state)
    qtbot.addWidget(widget)
    return widget


def read(qtbot, loader, paths, signal="finished"):
    with qtbot.waitSignal(getattr(loader.runner, signal), timeout=120_000):
        loader.add_paths(paths)


def write_corpus(path: Path) -> Path:
    path.write_text("the cat sat\n\nthe dog ran\n  \nthe cat sat\nbirds sing\nfish swim\n",
                    encoding="utf-8")
    return path


def test_a_corpus_with_blank_lines_and_duplicates_shows_counts_and_preview(qtbot, loader, tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt")
    assert not loader.progress.isVisibleTo(loader)
    with qtbot.waitSignal(loader.runner.finished, timeout=120_000):
        loader.add_paths([corpus])
        assert loader.progress.isVisibleTo(loader)
        assert "Reading 1 file" in loader.progress_label.text()
    assert not loader.progress.isVisibleTo(loader)

    counts = loader.counts.text()
    assert "<b>4</b> sentences from <b>1</b> file ·" in counts
    assert "<b>2</b> empty lines dropped" in counts
    assert "<b>1</b> duplicate dropped" in counts
    assert loader.preview_model.stringList() == ["the cat sat", "the dog ran", "birds sing",
                                                 "fish swim"]
    assert loader.files() == [str(corpus)]
    assert loader.file_list.item(0).text() == str(corpus)
    assert "4 sentences give only 6 distinct pairs" in loader.pairs_note.text()
    assert "percentiles will be coarse" in loader.pairs_note.text()
    assert QSettings("calibsim", "calibsim").value("background/last_dir") == str(tmp_path)


def test_a_legacy_encoded_file_is_refused_with_the_fix_and_the_previous_corpus_stays(
        qtbot, loader, tmp_path):
    good = write_corpus(tmp_path / "good.txt")
    legacy = tmp_path / "legacy.txt"
    legacy.write_bytes("caf\xe9 au lait\nna\xefve question\n".encode("cp1252"))
    read(qtbot, loader, [good])

    read(qtbot, loader, [legacy], signal="failed")
    assert loader.message.isVisibleTo(loader)
    assert str(legacy) in loader.message.text()
    assert "--encoding cp1252" in loader.message.text()
    assert loader.files() == [str(good)]
    assert loader.file_list.count() == 1
    assert len(loader.preview_model.stringList()) == 4

    # the fix the message names works here: choosing the encoding reads both files again
    with qtbot.waitSignal(loader.runner.finished, timeout=120_000):
        loader.encoding.setCurrentIndex(loader.encoding.findData("cp1252"))
    assert loader.files() == [str(good), str(legacy)]
    assert "café au lait" in loader.preview_model.stringList()
    assert not loader.message.isVisibleTo(loader)


def test_dropping_a_folder_adds_its_text_files(qtbot, loader, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("one\ntwo\n", encoding="utf-8")
    (folder / "b.md").write_text("three\n", encoding="utf-8")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(folder))])
    rest = (Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)

    enter = QDragEnterEvent(QPoint(10, 10), *rest)
    loader.dragEnterEvent(enter)
    assert enter.isAccepted()
    with qtbot.waitSignal(loader.runner.finished, timeout=120_000):
        loader.dropEvent(QDropEvent(QPointF(10, 10), *rest))
    assert loader.files() == [str(folder)]
    assert loader.preview_model.stringList() == ["one", "two", "three"]
    assert "from <b>2</b> files" in loader.counts.text()


def test_build_emits_the_documents_and_the_chosen_pairs_and_seed(qtbot, loader, tmp_path):
    read(qtbot, loader, [write_corpus(tmp_path / "corpus.txt")])
    assert not loader.build_button.isEnabled()          # no model yet
    assert loader.build_button.toolTip() == "Load a model first"
    loader.state.set_model(FakeEmbedder(), None)
    loader.pairs_spin.setValue(1500)
    loader.seed_spin.setValue(7)

    with qtbot.waitSignal(loader.build_requested, timeout=120_000) as emitted:
        qtbot.mouseClick(loader.build_button, Qt.MouseButton.LeftButton)
    documents, pairs, seed = emitted.args
    assert documents is loader.documents()
    assert documents.texts == ["the cat sat", "the dog ran", "birds sing", "fish swim"]
    assert (pairs, seed) == (1500, 7)

    loader.set_busy(True)
    assert not loader.build_button.isEnabled()
    loader.set_busy(False)
    assert loader.build_button.isEnabled()


def test_pairs_and_seed_are_remembered(qtbot, loader):
    loader.set_options(5000, 11)
    again = BackgroundLoader(AppState())
    qtbot.addWidget(again)
    assert (again.pairs(), again.seed()) == (5000, 11)


def test_summary_shows_the_profile_in_use(qtbot, loader, built):
    assert "No reference profile" in loader.summary.text()
    loader.state.set_profile(built, "built from 1 file(s)")
    text = loader.summary.text()
    assert "built from 1 file(s)" in text
    assert "<td>800</td>" in text                       # background pairs
    assert "<td>5</td>" in text                         # seed
    assert "news.txt" in text
    assert "percentiles are coarse" in text             # profile.warnings(): < 1,000 pairs


def test_save_profile_writes_a_profile_that_loads(qtbot, loader, built, tmp_path, monkeypatch):
    assert not loader.save_button.isEnabled()
    anchors_only = build_profile(FakeEmbedder(), None)
    loader.state.set_profile(anchors_only, "anchors only")
    assert not loader.save_button.isEnabled()
    loader.state.set_profile(built, "built")
    assert loader.save_button.isEnabled()
    target = tmp_path / "mine.calibsim-profile"
    starts = []
    monkeypatch.setattr(background_loader, "ask_profile_to_save",
                        lambda parent, start: starts.append(start) or str(target))
    loader.settings.setValue("background/last_dir", str(tmp_path / "corpus"))     # the news files' folder

    qtbot.mouseClick(loader.save_button, Qt.MouseButton.LeftButton)
    assert Path(starts[0]).parent == Path(os.environ["CALIBSIM_DATA_DIR"]) / "profiles"   # not the corpus'
    saved = ReferenceProfile.load(target)
    assert saved.background_pairs == 800
    assert saved.provenance["background"]["seed"] == 5
    assert str(target) in loader.message.text()
    qtbot.mouseClick(loader.save_button, Qt.MouseButton.LeftButton)
    assert Path(starts[1]).parent == tmp_path                  # then where the user saved the last one


def test_open_and_builtin_buttons_ask_the_main_window(qtbot, loader, tmp_path, monkeypatch):
    path = str(tmp_path / "x.calibsim-profile")
    monkeypatch.setattr(background_loader, "ask_profile_to_open", lambda parent, start: path)
    with qtbot.waitSignal(loader.profile_open_requested, timeout=120_000) as opened:
        qtbot.mouseClick(loader.open_button, Qt.MouseButton.LeftButton)
    assert opened.args == [path]
    with qtbot.waitSignal(loader.builtin_requested, timeout=120_000):
        qtbot.mouseClick(loader.builtin_button, Qt.MouseButton.LeftButton)


def test_remove_and_clear_update_the_corpus(qtbot, loader, tmp_path):
    first = write_corpus(tmp_path / "first.txt")
    second = tmp_path / "second.txt"
    second.write_text("alpha\nbeta\n", encoding="utf-8")
    read(qtbot, loader, [first, second])
    assert len(loader.documents().documents) == 6

    loader.file_list.item(0).setSelected(True)
    with qtbot.waitSignal(loader.runner.finished, timeout=120_000):
        qtbot.mouseClick(loader.remove_button, Qt.MouseButton.LeftButton)
    assert loader.files() == [str(second)]
    assert loader.preview_model.stringList() == ["alpha", "beta"]

    qtbot.mouseClick(loader.clear_button, Qt.MouseButton.LeftButton)
    assert loader.files() == [] and loader.documents() is None
    assert loader.preview_model.rowCount() == 0


def test_a_tables_text_column_is_shown_and_can_be_chosen(qtbot, loader, tmp_path):
    table = tmp_path / "news.csv"
    table.write_text("title,description,label\n"
                     "Cats win,A cat won the race today.,1\n"
                     "Dogs lose,The dog lost its bone.,2\n"
                     "Fish swim,Fish swim in the sea.,3\n", encoding="utf-8")
    read(qtbot, loader, [table])
    assert "read the text column 'description' of news.csv" in loader.message.text().lower()
    assert "other text columns: 'title'" in loader.message.text()
    assert [loader.column.itemText(i) for i in range(loader.column.count())] == ["title", "description"]
    assert loader.column.lineEdit().placeholderText() == "auto: description"
    assert loader.preview_model.stringList()[0] == "A cat won the race today."
    with qtbot.waitSignal(loader.runner.finished, timeout=120_000):
        loader.choose_column("title")
    assert loader.preview_model.stringList() == ["Cats win", "Dogs lose", "Fish swim"]
    assert "read the text column 'title'" in loader.message.text().lower()


def test_html_leftovers_are_counted_and_can_be_cleaned_before_building(qtbot, loader, tmp_path):
    corpus = tmp_path / "agnews.txt"
    corpus.write_text("Stocks &lt;b&gt;fell&lt;/b&gt; today\n"
                      "It #39;s a quot;deal quot; for <i>us</i>\n"
                      "Fish &amp; chips are tasty\n"
                      "Plain text without markup\n"
                      "<b></b>\n", encoding="utf-8")
    read(qtbot, loader, [corpus])
    assert loader._html_row.isVisibleTo(loader)
    warning = loader.html_warning.text()
    assert warning.startswith("⚠ 4 texts hold HTML leftovers (")
    assert "escaped tags in 1" in warning and "bare entities in 1" in warning and "tags in 2" in warning
    assert "&lt;b&gt;" in warning
    assert len(loader.documents().documents) == 5                   # nothing changed unasked
    loader.clean_html.setChecked(True)
    texts = loader.documents().texts
    assert texts == ["Stocks fell today", "It 's a \"deal \" for us", "Fish & chips are tasty",
                     "Plain text without markup"]
    assert loader.preview_model.stringList() == texts
    assert "1</b> empty line dropped" in loader.counts.text()          # "<b></b>" left nothing
    loader.clean_html.setChecked(False)
    assert len(loader.documents().documents) == 5
    loader.resize(900, 650)
    loader.show()
    qtbot.waitExposed(loader, timeout=120_000)
    loader.grab().save("/tmp/background_html.png")

    clean = tmp_path / "clean.txt"
    clean.write_text("a cat\na dog\na bird\n", encoding="utf-8")
    loader.clear()
    read(qtbot, loader, [clean])
    assert not loader._html_row.isVisibleTo(loader)
