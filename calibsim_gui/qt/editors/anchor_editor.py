"""Anchor editor: edit the anchor ladder with undo, see each pair's scores, apply it.

The table models and their undoable commands live in `anchor_models`.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from functools import partial
from pathlib import Path

from PySide6.QtCore import QEvent, QItemSelectionModel, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence, QUndoStack
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.errors import CalibsimError, InputError
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.io.atomic import atomic_path, write_text_atomic
from calibsim_gui.core.references.anchors import (
    AnchorLevel,
    AnchorPair,
    AnchorSet,
    builtin_anchors,
    load_anchors,
)
from calibsim_gui.qt.editors.anchor_models import (
    LEVEL,
    TEXT_A,
    TEXT_B,
    AnchorTableModel,
    LevelDelegate,
    LevelTableModel,
    format_score,
)
from calibsim_gui.qt.widgets.built_when_shown import BuiltWhenShown

TEXT_MIN_WIDTH = 220          # px: a text column narrower than this shows only "…"
MIN_LEVEL_PAIRS = 2            # a level's median needs at least two pairs (the built-in has 15 or more)


def calibrated_map_plot(state):
    """The Anchors tab's calibrated map (`calibrated_map_plot.CalibratedMapPlot`); pyqtgraph loads with it."""
    from calibsim_gui.qt.editors.calibrated_map_plot import CalibratedMapPlot

    return CalibratedMapPlot(state)


class AnchorEditor(QWidget):
    """Edits the anchor ladder; "Apply" hands a validated AnchorSet to the main window.

    Signals
    -------
    anchors_applied(AnchorSet)
        The user applied a valid edited ladder; the main window re-encodes it and sets a new
        profile, whose scores then show here.
    """

    anchors_applied = Signal(object)

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self._state = state
        self.undo_stack = QUndoStack(self)
        start = state.profile.anchors if state.profile is not None else builtin_anchors()
        self.model = AnchorTableModel(start, self.undo_stack, self)
        self.levels_model = LevelTableModel(self.model, self)

        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setItemDelegateForColumn(LEVEL, LevelDelegate(self.table))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                   | QAbstractItemView.EditTrigger.EditKeyPressed
                                   | QAbstractItemView.EditTrigger.AnyKeyPressed)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.model.modelReset.connect(self._fit_columns)
        self.table.viewport().installEventFilter(self)
        self.levels_table = QTableView()
        self.levels_table.setModel(self.levels_model)
        self.levels_table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                          | QAbstractItemView.EditTrigger.EditKeyPressed)
        self.levels_table.setToolTip("Double-click a level's name, label or target to edit it")
        self.levels_table.verticalHeader().hide()
        self.levels_table.verticalHeader().setDefaultSectionSize(22)
        self.levels_table.setWordWrap(False)
        self._levels_scroll = 0
        self.levels_model.modelAboutToBeReset.connect(self._keep_levels_scroll)
        self.levels_model.modelReset.connect(self._fit_level_columns)

        self.level_name = QLineEdit(placeholderText="name, e.g. near_duplicate")
        self.level_label = QLineEdit(placeholderText="label (optional)")
        self.level_target = QLineEdit(placeholderText="target 0..1")
        self.level_target.setMaximumWidth(110)
        self.level_target.returnPressed.connect(self.add_level)
        add_level = QPushButton("Add level")
        add_level.setToolTip("Add a level with this name and target (0 = unrelated, 1 = identical)")
        add_level.clicked.connect(self.add_level)
        self.delete_level_button = QPushButton("Delete level")
        self.delete_level_button.setToolTip("Delete the selected level and its pairs (Ctrl+Z undoes it)")
        self.delete_level_button.clicked.connect(self.delete_level)

        self.message = QLabel(wordWrap=True)
        self.level_message = QLabel(wordWrap=True)          # beside the level fields it is about
        for label in (self.message, self.level_message):
            label.setStyleSheet("color: #b00020;")
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.warning = QLabel(wordWrap=True)
        self.warning.setStyleSheet("background: #fff3cd; color: #5c4400; padding: 4px;"
                                   " border: 1px solid #e0c56e; border-radius: 3px;")
        self.status = QLabel()

        tools = QHBoxLayout()
        self._add_tool(tools, "Add pair", "Add a pair below the selected one", "Ctrl+N", self.add_pair)
        self._add_tool(tools, "Delete", "Delete the selected pairs", "Delete", self.delete_selected)
        self._add_tool(tools, "Move up", "Move the selected pairs up", "Alt+Up", self.move_up)
        self._add_tool(tools, "Move down", "Move the selected pairs down", "Alt+Down", self.move_down)
        tools.addSpacing(12)
        for action, key, name, tip in (
                (self.undo_stack.createUndoAction(self), "Ctrl+Z", "Undo", "Undo the last change"),
                (self.undo_stack.createRedoAction(self), "Ctrl+Shift+Z", "Redo", "Redo the change")):
            action.setShortcut(QKeySequence(key))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            self.addAction(action)
            button = QToolButton(text=name, toolTip=f"{tip} ({key})", enabled=action.isEnabled())
            button.clicked.connect(action.trigger)
            action.enabledChanged.connect(button.setEnabled)
            tools.addWidget(button)
            setattr(self, f"{name.lower()}_action", action)
        tools.addSpacing(12)
        self._add_tool(tools, "Import…", "Replace the ladder with one from a JSON or CSV file",
                       "Ctrl+I", self._choose_import)
        self._add_tool(tools, "Export…", "Save the ladder as JSON or CSV", "Ctrl+Shift+E",
                       self._choose_export)
        self._add_tool(tools, "Reset to built-in", "Replace the ladder with calibsim's built-in one",
                       "Ctrl+R", self.reset_to_builtin)
        tools.addStretch(1)
        self.apply_button = self._add_tool(tools, "Apply", "Score the edited ladder with the loaded "
                                           "model and use it", "Ctrl+Return", self.apply)

        names, buttons = QHBoxLayout(), QHBoxLayout()      # two rows: each field wide enough to read
        for row, widgets in ((names, (self.level_name, self.level_label)),
                             (buttons, (self.level_target, add_level, self.delete_level_button))):
            for widget in widgets:
                row.addWidget(widget)
        buttons.addStretch(1)
        levels_box = QGroupBox("Levels")
        levels_layout = QVBoxLayout(levels_box)
        levels_layout.addWidget(self.levels_table)
        levels_layout.addLayout(names)
        levels_layout.addLayout(buttons)
        levels_layout.addWidget(self.level_message)
        self.map_slot = BuiltWhenShown(partial(calibrated_map_plot, state))      # made once the tab is opened
        self.map_slot.built.connect(self._show_preview)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(levels_box)
        bottom.addWidget(self.map_slot)
        bottom.setChildrenCollapsible(False)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(bottom)
        for part in (splitter, bottom):
            part.setSizes([2000, 3000])             # proportions: the map gets 3/5 of both
        splitter.setChildrenCollapsible(False)

        layout = QVBoxLayout(self)
        layout.addLayout(tools)
        layout.addWidget(self.message)
        layout.addWidget(self.warning)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.status)

        self.model.ladder_changed.connect(self._update_status)
        self.model.ladder_changed.connect(self._update_preview)
        self.levels_model.problem.connect(self._show_level_message)
        state.profile_changed.connect(self._on_profile_changed)
        state.view_changed.connect(self._update_warning)
        state.view_changed.connect(self._update_preview)
        self._show_message("")
        self._show_level_message("")
        self._on_profile_changed()
        self._fit_columns()
        self._fit_level_columns()

    # ------------------------------------------------------------------ public

    def anchor_set(self) -> AnchorSet:
        """The current edited ladder (not validated; `apply` validates)."""
        return self.model.anchor_set()

    def apply(self) -> AnchorSet | None:
        """Validate the ladder and emit `anchors_applied`; an invalid ladder shows why."""
        anchors = self._validated()
        if anchors is not None and (self._thin_levels(anchors) or self._misfiled_pairs()):
            return None
        if anchors is not None:
            self._show_message("")
            self.anchors_applied.emit(anchors)
            self.status.setText(f"Applied {len(anchors.pairs)} pairs; scoring them…")
        return anchors

    def add_pair(self) -> None:
        current = self.table.currentIndex()
        row = current.row() + 1 if current.isValid() else len(self.model.pairs)
        level = (self.model.pairs[current.row()].level if current.isValid()
                 else self.model.levels[0].name)
        self.model.add_pair(row, AnchorPair(level, "", ""))
        index = self.model.index(row, TEXT_A)
        self.table.setCurrentIndex(index)
        self.table.edit(index)

    def delete_selected(self) -> None:
        self.model.remove_rows(self._selected_rows())

    def move_up(self) -> None:
        self.move_selected(-1)

    def move_down(self) -> None:
        self.move_selected(1)

    def move_selected(self, delta: int) -> None:
        rows = self.model.move_rows(self._selected_rows(), delta)
        selection = self.table.selectionModel()
        selection.clearSelection()
        for row in rows:
            selection.select(self.model.index(row, 0), QItemSelectionModel.SelectionFlag.Select
                             | QItemSelectionModel.SelectionFlag.Rows)
        if rows:
            selection.setCurrentIndex(self.model.index(rows[-1], self.table.currentIndex().column()),
                                      QItemSelectionModel.SelectionFlag.NoUpdate)

    def import_file(self, path) -> bool:
        try:
            anchors = load_anchors(path)
        except (CalibsimError, ValueError) as exc:
            self._show_message(f"Could not import the anchors: {exc}")
            return False
        self.model.set_ladder(anchors, f"import {Path(path).name}")
        self._show_message("")
        return True

    def export_file(self, path) -> bool:
        """Save the (validated) ladder as CSV (level,text_a,text_b,target) or else JSON."""
        anchors = self._validated()
        if anchors is None:
            return False
        path = Path(path)
        try:
            if path.suffix.lower() == ".csv":
                import pandas as pd

                targets = anchors.targets
                frame = pd.DataFrame([(p.level, p.text_a, p.text_b, targets[p.level])
                                      for p in anchors.pairs],
                                     columns=["level", "text_a", "text_b", "target"])
                with atomic_path(path) as tmp:
                    frame.to_csv(tmp, index=False)
            else:
                write_text_atomic(path, json.dumps(anchors.to_dict(), indent=2))
        except OSError as exc:
            self._show_message(f"Could not save {path}: {exc.strerror or exc}")
            return False
        self._show_message("")
        self.status.setText(f"Saved {len(anchors.pairs)} pairs to {path}")
        return True

    def reset_to_builtin(self) -> None:
        self.model.set_ladder(builtin_anchors(), "reset to built-in")

    def set_anchor_set(self, anchors: AnchorSet) -> None:
        """Show `anchors` (e.g. from a project) as one undoable step; Apply is still needed."""
        self.model.set_ladder(anchors, "open project anchors")

    def pending_edits(self) -> AnchorSet | None:
        """The edited ladder while it differs from the references in use (not applied yet)."""
        profile, edited = self._state.profile, self.anchor_set()
        if profile is None or (profile.anchors.levels, profile.anchors.pairs) == (edited.levels, edited.pairs):
            return None
        return edited

    def restore_edits(self, data) -> bool:
        """Show unapplied edits saved by `pending_edits().to_dict()` (e.g. in an autosave).

        They may be an unfinished ladder, so they are read without the checks of Apply; a
        damaged record is named and the ladder in use stays.
        """
        try:
            anchors = AnchorSet(
                str(data["name"]),
                tuple(AnchorLevel(str(lv["name"]), str(lv["label"]), float(lv["target"]))
                      for lv in data["levels"]),
                tuple(AnchorPair(str(p["level"]), str(p["text_a"]), str(p["text_b"])) for p in data["pairs"]))
        except (KeyError, TypeError, ValueError):
            self._show_message("The unapplied anchor edits of the last session could not be "
                               "restored (the saved record is damaged); the ladder in use is shown.")
            return False
        self.model.set_ladder(anchors, "restore unapplied edits")
        self._show_message("")
        return True

    def add_level(self) -> bool:
        """Add the level typed in the form; an invalid one shows why and changes nothing."""
        name = self.level_name.text().strip()
        if not name:
            self._show_level_message("Give the new level a name.")
            return False
        try:
            target = float(self.level_target.text().replace(",", "."))
        except ValueError:
            self._show_level_message(f"The target of level “{name}” must be a number between 0 and 1.")
            return False
        levels = [vars(lv) for lv in self.model.levels]
        levels.append({"name": name, "label": self.level_label.text().strip() or name,
                       "target": target})
        # Validate the levels alone: one placeholder pair per level stands in for the pairs.
        try:
            checked = AnchorSet.from_dict({"name": self.model.name, "levels": levels, "pairs": [
                {"level": lv["name"], "text_a": "a", "text_b": "b"} for lv in levels]})
        except InputError as exc:
            self._show_level_message(f"Cannot add the level “{name}”: {exc}")
            return False
        self.model.set_ladder(dataclasses.replace(self.anchor_set(), levels=checked.levels),
                              f"add level {name}")
        for field in (self.level_name, self.level_label, self.level_target):
            field.clear()
        self._show_level_message("")
        return True

    def delete_level(self) -> bool:
        """Delete the level selected in the Levels table, with its pairs (undoable)."""
        current = self.levels_table.currentIndex()
        if not current.isValid():
            self._show_level_message("Select a level in the Levels table to delete it.")
            return False
        refused = self.model.remove_level(current.row())
        self._show_level_message(refused or "")
        return refused is None

    # ------------------------------------------------------------------ internals

    def _add_tool(self, layout, text, tip, shortcut, slot) -> QToolButton:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(shortcut))
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        native = QKeySequence(shortcut).toString(QKeySequence.SequenceFormat.NativeText)
        action.setToolTip(f"{tip} ({native})")
        action.triggered.connect(slot)
        self.addAction(action)
        button = QToolButton()
        button.setDefaultAction(action)
        layout.addWidget(button)
        return button

    def _selected_rows(self) -> list[int]:
        rows = [index.row() for index in self.table.selectionModel().selectedRows()]
        current = self.table.currentIndex()
        return rows or ([current.row()] if current.isValid() else [])

    def _validated(self) -> AnchorSet | None:
        try:
            return AnchorSet.from_dict(self.anchor_set().to_dict())
        except InputError as exc:
            self._show_message(f"The ladder is not valid: {exc}")
            return None

    def _thin_levels(self, anchors: AnchorSet) -> bool:
        """Say so beside the levels when a level has too few pairs to be scored (True)."""
        counts = Counter(p.level for p in anchors.pairs)
        thin = [lv.name for lv in anchors.levels if counts[lv.name] < MIN_LEVEL_PAIRS]
        self._show_level_message(
            f"Level{'s' if len(thin) > 1 else ''} {', '.join(f'“{n}”' for n in thin)} "
            f"{'have' if len(thin) > 1 else 'has'} fewer than {MIN_LEVEL_PAIRS} pairs, too few for a "
            "median to stand for the level: add pairs, or delete the level." if thin else "")
        return bool(thin)

    def _misfiled_pairs(self) -> bool:
        """Say so beside the levels, and select the pair, when a pair the user filed scores past
        the median of a level two or more steps from its own in the current metric (True)."""
        metric = self._state.metric
        misfiled = self.model.misfiled(metric) if metric in self.model.metrics else []
        if not misfiled:
            return False
        row, level, median = misfiled[0]
        pair, sign = self.model.pairs[row], 1 if METRICS[metric].higher_is_similar else -1
        short = lambda text: text if len(text) <= 30 else text[:29] + "…"
        more = len(misfiled) - 1
        self._show_level_message(
            f"Pair {row + 1} (“{short(pair.text_a)}” / “{short(pair.text_b)}”) is filed under "
            f"“{pair.level}” but scores {format_score(sign * self.model.similarity_scores(metric)[row])} "
            f"({metric}), past the median of “{level}” ({format_score(sign * median)}), two or more levels "
            "away: move it to the level it resembles, or delete it"
            + (f" ({more} more pair{'s' if more > 1 else ''} like it)." if more else "."))
        self.table.selectRow(row)
        return True

    def _choose_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import anchors", "",
                                              "Anchor ladders (*.json *.csv *.tsv)")
        if path:
            self.import_file(path)

    def _choose_export(self) -> None:
        path, chosen = QFileDialog.getSaveFileName(self, "Export anchors", f"{self.model.name}.json",
                                                   "JSON (*.json);;CSV (*.csv)")
        if path:
            if not Path(path).suffix:
                path += ".csv" if chosen.startswith("CSV") else ".json"
            self.export_file(path)

    def _on_profile_changed(self) -> None:
        profile = self._state.profile
        current = self.anchor_set()
        if profile is not None and (profile.anchors.levels, profile.anchors.pairs) != (
                current.levels, current.pairs):
            # A different ladder arrived (e.g. a profile file): the undo history was another's.
            self.model.replace_ladder(profile.anchors)
            self.undo_stack.clear()
        columns = self.model.columnCount()
        self.model.set_profile(profile)
        if self.model.columnCount() != columns:
            self._fit_columns()
        self._update_warning()
        self._update_status()
        self._update_preview()

    def _update_warning(self) -> None:
        profile, metric = self._state.profile, self._state.metric
        ref = profile.metrics.get(metric) if profile is not None else None
        ladder = ref.calibrators.get("calibrated") if ref is not None else None
        violations = getattr(ladder, "violations_", [])
        self.warning.setText(
            f"⚠ The ladder is not monotone for {metric}: {'; '.join(violations)}. Those levels "
            "were pooled, so calibrated scores cannot tell them apart." if violations else "")
        self.warning.setVisible(bool(violations))

    def _update_status(self) -> None:
        pairs, levels = self.model.pairs, {p.level for p in self.model.pairs}
        text = f"{len(pairs)} pairs on {len(levels)} of {len(self.model.levels)} levels"
        if self._state.profile is None:
            text += " · no profile yet: load a model to score the anchors"
        elif self.model.scored:
            text += f" · scores from profile “{self._state.profile_label}”"
        else:
            text += (" · edited: grey scores are from before the edits, “…” marks new pairs;"
                     " Apply (Ctrl+Return) to score and use this ladder")
        self.status.setText(text)

    @property
    def calibrated_map(self):
        """The calibrated map (`calibrated_map_plot.CalibratedMapPlot`), made now if it was not shown yet."""
        return self.map_slot.content()

    def _update_preview(self) -> None:
        if self.map_slot.is_built():
            self._show_preview(self.calibrated_map)

    def _show_preview(self, chart) -> None:
        """Show the edited ladder's pairs (those with known scores) on the calibrated map."""
        metric = self._state.metric
        if not self.model.stale or metric not in self.model.metrics:
            chart.set_preview(None)
            return
        chart.set_preview(self.anchor_set(), self.model.similarity_scores(metric))

    def _fit_columns(self) -> None:
        header = self.table.horizontalHeader()
        # fixed widths: sizing to contents reads every cell on each model reset (~80 ms)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.resizeSection(LEVEL, 170)
        score_width = self.table.fontMetrics().horizontalAdvance("manhattan_") + 12
        for column in range(TEXT_B + 1, self.model.columnCount()):
            header.resizeSection(column, score_width)
        self._fit_text_columns()

    def _fit_text_columns(self) -> None:
        """The two texts share the width the other columns leave, but never get narrower than
        `TEXT_MIN_WIDTH` (on a small screen the score columns scroll instead)."""
        header = self.table.horizontalHeader()
        others = sum(header.sectionSize(c) for c in range(self.model.columnCount()) if c not in (TEXT_A, TEXT_B))
        width = max(TEXT_MIN_WIDTH, (self.table.viewport().width() - others) // 2)
        for column in (TEXT_A, TEXT_B):
            header.resizeSection(column, width)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_text_columns()
        return super().eventFilter(watched, event)

    def _keep_levels_scroll(self) -> None:
        self._levels_scroll = self.levels_table.horizontalScrollBar().value()

    def _fit_level_columns(self) -> None:
        """Columns fitted to their contents; an edit leaves the table scrolled where it was."""
        header = self.levels_table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)      # the label
        self.levels_table.horizontalScrollBar().setValue(self._levels_scroll)

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    def _show_level_message(self, text: str) -> None:
        self.level_message.setText(text)
        self.level_message.setVisible(bool(text))
