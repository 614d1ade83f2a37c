"""Document sets in the window: a set whose heatmap does not fit the memory budget is scored by its
neighbours (Results, Heatmap tab, Map); one that not even that fits is refused before it replaces
anything, with why and what to do (#39, #42 item 5)."""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.analysis.neighbours import DEFAULT_DUPLICATE_THRESHOLD, MAX_PAIRS
from calibsim_gui.core.io.inputs import PairTable
from calibsim_gui.core.io.memory import file_read_bytes
from calibsim_gui.qt.session.document_sets import GROUP_COLUMN, NeighbourPairs, largest_heatmap, matrix_fits
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


def test_a_document_set_of_100_000_lines_is_scored_by_neighbours_with_its_map(window, qtbot, tmp_path):
    texts = random_sentences(100_000, seed=6)
    near = [text + " again" for text in texts[:20]]           # 20 near-duplicates of the first texts
    corpus = tmp_path / "large.txt"
    corpus.write_text("\n".join(texts + near))
    with qtbot.waitSignal(window.results_shown, timeout=600_000):
        window.open_inputs([corpus], per_file=False)
        qtbot.waitUntil(lambda: window.score_runner.running, timeout=120_000)
        assert window.task_status.cancel_button.isEnabled()           # long work: a worker with Cancel
    results = window.state.results
    assert isinstance(results, NeighbourPairs) and len(results.neighbours.ids) == 100_020
    # Results: the most similar pairs, near-duplicates first, raw and calibrated, in groups
    model = window.results.model
    assert model.rowCount() == len(results.frame) == MAX_PAIRS
    for name in ("document", "neighbour", "cosine_raw", "cosine_calibrated", GROUP_COLUMN):
        assert model.column_of(name) >= 0
    top = results.frame.head(20)
    assert {frozenset(p) for p in zip(top["document"], top["neighbour"])} == \
        {frozenset((t, t + " again")) for t in texts[:20]}
    assert top["cosine_calibrated"].is_monotonic_decreasing
    grouped = results.frame[results.frame[GROUP_COLUMN] != ""]        # calibrated 0.9 or more
    assert len(grouped) and (grouped["cosine_calibrated"] >= DEFAULT_DUPLICATE_THRESHOLD).all()
    # Heatmap: says why there is none, and lists a document's nearest texts
    window.tabs.setCurrentWidget(window.heatmap)
    page = window.heatmap.neighbour_list
    assert window.heatmap.stack.currentWidget() is page
    assert "heatmap is kept for document sets" in page.explanation.text() and "100,020 documents" in \
        page.explanation.text()
    assert page.table.rowCount() == 10
    assert window.exports.has_results()                          # its tables export (test below)
    window.state.select_row(3)
    assert page.title.text().startswith(f"Nearest texts to {results.frame['doc_id'].iloc[3]}")
    # the Map: every text, drawn as one image
    window.tabs.setCurrentWidget(window.map)
    qtbot.waitUntil(window.map.drawn, timeout=600_000)
    assert len(window.map.text_map) == 100_020 and len(window.map.cloud.coords) == 100_020
    best = window.map.columns["best match (calibrated)"]            # coloured by each text's nearest
    assert np.isfinite(best).all() and best[window.map.text_map.texts.index(texts[0])] == \
        results.frame["cosine_calibrated"][results.frame["document"].isin([texts[0]])
                                           | results.frame["neighbour"].isin([texts[0]])].max()
    window.map.plot_widget.grab()
    assert window.map.cloud.drawn().all()
    first = window.map.text_map.texts.index(texts[0])            # chosen on the map: its listed pairs
    window.map.choose([first])
    assert model.rowCount() >= 1 and all(
        texts[0] in (model.index(row, model.column_of("document")).data(),
                     model.index(row, model.column_of("neighbour")).data()) for row in range(model.rowCount()))
    window.grab().save("/tmp/appdocs/large_set_map.png")


def test_the_heatmap_tab_names_the_largest_set_whose_heatmap_fits():
    n = largest_heatmap(384, 12_600_000_000)
    assert matrix_fits(n, 384, 12_600_000_000) and not matrix_fits(n + 1, 384, 12_600_000_000)
    assert 30_000 < n < 43_853                          # AG News' 43,853 texts do not fit 12.6 GB


def test_a_set_scored_by_neighbours_exports_its_pairs_and_groups_and_draws_a_heatmap_of_a_selection(
        window, qtbot, tmp_path):
    import pandas as pd

    texts = random_sentences(2000, seed=7)
    corpus = tmp_path / "set.txt"
    corpus.write_text("\n".join(texts + [t + " again" for t in texts[:5]]))
    window.set_memory_budget(225_000_000)               # its heatmap does not fit; its neighbours do
    with qtbot.waitSignal(window.results_shown, timeout=300_000):
        window.open_inputs([corpus], per_file=False)
    results = window.state.results
    assert isinstance(results, NeighbourPairs)
    assert window.exports.default_path().endswith(".xlsx")      # tables, never an HTML or PDF report
    out = tmp_path / "neighbours.xlsx"
    with qtbot.waitSignal(window.export_runner.finished, timeout=120_000):
        window.exports.start(path=str(out), metric="cosine", form="calibrated", figures=False, force=False)
    assert "Exported" in window.status_label.text() and str(out) in window.status_label.text()
    sheets = pd.read_excel(out, sheet_name=None)
    pairs, groups = sheets["pairs"], sheets["groups"]
    assert len(pairs) == len(results.frame)
    for name in ("document", "neighbour", "cosine_raw", "cosine_calibrated", GROUP_COLUMN):
        assert name in pairs.columns
    top = pairs.head(5)                                       # the near-duplicates first, in groups
    assert {frozenset(p) for p in zip(top["document"], top["neighbour"])} == \
        {frozenset((t, t + " again")) for t in texts[:5]}
    assert pairs[GROUP_COLUMN].fillna("").tolist() == results.frame[GROUP_COLUMN].tolist()
    assert len(groups) == len(results.neighbours.groups) and (pairs[GROUP_COLUMN] == "group 1").any()
    csv = tmp_path / "pairs.csv"                                # CSV: the pairs as Results lists them
    with qtbot.waitSignal(window.export_runner.finished, timeout=120_000):
        window.exports.start(path=str(csv), metric="cosine", form="calibrated", figures=False, force=False)
    assert pd.read_csv(csv, comment="#")["document"].tolist() == results.frame["document"].tolist()
    # the Heatmap tab: a heatmap of the top pairs' texts, then of the texts chosen on the Map
    window.tabs.setCurrentWidget(window.heatmap)
    page = window.heatmap.neighbour_list
    assert "those of the most similar pairs" in page.selection_title.text()
    n = len(page.documents)
    assert 2 < n <= 300 and page.image.image.shape == (n, n) and f"of {n} texts" in page.selection_title.text()
    a, b = (results.document_index[results.frame[c].iloc[0]] for c in ("doc_id", "neighbour_id"))
    cell = page.image.image[list(page.documents).index(a), list(page.documents).index(b)]
    assert abs(cell - results.frame["cosine_calibrated"].iloc[0]) < 1e-5     # the top pair, as Results lists it
    window.tabs.setCurrentWidget(window.map)
    qtbot.waitUntil(window.map.drawn, timeout=300_000)
    window.map.choose([window.map.text_map.texts.index(texts[1])])
    qtbot.waitUntil(lambda: "Results shows" in page.selection_title.text(), timeout=30_000)
    chosen = [results.neighbours.texts[d] for d in page.documents]
    assert texts[1] in chosen and texts[1] + " again" in chosen and len(chosen) < n
    assert page.image.image.shape == (len(chosen), len(chosen))
