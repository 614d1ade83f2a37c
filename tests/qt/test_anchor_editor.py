import json
import re

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QComboBox, QStyleOptionViewItem

from calibsim_gui.core.calibration.profile_builder import build_profile, with_anchors
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.references.anchors import AnchorSet, builtin_anchors, load_anchors
from calibsim_gui.qt.editors.anchor_editor import AnchorEditor
from calibsim_gui.qt.editors.anchor_models import LEVEL, PENDING, TEXT_A, TEXT_B
from calibsim_gui.qt.session.state import AppState
from tests.fakes import FakeEmbedder


@pytest.fixture
def state(profile):
    state = AppState()
    state.set_model(FakeEmbedder(), None)
    state.set_profile(profile, "test")
    return state


def make_editor(qtbot, state):
    """An editor on `state`. Made inside each test: widgets made by fixtures outlive the test."""
    editor = AnchorEditor(state)
    qtbot.addWidget(editor)
    return editor


def column(editor, metric):
    return 3 + editor.model.metrics.index(metric)


def text(editor, row, col):
    return editor.model.index(row, col).data()


def ladder(anchors):
    return anchors.levels, anchors.pairs


def test_float_noise_of_identical_texts_reads_as_zero(qtbot, profile):
    from calibsim_gui.core.calibration.profile import ReferenceProfile

    noisy = ReferenceProfile.from_dict(profile.to_dict())
    identical = [row for row, p in enumerate(noisy.anchors.pairs) if p.text_a == p.text_b]
    noisy.metrics["euclidean"].anchor_scores[identical] = 1.2e-09       # what a real model's float32 gives
    state = AppState()
    state.set_model(FakeEmbedder(), None)
    state.set_profile(noisy, "noisy")
    editor = make_editor(qtbot, state)
    assert identical and {text(editor, row, column(editor, "euclidean")) for row in identical} == {"0"}
    assert not any("e-" in (text(editor, row, column(editor, "euclidean")) or "") for row in identical)


def test_shows_the_profiles_anchors_with_raw_scores_in_each_metrics_orientation(qtbot, state, profile):
    editor = make_editor(qtbot, state)
    pairs = profile.anchors.pairs
    assert editor.model.rowCount() == len(pairs)
    assert text(editor, 0, TEXT_A) == pairs[0].text_a and text(editor, 0, TEXT_B) == pairs[0].text_b
    assert text(editor, 0, LEVEL) == profile.anchors.levels[0].label
    cosine = profile.metrics["cosine"].anchor_scores
    euclidean = profile.metrics["euclidean"].anchor_scores        # "higher = more similar" view
    for row in (0, 50, len(pairs) - 1):
        assert text(editor, row, column(editor, "cosine")) == f"{cosine[row]:.4g}"
        assert text(editor, row, column(editor, "euclidean")) == f"{-euclidean[row]:.4g}"
    assert float(text(editor, 0, column(editor, "euclidean"))) > 0     # a distance, as raw
    assert "scores from profile “test”" in editor.status.text()

    levels = editor.levels_model
    first = profile.anchors.levels[0].name
    raw = [s for p, s in zip(pairs, cosine) if p.level == first]
    median_col = 4 + editor.model.metrics.index("cosine")
    assert levels.index(0, 0).data() == first
    assert levels.index(0, median_col).data() == f"{np.median(raw):.4g}"
    assert levels.index(0, 3).data() == str(len(raw))


def test_edits_go_through_undo_and_undo_redo_restore_exactly(qtbot, state, profile):
    editor = make_editor(qtbot, state)
    original = editor.anchor_set()
    cosine = column(editor, "cosine")
    snapshots = [original]

    editor.table.setCurrentIndex(editor.model.index(2, TEXT_A))
    editor.add_pair()                                          # inserted below row 2, editing
    editor.table.closePersistentEditor(editor.model.index(3, TEXT_A))
    assert editor.model.rowCount() == len(original.pairs) + 1
    assert editor.model.pairs[3].level == original.pairs[2].level
    scores = profile.metrics["cosine"].anchor_scores
    assert text(editor, 0, cosine) == f"{scores[0]:.4g}"        # kept, marked stale
    assert editor.model.stale and editor.model.index(0, cosine).data(Qt.ItemDataRole.FontRole).italic()
    assert text(editor, 3, cosine) == PENDING                  # the new pair: not scored yet
    snapshots.append(editor.anchor_set())

    assert editor.model.setData(editor.model.index(3, TEXT_A), "a new first text")
    assert editor.model.setData(editor.model.index(3, TEXT_B), "a new second text")
    assert editor.model.setData(editor.model.index(3, LEVEL), "identical")
    snapshots.append(editor.anchor_set())

    editor.table.selectRow(3)
    editor.move_selected(-1)
    assert editor.model.pairs[2].text_a == "a new first text"
    assert editor.model.pairs[3] == original.pairs[2]
    snapshots.append(editor.anchor_set())

    editor.table.selectRow(0)
    editor.delete_selected()
    assert editor.model.pairs[0] == original.pairs[1]
    snapshots.append(editor.anchor_set())
    edited = editor.anchor_set()

    while editor.undo_stack.canUndo():
        editor.undo_action.trigger()
    assert ladder(editor.anchor_set()) == ladder(original)
    assert text(editor, 0, cosine) == f"{profile.metrics['cosine'].anchor_scores[0]:.4g}"
    assert not editor.model.stale
    assert editor.model.index(0, cosine).data(Qt.ItemDataRole.FontRole) is None
    while editor.undo_stack.canRedo():
        editor.redo_action.trigger()
    assert ladder(editor.anchor_set()) == ladder(edited)
    assert len({ladder(s) for s in snapshots}) == len(snapshots)    # every step changed something


def test_level_cells_are_edited_with_a_combo_of_the_levels(qtbot, state, profile):
    editor = make_editor(qtbot, state)
    index = editor.model.index(0, LEVEL)
    delegate = editor.table.itemDelegateForColumn(LEVEL)
    combo = delegate.createEditor(editor.table.viewport(), QStyleOptionViewItem(), index)
    assert isinstance(combo, QComboBox)
    assert [combo.itemText(i) for i in range(combo.count())] == [lv.label for lv in profile.anchors.levels]
    delegate.setEditorData(combo, index)
    assert combo.currentData() == profile.anchors.pairs[0].level
    combo.setCurrentIndex(combo.findData("identical"))
    delegate.setModelData(combo, editor.model, index)
    assert editor.model.pairs[0].level == "identical"
    assert editor.undo_stack.count() == 1
    combo.deleteLater()


def test_import_csv_and_export_json_and_csv_round_trip(qtbot, state, tmp_path):
    editor = make_editor(qtbot, state)
    source = tmp_path / "mine.csv"
    source.write_text("level,text_a,text_b,target\n"
                      "same,A cat sleeps.,A cat is sleeping.,0.9\n"
                      "same,I like tea.,I enjoy tea.,0.9\n"
                      "other,A cat sleeps.,Stocks fell today.,0.1\n", encoding="utf-8")
    assert editor.import_file(source)
    imported = editor.anchor_set()
    assert ladder(imported) == ladder(load_anchors(source))
    assert editor.model.rowCount() == 3
    assert text(editor, 0, column(editor, "cosine")) == PENDING     # texts the profile never scored

    exported = tmp_path / "out.json"
    assert editor.export_file(exported)
    assert json.loads(exported.read_text())["format"] == "calibsim-anchors"
    assert ladder(load_anchors(exported)) == ladder(imported)
    as_csv = tmp_path / "out.csv"
    assert editor.export_file(as_csv)
    assert as_csv.read_text().splitlines()[0] == "level,text_a,text_b,target"
    assert ladder(load_anchors(as_csv)) == ladder(imported)

    editor.undo_action.trigger()                              # the import is one undo step
    assert ladder(editor.anchor_set()) != ladder(imported)


def test_a_broken_import_shows_why_and_keeps_the_ladder(qtbot, state, tmp_path):
    editor = make_editor(qtbot, state)
    before = editor.anchor_set()
    bad = tmp_path / "bad.csv"
    bad.write_text("level,text_a\nx,y\n", encoding="utf-8")
    assert not editor.import_file(bad)
    assert editor.message.isVisibleTo(editor)
    assert "missing the column text_b." in editor.message.text()
    assert editor.anchor_set() == before
    assert editor.undo_stack.count() == 0


def test_reset_to_builtin_is_undoable(qtbot, state, tmp_path):
    editor = make_editor(qtbot, state)
    editor.table.selectRow(0)
    editor.delete_selected()
    editor.reset_to_builtin()
    assert ladder(editor.anchor_set()) == ladder(builtin_anchors())
    editor.undo_action.trigger()
    assert len(editor.anchor_set().pairs) == len(builtin_anchors().pairs) - 1


def test_apply_emits_a_valid_ladder_and_refuses_an_invalid_one(qtbot, state):
    editor = make_editor(qtbot, state)
    editor.table.selectRow(0)
    editor.delete_selected()
    with qtbot.waitSignal(editor.anchors_applied, timeout=120_000) as blocker:
        editor.apply_button.click()
    applied = blocker.args[0]
    assert isinstance(applied, AnchorSet)
    assert ladder(applied) == ladder(editor.anchor_set())
    assert ladder(AnchorSet.from_dict(applied.to_dict())) == ladder(applied)

    # The main window scores the applied ladder and sets a new profile: scores show again.
    state.set_profile(with_anchors(state.profile, state.embedder, applied), "edited")
    assert text(editor, 0, column(editor, "cosine")) != PENDING
    assert editor.undo_stack.canUndo()                           # same ladder: history kept

    editor.table.selectRow(0)
    editor.add_pair()                                            # empty texts: not valid
    with qtbot.assertNotEmitted(editor.anchors_applied):
        assert editor.apply() is None
    assert "has an empty text" in editor.message.text()
    assert "[" not in editor.message.text() and "'" not in editor.message.text()   # no Python reprs


def test_a_level_target_outside_0_1_is_refused_with_a_message(qtbot, state):
    editor = make_editor(qtbot, state)
    levels = editor.model.levels
    editor.level_name.setText("near_duplicate")
    editor.level_target.setText("1.5")
    assert not editor.add_level()
    assert "outside 0..1" in editor.level_message.text()               # beside the level's fields
    editor.level_target.setText("high")
    assert not editor.add_level()
    assert "must be a number" in editor.level_message.text()
    assert editor.model.levels == levels

    editor.level_target.setText("0.95")
    assert editor.add_level()
    assert not editor.level_message.isVisibleTo(editor)
    names = [lv.name for lv in editor.model.levels]
    assert names[-2:] == ["near_duplicate", "identical"]            # ordered by target
    assert editor.levels_model.rowCount() == len(levels) + 1
    editor.undo_action.trigger()
    assert editor.model.levels == levels


def test_a_level_can_be_deleted_with_its_pairs_and_undone(qtbot, state):
    editor = make_editor(qtbot, state)
    before = ladder(editor.anchor_set())
    doomed = editor.model.levels[1]
    editor.levels_table.setCurrentIndex(editor.levels_model.index(1, 0))
    assert editor.delete_level()
    assert doomed not in editor.model.levels
    assert all(p.level != doomed.name for p in editor.model.pairs)
    editor.undo_action.trigger()
    assert ladder(editor.anchor_set()) == before


def test_levels_with_no_pair_or_one_pair_are_refused_beside_the_levels(qtbot, state):
    editor = make_editor(qtbot, state)
    editor.level_name.setText("near_duplicate")
    editor.level_target.setText("0.95")
    assert editor.add_level()                                        # a level without pairs yet
    with qtbot.assertNotEmitted(editor.anchors_applied):
        assert editor.apply() is None
    assert "“near_duplicate” has fewer than 2 pairs" in editor.level_message.text()
    editor.table.selectRow(0)
    editor.add_pair()
    row = editor.table.currentIndex().row()
    for col, value in ((TEXT_A, "a cat sat"), (TEXT_B, "a cat sat down"), (LEVEL, "near_duplicate")):
        assert editor.model.setData(editor.model.index(row, col), value)
    assert editor.apply() is None                                    # one pair: still too few
    assert "fewer than 2 pairs" in editor.level_message.text()


def test_warns_when_the_ladder_is_not_monotone_for_the_current_metric(qtbot, state):
    editor = make_editor(qtbot, state)
    assert editor.warning.isVisibleTo(editor)
    assert "not monotone for cosine" in editor.warning.text()
    assert "equivalent scores below mostly_equivalent" in editor.warning.text()
    state.set_view(metric="manhattan")
    assert "roughly_equivalent scores below not_equivalent_shared_details" in editor.warning.text()
    editor.table.selectRow(0)
    editor.delete_selected()                                          # an unapplied edit

    monotone = AnchorSet.from_dict({"levels": [{"name": "same", "target": 1.0},
                                               {"name": "other", "target": 0.0}],
                                    "pairs": [{"level": "same", "text_a": "a cat", "text_b": "a cat"},
                                              {"level": "other", "text_a": "a cat", "text_b": "stocks fell"}]})
    state.set_profile(build_profile(state.embedder, None, ProfileSettings(anchors=monotone)), "monotone")
    assert not editor.warning.isVisibleTo(editor)
    assert ladder(editor.anchor_set()) == ladder(monotone)            # a new ladder arrived
    assert not editor.undo_stack.canUndo()


def test_keyboard_shortcuts_undo_redo_and_apply(qtbot, state):
    editor = make_editor(qtbot, state)
    editor.show()
    with qtbot.waitActive(editor, timeout=120_000):
        editor.activateWindow()
    editor.table.setFocus()
    editor.table.selectRow(0)
    original = editor.anchor_set()
    qtbot.keyClick(editor.table, Qt.Key.Key_Delete)
    assert len(editor.anchor_set().pairs) == len(original.pairs) - 1
    qtbot.keyClick(editor.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert ladder(editor.anchor_set()) == ladder(original)
    qtbot.keyClick(editor.table, Qt.Key.Key_Z,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert len(editor.anchor_set().pairs) == len(original.pairs) - 1
    with qtbot.waitSignal(editor.anchors_applied, timeout=120_000):
        qtbot.keyClick(editor.table, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)


def test_calibrated_map_shows_the_curve_its_ends_and_every_anchor_pair(qtbot, state, profile):
    editor = make_editor(qtbot, state)
    chart, ref = editor.calibrated_map, profile.metrics["cosine"]
    curve = ref.calibrators["calibrated"]
    x, y = chart.points.getData()
    np.testing.assert_allclose(x, ref.anchor_scores)                    # one point per anchor pair
    np.testing.assert_allclose(y, [profile.anchors.targets[p.level] for p in profile.anchors.pairs])
    cx, cy = chart.curve.getData()
    assert cx[0] < min(x.min(), curve.unrelated_) and cx[-1] > max(x.max(), curve.identical_)
    assert np.interp(curve.unrelated_, cx, cy) == pytest.approx(0, abs=0.01)
    assert np.interp(curve.identical_, cx, cy) == pytest.approx(1, abs=0.01)
    lo, hi = chart.lo.getData()[1], chart.hi.getData()[1]
    middle = (cx > curve.unrelated_) & (cx < curve.identical_)
    assert np.all(hi[middle] > lo[middle])                              # a band, not a line
    ends = chart.ends.getData()
    np.testing.assert_allclose(ends[0], [curve.unrelated_, curve.identical_])
    np.testing.assert_allclose(ends[1], [0, 1], atol=0.01)
    legend = [label.text for _, label in chart.legend.items]
    assert legend[:2] == ["calibrated map", "reference uncertainty (95 %)"]          # no human band here
    levels = [lv.label for lv in profile.anchors.levels]
    assert len(legend) == 2 + len(levels)
    assert all(level.startswith(entry.rstrip("…")) for entry, level in zip(legend[2:], levels))


def test_calibrated_map_follows_the_metric_and_reads_values_on_hover(qtbot, state, profile):
    editor = make_editor(qtbot, state)
    chart = editor.calibrated_map
    state.set_view(metric="euclidean")
    assert chart.metric_combo.currentData() == "euclidean"
    x, _ = chart.points.getData()
    np.testing.assert_allclose(x, profile.metrics["euclidean"].anchor_scores)    # negated distances
    assert x.max() <= 0 and "−euclidean" in chart.plot.getAxis("bottom").labelText
    chart.metric_combo.setCurrentIndex(chart.metric_combo.findData("angular"))
    assert state.metric == "angular"
    np.testing.assert_allclose(chart.points.getData()[0], profile.metrics["angular"].anchor_scores)

    editor.resize(1024, 700)
    editor.show()
    qtbot.waitExposed(editor, timeout=120_000)
    x, y = chart.points.getData()
    lowest = int(np.argmin(x))
    where = chart.canvas.mapFromScene(chart.plot.vb.mapViewToScene(QPointF(x[lowest], y[lowest])))
    qtbot.mouseMove(chart.canvas.viewport(), where)
    assert chart.hover.text().startswith(f"anchor pair {lowest + 1} (")
    assert f"angular {x[lowest]:.4g} → calibrated" in chart.hover.text()
    score = float(np.median(x))
    text = chart.hover_text(score, 1.1)                                   # above every pair
    value, lo, hi = map(float, re.fullmatch(
        r"angular \S+ → calibrated (\S+) \(reference uncertainty \(95 %\): (\S+)–(\S+)\)", text).groups())
    curve = profile.metrics["angular"].calibrators["calibrated"]
    assert value == pytest.approx(curve.transform([score])[0], abs=2e-3)
    assert lo <= value <= hi


def test_levels_are_edited_in_place_through_undo(qtbot, state, profile):
    editor = make_editor(qtbot, state)
    levels, pairs = editor.model.levels, editor.model.pairs[:]
    model = editor.levels_model
    assert model.flags(model.index(0, 0)) & Qt.ItemFlag.ItemIsEditable
    assert not model.flags(model.index(0, 3)) & Qt.ItemFlag.ItemIsEditable
    first = levels[0].name
    assert model.setData(model.index(0, 0), "unrelated")              # rename: pairs follow
    assert editor.model.levels[0].name == "unrelated"
    assert [p.level for p in editor.model.pairs].count("unrelated") == [p.level for p in pairs].count(first)
    assert model.setData(model.index(0, 1), "0 - nothing in common")
    assert editor.model.levels[0].label == "0 - nothing in common"
    assert model.setData(model.index(0, 2), "0,05")                    # a decimal comma is fine
    assert editor.model.levels[0].target == 0.05
    assert model.index(0, 2).data() == "0.05"

    assert not model.setData(model.index(0, 2), "high")
    assert editor.level_message.text() == ("The target of level “unrelated” must be a number between 0 "
                                            "(unrelated) and 1 (identical), not “high”.")
    assert not model.setData(model.index(0, 0), levels[1].name)
    assert f"already called “{levels[1].name}”" in editor.level_message.text()
    assert model.setData(model.index(1, 2), "0.99")                    # re-sorted by target
    assert editor.model.levels[-2].name == levels[1].name
    assert not editor.level_message.isVisibleTo(editor)

    while editor.undo_stack.canUndo():
        editor.undo_action.trigger()
    assert editor.model.levels == levels and editor.model.pairs == pairs
    assert text(editor, 0, column(editor, "cosine")) == f"{profile.metrics['cosine'].anchor_scores[0]:.4g}"


def test_edits_keep_scores_stale_and_undo_restores_order_and_scores(qtbot, state, profile):
    editor = make_editor(qtbot, state)
    cosine, scores = column(editor, "cosine"), profile.metrics["cosine"].anchor_scores
    editor.table.selectRow(0)
    editor.move_selected(1)                                            # order changed: scores follow
    assert text(editor, 0, cosine) == f"{scores[1]:.4g}" and text(editor, 1, cosine) == f"{scores[0]:.4g}"
    assert editor.model.index(0, cosine).data(Qt.ItemDataRole.ForegroundRole) is not None
    assert "Apply" in editor.model.index(0, cosine).data(Qt.ItemDataRole.ToolTipRole)
    assert "grey scores are from before the edits" in editor.status.text()
    levels = editor.levels_model
    median_col = 4 + editor.model.metrics.index("cosine")
    assert levels.index(0, median_col).data() not in ("", PENDING)     # medians stay visible
    assert levels.index(0, median_col).data(Qt.ItemDataRole.FontRole).italic()
    assert editor.model.setData(editor.model.index(0, TEXT_A), "a text never scored")
    assert text(editor, 0, cosine) == PENDING
    editor.undo_action.trigger()
    editor.undo_action.trigger()
    assert [text(editor, r, cosine) for r in range(3)] == [f"{s:.4g}" for s in scores[:3]]
    assert not editor.model.stale and "scores from profile" in editor.status.text()


def test_the_calibrated_map_previews_an_unapplied_edit(qtbot, state, profile):
    editor = make_editor(qtbot, state)
    chart = editor.calibrated_map
    assert chart.preview_points.getData()[0].size == 0
    model = editor.levels_model
    top = len(editor.model.levels) - 2                                 # the level below identical
    name = editor.model.levels[top].name
    assert model.setData(model.index(top, 2), "0.6")                   # lower its target
    x, y = chart.preview_points.getData()
    scores = profile.metrics["cosine"].anchor_scores
    mine = [i for i, p in enumerate(profile.anchors.pairs) if p.level == name]
    assert len(x) == len(scores)
    np.testing.assert_allclose(sorted(x[y == 0.6]), sorted(scores[mine]))
    legend = [label.text for _, label in chart.legend.items]
    assert "edited pairs (not applied)" in legend

    editor.resize(1100, 750)
    editor.show()
    qtbot.waitExposed(editor, timeout=120_000)
    editor.grab().save("/tmp/anchors_edit.png")
    editor.undo_action.trigger()                                       # back to the applied ladder
    assert chart.preview_points.getData()[0].size == 0
    assert "edited pairs (not applied)" not in [label.text for _, label in chart.legend.items]


def test_restoring_damaged_edits_says_so_in_plain_words(qtbot, state):
    editor = make_editor(qtbot, state)
    assert not editor.restore_edits({"name": "x", "levels": [{"label": "no name"}], "pairs": []})
    assert "could not be restored (the saved record is damaged)" in editor.message.text()
    assert "KeyError" not in editor.message.text()


def test_a_pair_filed_two_levels_from_where_it_scores_is_refused_beside_the_levels(qtbot, state):
    editor = make_editor(qtbot, state)
    names = [lv.name for lv in editor.model.levels]
    row = next(r for r, p in enumerate(editor.model.pairs) if p.level == "identical")
    cosine = editor.model.raw_score("cosine", row)
    assert editor.model.setData(editor.model.index(row, LEVEL), "not_equivalent_same_topic")
    with qtbot.assertNotEmitted(editor.anchors_applied):
        assert editor.apply() is None
    message = editor.level_message.text()
    assert message.startswith(f"Pair {row + 1} (") and "filed under “not_equivalent_same_topic”" in message
    assert f"scores {cosine:.4g} (cosine), past the median of “" in message
    passed = re.search("past the median of “(.+?)”", message).group(1)
    assert names.index(passed) >= names.index("not_equivalent_same_topic") + 2
    assert editor.level_message.isVisibleTo(editor)
    assert editor.table.currentIndex().row() == row                  # the pair is selected
    assert editor.model.setData(editor.model.index(row, LEVEL), "equivalent")    # one level off: fine
    with qtbot.waitSignal(editor.anchors_applied, timeout=120_000):
        editor.apply()
    assert not editor.level_message.isVisibleTo(editor)
