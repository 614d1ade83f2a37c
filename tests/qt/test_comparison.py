"""Comparing the scored pairs with another model: a worker scores them, a dialog shows both."""

from calibsim_gui.core import models
from tests.fakes import FakeEmbedder


def test_compare_with_another_model_shows_differences_and_scatter(window, qtbot, pairs_csv, monkeypatch):
    with qtbot.waitSignal(window.results_shown, timeout=20_000):
        window.open_inputs([pairs_csv])
    other = FakeEmbedder(dimension=32, name="fake-small")
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: other)
    with qtbot.waitSignal(window.compare_runner.finished, timeout=20_000):
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
