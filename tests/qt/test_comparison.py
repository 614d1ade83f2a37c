"""Comparing the scored pairs with another model: a worker scores them, a dialog shows both."""

from calibsim_gui.core.embedding import models
from tests.fakes import FakeEmbedder


def test_compare_with_another_model_shows_differences_and_scatter(window, qtbot, pairs_csv, monkeypatch):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    other = FakeEmbedder(dimension=32, name="fake-small")
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: other)
    with qtbot.waitSignal(window.compare_runner.finished, timeout=120_000):
        window.compare_with("small")
    dialog = window.comparison_dialog
    assert "fake-small" in dialog.windowTitle() and "fake-bow" in dialog.windowTitle()
    assert "calibrated" in dialog.summary.text() and "raw" in dialog.summary.text()
    assert set(dialog.scatters) == {"raw", "calibrated"}
    x, _ = dialog.scatters["raw"].getData()
    assert len(x) == 30
    assert dialog.table.model().rowCount() == 30
    dialog.close()


def test_compare_without_results_says_what_to_do(window, monkeypatch):
    shown = []
    monkeypatch.setattr(window, "show_error", lambda title, text: shown.append(text))
    window.choose_comparison_model()
    assert "Score a pairs file first" in shown[0]


def test_with_one_model_the_comparison_says_how_to_add_another(window, qtbot, pairs_csv, monkeypatch,
                                                                tmp_path):
    from PySide6.QtWidgets import QFileDialog

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    monkeypatch.setattr(window.models.table_model, "models", [])       # nothing else listed
    window.choose_comparison_model()
    dialog = window.comparison_dialog
    qtbot.waitExposed(dialog, timeout=120_000)
    text = dialog.summary.text()
    assert "Only one model is available" in text and "Choose a model folder" in text
    assert "calibsim compare" in text and "--anchors" in text
    dialog.grab().save("/tmp/compare_one.png")
    folder = tmp_path / "other-model"
    folder.mkdir()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(folder))
    chosen = []
    monkeypatch.setattr(window, "compare_with", lambda spec: chosen.append(spec))
    dialog.model_chosen.disconnect()
    dialog.model_chosen.connect(window.compare_with)
    dialog.choose_button.click()
    assert chosen == [str(folder)] and not dialog.isVisible()


def test_every_model_is_calibrated_with_the_same_edited_ladder(window, qtbot, pairs_csv, monkeypatch):
    from calibsim_gui.core.references.anchors import AnchorSet

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    ladder = window.state.profile.anchors
    edited = AnchorSet(ladder.name, ladder.levels, ladder.pairs[::2])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.apply_anchors(edited)
    assert window.state.profile.anchors == edited
    other = FakeEmbedder(dimension=32, name="fake-small")
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: other)
    with qtbot.waitSignal(window.compare_runner.finished, timeout=120_000):
        window.compare_with("small")
    dialog = window.comparison_dialog
    assert "same anchor ladder" in dialog.summary.text() and "Warning" not in dialog.summary.text()
    # the second model's calibrated scores are those of its own reference refitted on the edited ladder
    from calibsim_gui.core.analysis.pairs import score_pairs
    from calibsim_gui.core.analysis.comparison import comparison_reference

    expected = score_pairs(window.state.input, other, comparison_reference(other, edited),
                           metrics=["cosine"]).frame["cosine_calibrated"]
    shown = dialog.comparison.frame[f"cosine_calibrated [{other.fingerprint.id}]"]
    assert shown.to_numpy() == __import__("pytest").approx(expected.to_numpy(), abs=1e-9)
    dialog.close()
