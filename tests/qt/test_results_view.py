"""ResultsView / ResultsTableModel: a scored pair list as a sortable, filterable table."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt

from calibsim_gui.core.analysis.matrices import score_matrix
from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.io.inputs import load_documents, load_pairs
from calibsim_gui.qt.session.state import AppState
from calibsim_gui.qt.views.results.results_view import EMPTY_HINT, ResultsView
from calibsim_gui.qt.widgets.results_model import SORT_ROLE, ResultsTableModel
from tests.fakes import FakeEmbedder, random_sentences

PAIRS = [
    ("the cat sat on the mat", "a cat sat on a mat", "10"),
    ("w1 w2 w3 w4 w5", "w1 w2 w3 w4 w6", "9"),
    ("w7 w8 w9", "w10 w11 w12", "2"),
    ("a black CAT", "the dog barked", "4.5"),
    ("w13 w14 w15 w16", "w13 w14 w17 w18", "6"),
    ("w20 w21", "w22 w23", "0.5"),
    ("w30 w31 w32 w33", "w30 w31 w32 w34", "8"),
    ("", "an empty partner", "1"),
    ("w40 w41 w42", "w40 w43 w44", "3"),
    ("w50 w51", "w50 w51", "10"),
]


@pytest.fixture(scope="module")
def profile():
    return build_profile(FakeEmbedder(), random_sentences(3000), ProfileSettings(n_pairs=1500))


@pytest.fixture
def scored(profile, tmp_path):
    path = tmp_path / "pairs.csv"
    pd.DataFrame(PAIRS, columns=["sentence1", "sentence2", "score"]).to_csv(path, index=False)
    return score_pairs(load_pairs(path), FakeEmbedder(), profile)


@pytest.fixture
def view(qtbot, profile, scored):
    state = AppState()
    state.set_profile(profile, "test")
    state.set_results(scored)
    widget = ResultsView(state)
    qtbot.addWidget(widget)
    yield widget
    widget.deleteLater()             # pytest keeps fixture values: free the widget (and profile) now
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def shown_column(view, name):
    """Display texts of column `name`, in the order the table shows them."""
    column = view.model.column_of(name)
    return [view.model.index(r, column).data() for r in range(view.model.rowCount())]


def test_table_shows_every_row_with_readable_numbers(view, scored):
    assert view.model.rowCount() == len(PAIRS)
    assert view.stack.currentWidget() is view.table
    raw = shown_column(view, "cosine_raw")
    expected = scored.frame["cosine_raw"]
    assert raw[0] == f"{expected[0]:.4f}"                 # 4 significant digits for 0.x values
    assert raw[7] == ""                                   # the pair with an empty text: no score
    percentile = shown_column(view, "cosine_bg_percentile")
    assert percentile[0] == f"{scored.frame['cosine_bg_percentile'][0]:.1f}"
    assert shown_column(view, "sentence1")[0] == "the cat sat on the mat"
    model = view.model
    numeric = model.index(0, model.column_of("cosine_raw"))
    text = model.index(0, model.column_of("sentence1"))
    assert numeric.data(Qt.ItemDataRole.TextAlignmentRole) & Qt.AlignmentFlag.AlignRight
    assert text.data(Qt.ItemDataRole.TextAlignmentRole) & Qt.AlignmentFlag.AlignLeft
    assert numeric.data(SORT_ROLE) == pytest.approx(expected[0])


def test_header_tooltips_explain_form_and_orientation(view):
    model = view.model
    tip = model.headerData(model.column_of("cosine_bg_percentile"), Qt.Orientation.Horizontal,
                           Qt.ItemDataRole.ToolTipRole)
    assert FORM_DESCRIPTIONS["bg_percentile"] in tip
    tip = model.headerData(model.column_of("euclidean_raw"), Qt.Orientation.Horizontal,
                           Qt.ItemDataRole.ToolTipRole)
    assert "lower = more similar" in tip


def test_sorting_orders_numbers_numerically_and_keeps_input_row_numbers(view, scored):
    column = view.model.column_of("score")
    view.table.sortByColumn(column, Qt.SortOrder.AscendingOrder)
    labels = shown_column(view, "score")
    assert labels[:3] == ["0.5", "1", "2"] and labels[-2:] == ["10", "10"]     # not "0.5", "1", "10"
    first_input_row = view.model.headerData(0, Qt.Orientation.Vertical)
    assert first_input_row == "6"                           # "w20 w21" is line 6 of the input

    view.table.sortByColumn(view.model.column_of("cosine_raw"), Qt.SortOrder.DescendingOrder)
    raw = shown_column(view, "cosine_raw")
    values = [float(v) for v in raw if v]
    assert values == sorted(values, reverse=True)
    assert raw[-1] == ""                                    # unscored pairs go last
    assert values[0] == pytest.approx(scored.frame["cosine_raw"].max(), abs=1e-4)


def test_filter_keeps_rows_whose_texts_contain_the_text(view, qtbot):
    view.filter_edit.setText("CAT")
    qtbot.waitUntil(lambda: view.model.rowCount() == 2, timeout=120_000)
    assert "2 of 10 rows shown" in view.summary.text()
    view.filter_edit.clear()
    qtbot.waitUntil(lambda: view.model.rowCount() == len(PAIRS), timeout=120_000)


def test_ctrl_f_focuses_the_filter(view, qtbot):
    view.show()
    qtbot.waitExposed(view, timeout=120_000)
    view.activateWindow()
    view.table.setFocus()
    qtbot.waitUntil(view.table.hasFocus, timeout=120_000)
    qtbot.keyClick(view.table, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(view.filter_edit.hasFocus, timeout=120_000)
    # Qt keeps Ctrl as the application's modifier state until a key event without it: later
    # tests' selectRow() would otherwise toggle (Ctrl+click) instead of select
    qtbot.keyRelease(view.filter_edit, Qt.Key.Key_Control)


def test_selecting_a_row_selects_the_pair_in_state_and_back(view, qtbot):
    state = view.state
    view.table.sortByColumn(view.model.column_of("score"), Qt.SortOrder.AscendingOrder)
    with qtbot.waitSignal(state.selection_changed, timeout=120_000):
        view.table.selectRow(2)                             # label "2": input row 3 (index 2)
    assert state.selected_row == 2
    state.select_row(5)                                    # e.g. chosen in a plot
    selected = view.table.selectionModel().selectedRows()
    assert [view.model.frame_row(i.row()) for i in selected] == [5]


def test_column_sets_hide_other_metrics_and_forms(view):
    model, table, combo = view.model, view.table, view.columns_combo

    def visible():
        return [n for c, n in enumerate(model.column_names) if not table.isColumnHidden(c)]

    combo.setCurrentIndex(combo.findData("focus"))
    assert visible() == ["sentence1", "sentence2", "score", "cosine_raw", "cosine_calibrated",
                         "disagreement"]
    view.state.set_view(metric="euclidean", form="bg_percentile")
    assert visible()[-3:] == ["euclidean_raw", "euclidean_bg_percentile", "disagreement"]
    combo.setCurrentIndex(combo.findData("metric"))
    assert all(n.startswith("euclidean_") for n in visible()[3:-1]) and len(visible()) > 6
    combo.setCurrentIndex(combo.findData("all"))
    assert len(visible()) == len(model.column_names)


def test_summary_reports_agreement_and_notes_fold_out(view, scored):
    rho = scored.provenance["agreement"]["spearman_x100"]["cosine_raw"]
    assert f"Spearman ×100 {rho:.1f} (the same for raw and calibrated" in view.summary.text()
    assert "vs score (0–10 → 0–1): MAE " in view.summary.text()
    assert "10 rows" in view.summary.text() and "9 scored" in view.summary.text()
    assert view.notes_button.isVisibleTo(view) and not view.notes.isVisibleTo(view)
    view.notes_button.click()
    assert view.notes.isVisibleTo(view) and "empty" in view.notes.text()


def test_notes_name_the_windows_controls_not_command_line_flags(view, scored):
    from dataclasses import replace

    note = view.state.profile.warnings(precision="int8")[0]
    assert "use --precision float32" in note                          # the core's words, for the CLI
    view.state.set_results(replace(scored, notes=[note]))
    shown = view.notes.text()
    assert "choose Precision float32 on the Model tab (or rebuild the profile in int8)" in shown
    assert "--precision" not in shown


def test_no_results_shows_the_drop_hint(view):
    view.state.set_results(None)
    assert view.stack.currentWidget() is view.hint and view.hint.text() == EMPTY_HINT
    assert view.model.rowCount() == 0


def test_document_set_lists_every_pair_with_both_texts_sortable(view, profile, tmp_path):
    texts = ["the cat sat", "a cat sat", "w1 w2 w3", "w1 w2 w4", "w9 w8", "w7 w6 w5", "dogs bark"]
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(texts))
    matrix = score_matrix(load_documents(docs), FakeEmbedder(), profile)
    view.state.set_results(matrix)
    model = view.model
    assert model.column_names == ["doc a", "doc b", "text a", "text b", "cosine_raw", "cosine_calibrated"]
    assert model.rowCount() == 21                                  # 7 * 6 / 2: all pairs, not a top 10
    assert "7 documents · all 21 pairs" in view.summary.text()
    calibrated = [float(v) for v in shown_column(view, "cosine_calibrated")]
    assert calibrated == sorted(calibrated, reverse=True)          # most similar first
    off_diagonal = matrix.matrices["calibrated"][~np.eye(7, dtype=bool)]
    assert calibrated[0] == pytest.approx(off_diagonal.max(), abs=1e-4)
    pairs = {frozenset((model.index(r, 2).data(), model.index(r, 3).data())) for r in range(21)}
    assert frozenset(("the cat sat", "a cat sat")) in pairs and len(pairs) == 21
    view.table.sortByColumn(model.column_of("text a"), Qt.SortOrder.AscendingOrder)
    firsts = [model.index(r, model.column_of("text a")).data() for r in range(21)]
    assert firsts == sorted(firsts, key=str.lower)
    view.table.sortByColumn(model.column_of("cosine_raw"), Qt.SortOrder.AscendingOrder)
    raw = [float(v) for v in shown_column(view, "cosine_raw")]
    assert raw == sorted(raw)
    view.table.selectRow(0)                                        # a row selects its pair
    a, b = view.state.selected_documents()
    assert {matrix.texts[a], matrix.texts[b]} == {model.index(0, 2).data(), model.index(0, 3).data()}
    assert matrix.texts[a] in view.detail.text() and matrix.texts[b] in view.detail.text()


def test_two_thousand_documents_are_listed_without_a_row_object_per_pair(view, profile):
    from calibsim_gui.core.analysis.matrices import DocumentMatrix

    n = 2000
    rng = np.random.default_rng(1)
    raw = rng.uniform(-0.1, 1, (n, n)).astype(np.float32)
    raw = (raw + raw.T) / 2
    matrix = DocumentMatrix([f"doc{i}.txt" for i in range(n)], "cosine",
                            {"raw": raw, "calibrated": raw * 0.5}, {}, texts=[f"text {i}" for i in range(n)])
    view.state.set_results(matrix)
    assert view.model.rowCount() == n * (n - 1) // 2
    assert view.model.index(0, view.model.column_of("cosine_raw")).data(SORT_ROLE) == \
        pytest.approx(raw[np.triu_indices(n, k=1)].max())
    view.filter_edit.setText("text 1999")
    view._apply_filter()
    assert view.model.rowCount() == n - 1                          # every pair with document 1999


def test_model_handles_100k_rows(qtbot):
    rng = np.random.default_rng(0)
    n = 100_000
    frame = pd.DataFrame({"sentence1": [f"text {i}" for i in range(n)], "sentence2": "other",
                          "cosine_raw": rng.uniform(-0.2, 1, n)})
    model = ResultsTableModel(frame)
    assert model.rowCount() == n
    model.sort(2, Qt.SortOrder.AscendingOrder)
    first = model.index(0, 2).data(SORT_ROLE)
    assert first == pytest.approx(frame["cosine_raw"].min())
    model.set_filter("TEXT 9999")                           # 9999 and 99990..99999
    assert model.rowCount() == 11
    assert [model.frame_row(r) for r in range(3)] == sorted(
        [9999, *range(99990, 100000)], key=lambda i: frame["cosine_raw"][i])[:3]


def interval_tip(model, row, name):
    """(value, lo, hi) read from the tooltip of a calibrated cell."""
    tip = model.index(row, model.column_of(name)).data(Qt.ItemDataRole.ToolTipRole)
    return tuple(map(float, re.fullmatch(
        r"(\S+): (?:people would rate .*?; )?reference uncertainty \(95 %\) (\S+)–(\S+)", tip).groups()))


def test_calibrated_cells_tell_their_reference_uncertainty(view, scored, profile):
    model, frame = view.model, scored.frame
    curve = profile.metrics["cosine"].calibrators["calibrated"]
    for row in (0, 1, 4, 6):                                            # related pairs: inside 0-1
        value, lo, hi = interval_tip(model, row, "cosine_calibrated")
        assert value == pytest.approx(frame["cosine_calibrated"][row], abs=0.005)
        assert lo <= value <= hi                   # (a narrow range: only the unrelated end moves)
        expected = curve.interval([frame["cosine_raw"][row]])
        assert (lo, hi) == pytest.approx((expected[0][0], expected[1][0]), abs=0.005)
    euclidean = interval_tip(model, 0, "euclidean_calibrated")            # distances: negated first
    assert euclidean[1] <= euclidean[0] <= euclidean[2]
    empty = model.index(7, model.column_of("cosine_calibrated"))         # a pair with an empty text
    assert empty.data(Qt.ItemDataRole.ToolTipRole) is None
    assert model.index(0, model.column_of("cosine_raw")).data(Qt.ItemDataRole.ToolTipRole) is None


def test_calibrated_tooltips_read_the_interval_columns_when_present(qtbot, profile, tmp_path):
    path = tmp_path / "pairs.csv"
    pd.DataFrame(PAIRS, columns=["sentence1", "sentence2", "score"]).to_csv(path, index=False)
    frame = score_pairs(load_pairs(path), FakeEmbedder(), profile, interval=True).frame
    frame["cosine_calibrated_lo"], frame["cosine_calibrated_hi"] = 0.25, 0.75    # only these say so
    model = ResultsTableModel()
    model.set_frame(frame)                                                 # no profile needed
    assert interval_tip(model, 0, "cosine_calibrated")[1:] == (0.25, 0.75)
    assert model.index(0, model.column_of("dot_calibrated")).data(Qt.ItemDataRole.ToolTipRole) \
        == "{:.2f}: reference uncertainty (95 %) {:.2f}–{:.2f}".format(
            *frame.loc[0, ["dot_calibrated", "dot_calibrated_lo", "dot_calibrated_hi"]])


def test_calibrated_tooltips_say_where_peoples_scores_fall_when_the_profile_has_a_band(qtbot, profile, tmp_path):
    from calibsim_gui.core.calibration.calibrators import AgreementBand
    from calibsim_gui.core.calibration.profile import ReferenceProfile

    banded = ReferenceProfile.from_dict(profile.to_dict())
    rng = np.random.default_rng(0)
    calibrated = rng.uniform(0, 1, 2000)
    banded.metrics["cosine"].band = AgreementBand().fit(
        calibrated, np.clip(calibrated + rng.normal(0, 0.1, 2000), 0, 1), source={"name": "fake"}, model="m")
    path = tmp_path / "pairs.csv"
    pd.DataFrame(PAIRS, columns=["sentence1", "sentence2", "score"]).to_csv(path, index=False)
    frame = score_pairs(load_pairs(path), FakeEmbedder(), banded).frame
    model = ResultsTableModel()
    model.set_frame(frame, banded)
    tip = model.index(0, model.column_of("cosine_calibrated")).data(Qt.ItemDataRole.ToolTipRole)
    lo, hi = (float(end[0]) for end in banded.metrics["cosine"].band.band([frame["cosine_calibrated"][0]], 0.8))
    assert f"people would rate such a pair between {lo:.2f} and {hi:.2f}, 80 % of the time (measured on fake)" in tip
    assert "reference uncertainty (95 %)" in tip
    assert "people would rate" not in model.index(0, model.column_of("dot_calibrated")).data(Qt.ItemDataRole.ToolTipRole)


def test_truncated_pairs_are_marked_with_a_tooltip(qtbot, profile, tmp_path):
    from tests.core.test_chunking import DOC_A, DOC_B

    path = tmp_path / "long.csv"
    pd.DataFrame({"sentence1": [DOC_A, "a cat", "w1 w2"], "sentence2": [DOC_B, DOC_B, "w1 w3"]}
                 ).to_csv(path, index=False)
    state = AppState()
    state.set_profile(profile, "test")
    state.set_results(score_pairs(load_pairs(path), FakeEmbedder(), profile))
    widget = ResultsView(state)
    qtbot.addWidget(widget)
    assert shown_column(widget, "truncated") == ["✂ both", "✂ b", ""]
    column = widget.model.column_of("truncated")
    assert not widget.table.isColumnHidden(column)
    tip = widget.model.index(1, column).data(Qt.ItemDataRole.ToolTipRole)
    assert "second text is longer than the model's max length" in tip and "Long texts" in tip
    assert widget.model.index(2, column).data(Qt.ItemDataRole.ToolTipRole) is None
    header = widget.model.headerData(column, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert "only its beginning was scored" in header
    assert "✂ 2 pairs with a truncated text" in widget.summary.text()
    widget.resize(1100, 300)
    widget.grab().save(str(tmp_path / "truncated.png"))
    widget.deleteLater()


def test_texts_come_first_and_stretch_and_headers_are_readable(view, qtbot):
    model, header = view.model, view.table.horizontalHeader()
    title = model.headerData(model.column_of("cosine_calibrated"), Qt.Orientation.Horizontal)
    assert title == "cosine\ncalibrated"
    tip = model.headerData(model.column_of("cosine_calibrated"), Qt.Orientation.Horizontal,
                           Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith("cosine_calibrated:")
    order = sorted((c for c in range(model.columnCount()) if not view.table.isColumnHidden(c)),
                   key=header.visualIndex)
    assert [model.column_names[c] for c in order] == ["sentence1", "sentence2", "score", "cosine_raw",
                                                      "cosine_calibrated", "disagreement"]
    for width in (1600, 1024):
        view.resize(width, 500)
        view.show()
        qtbot.waitExposed(view, timeout=120_000)
        qtbot.waitUntil(lambda: header.length() >= view.table.viewport().width() - 2, timeout=120_000)
        texts = [header.sectionSize(c) for c in (model.column_of("sentence1"), model.column_of("sentence2"))]
        scores = [header.sectionSize(model.column_of(n)) for n in ("cosine_raw", "cosine_calibrated")]
        assert min(texts) > 2 * max(scores)                         # the texts get the room
        assert header.length() <= view.table.viewport().width() + 2  # everything fits: no scrolling
    text = model.index(0, model.column_of("sentence1"))
    assert text.data(Qt.ItemDataRole.ToolTipRole) == text.data()      # full text in the tooltip


def test_a_brushed_range_filters_the_rows_until_cleared(view, scored):
    state, values = view.state, scored.frame["cosine_calibrated"]
    low, high = float(values.quantile(0.3)), float(values.quantile(0.8))
    state.set_score_range(("cosine_calibrated", low, high))
    inside = int(((values >= low) & (values <= high)).sum())
    assert 0 < view.model.rowCount() == inside < len(values)
    assert view.chips.isVisibleTo(view) and "cosine · calibrated" in view.chips.labels()[0]
    assert f"{inside} of 10 rows shown" in view.summary.text()
    view.filter_edit.setText("cat")                          # text and range filters combine
    view._apply_filter()
    both = sum(("cat" in f"{a} {b}".lower()) and low <= v <= high for a, b, v in
               zip(scored.frame["sentence1"], scored.frame["sentence2"], values))
    assert view.model.rowCount() == both
    view.filter_edit.clear()
    view._apply_filter()
    view.chips.chips[0].click()
    assert state.score_range is None and view.model.rowCount() == len(values)
    assert not view.chips.isVisibleTo(view)


def test_with_every_column_the_texts_stay_while_the_scores_scroll(view, qtbot):
    model, table = view.model, view.table
    view.columns_combo.setCurrentIndex(view.columns_combo.findData("all"))
    view.resize(1024, 500)
    view.show()
    qtbot.waitExposed(view, timeout=120_000)
    qtbot.waitUntil(lambda: table.horizontalScrollBar().maximum() > 0, timeout=120_000)
    assert view.frozen.isVisible()
    texts = [model.column_of("sentence1"), model.column_of("sentence2")]
    assert [c for c in range(model.columnCount()) if not view.frozen.isColumnHidden(c)] == texts
    assert view.frozen.selectionModel() is table.selectionModel()
    table.horizontalScrollBar().setValue(table.horizontalScrollBar().maximum())
    assert view.frozen.geometry().width() == sum(table.columnWidth(c) for c in texts)
    table.verticalScrollBar().setValue(table.verticalScrollBar().maximum())
    assert view.frozen.verticalScrollBar().value() == table.verticalScrollBar().value()
    view.columns_combo.setCurrentIndex(view.columns_combo.findData("focus"))
    qtbot.waitUntil(lambda: not view.frozen.isVisible(), timeout=120_000)           # everything fits again


def test_new_results_drop_the_range_filter(view, scored):
    view.state.set_score_range(("cosine_raw", 0.0, 0.1))
    assert view.chips.isVisibleTo(view)
    view.state.set_results(scored)
    assert view.state.score_range is None and not view.chips.isVisibleTo(view)
    assert view.model.rowCount() == len(scored.frame)


def test_column_filter_chips_filter_the_rows_and_clear_one_by_one(view, scored, qtbot, monkeypatch):
    from calibsim_gui.qt.views.results.column_filters import ColumnFilter, ColumnFilterDialog

    frame, state = scored.frame, view.state
    values = frame["cosine_calibrated"].to_numpy()
    low = round(float(np.quantile(values[np.isfinite(values)], 0.3)), 3)
    dialog_seen = []

    def fill(dialog):                       # the dialog a user opens from the header menu
        dialog_seen.append(dialog.column_combo.currentText())
        dialog.low.setValue(low)
        dialog.high.setValue(1.5)
        return ColumnFilterDialog.DialogCode.Accepted
    monkeypatch.setattr(ColumnFilterDialog, "exec", fill)
    view.ask_filter("cosine_calibrated")
    assert dialog_seen == ["cosine · calibrated"]
    above = int((values >= low).sum())
    assert 0 < view.model.rowCount() == above < len(frame)
    view.set_column_filter(ColumnFilter("sentence1", text="w"))       # text contains, combined
    both = int(sum(v >= low and "w" in a.lower() for v, a in zip(values, frame["sentence1"])))
    assert view.model.rowCount() == both
    state.set_score_range(("cosine_raw", -1.0, 2.0))                   # the brushed range: a chip too
    assert view.chips.labels() == ["cosine · raw from -1 to 2", f"cosine · calibrated from {low:.4g} to 1.5",
                                   "sentence1 contains “w”"]
    assert view.chips.clear_all.isVisibleTo(view)
    chip = view.chips.chips[2]                                         # keyboard: Delete on the chip
    view.show()
    chip.setFocus()
    qtbot.keyClick(chip, Qt.Key.Key_Delete)
    assert view.model.rowCount() == above and len(view.chips.labels()) == 2
    view.chips.clear_all.click()                                       # all at once
    assert view.model.rowCount() == len(frame) and state.score_range is None
    assert not view.chips.isVisibleTo(view)


def test_results_view_state_round_trips_columns_sort_and_filters(view, scored, profile):
    from calibsim_gui.qt.views.results.column_filters import ColumnFilter

    view.columns_combo.setCurrentIndex(view.columns_combo.findData("all"))
    view.table.sortByColumn(view.model.column_of("cosine_raw"), Qt.SortOrder.DescendingOrder)
    view.set_column_filter(ColumnFilter("cosine_raw", 0.2, None))
    view.filter_edit.setText("w")
    saved = view.view_state()
    assert saved["columns"] == "all" and saved["sort"] == {"column": "cosine_raw", "descending": True}
    import json
    saved = json.loads(json.dumps(saved))                              # JSON-safe
    other = ResultsView(view.state)                                    # a fresh view, as on reopen
    other.restore_view_state({**saved, "unknown": 1})
    raw = scored.frame["cosine_raw"].to_numpy()
    wanted = [i for i in np.argsort(-raw, kind="stable") if raw[i] >= 0.2
              and "w" in f"{scored.frame['sentence1'][i]} {scored.frame['sentence2'][i]}".lower()]
    assert [other.model.frame_row(r) for r in range(other.model.rowCount())] == wanted
    assert other.columns_combo.currentData() == "all" and other.filter_edit.text() == "w"
    assert other.chips.labels() == ["cosine · raw ≥ 0.2"]
    other.restore_view_state({"filters": [{"column": "gone"}, "x"], "sort": {"column": "gone"}})
    with_w = sum("w" in f"{a} {b}".lower() for a, b in zip(scored.frame["sentence1"], scored.frame["sentence2"]))
    assert other.column_filters == [] and other.model.rowCount() == with_w > len(wanted)   # text filter kept
    other.restore_view_state("not a dict")
    other.deleteLater()
