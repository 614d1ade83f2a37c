"""Document sets in the window: a set that cannot be scored inside the memory budget is refused
before it replaces anything, with why and what to do (#39 item 6, #42 item 5)."""

from __future__ import annotations

from calibsim_gui.core.io.memory import file_read_bytes
from calibsim_gui.core.io.inputs import PairTable
from tests.fakes import random_sentences
from tests.qt.conftest import drop, shown_error


def test_a_refused_document_set_leaves_the_results_on_screen_and_says_why(window, qtbot, pairs_csv, tmp_path):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    before, table = window.state.results, window.state.input
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(random_sentences(3000, seed=5)))
    window.set_memory_budget(file_read_bytes(corpus.stat().st_size) + 1000)   # read, but not scored
    window.open_inputs([corpus], per_file=False)
    message = shown_error(window, qtbot)
    assert window.state.results is before and window.state.input is table
    assert "needs about" in message and "more than the memory budget" in message        # why
    assert "Settings ▸ Memory budget" in message and "The results on screen stay" in message   # what to do
    assert isinstance(window.state.input, PairTable)
    assert window.results.model.rowCount() == 30                 # still shown
    assert not window.score_runner.running and not window.input_runner.running
    assert not window.results.hint.isVisible()                   # no "not scored yet" placeholder
