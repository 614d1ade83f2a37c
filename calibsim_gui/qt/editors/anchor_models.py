"""The anchor editor's table models: ladder pairs and levels, every edit an undoable command.

Views call `AnchorTableModel.setData` or the editing methods, which push commands onto a
QUndoStack; the commands call the model's underscore primitives, which emit the fine-grained Qt
model signals.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QUndoCommand, QUndoStack
from PySide6.QtWidgets import QComboBox, QStyledItemDelegate

from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.references.anchors import AnchorPair, AnchorSet

LEVEL, TEXT_A, TEXT_B = range(3)
PAIR_COLUMNS = ("Level", "Text A", "Text B")
_FIELDS = ("level", "text_a", "text_b")
PENDING = "…"
_PENDING_TIP = "A new pair: apply the ladder (Ctrl+Return) to score it."
_STALE_TIP = ("Score of this pair from the references in use. The ladder has edits that are not "
              "applied yet: Apply (Ctrl+Return) to recalibrate with them.")
_GREY = QBrush(QColor("#808080"))
_ITALIC = QFont()
_ITALIC.setItalic(True)
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

def format_score(value: float) -> str:
    """Four significant digits; float noise around 0 (a distance of 1e-09 for identical texts) is 0."""
    return f"{0.0 if abs(value) < 5e-5 else value:.4g}"


class _Command(QUndoCommand):
    def __init__(self, text, redo, undo):
        super().__init__(text)
        self._redo, self._undo = redo, undo

    def redo(self):
        self._redo()

    def undo(self):
        self._undo()


class AnchorTableModel(QAbstractTableModel):
    """The ladder being edited (levels + pairs) and the profile's raw scores of its pairs.

    Score columns (one per profile metric, in the metric's own orientation) show each pair's
    score from the profile, found by the pair's texts: while the ladder differs from the
    profile's (unapplied edits) the scores stay visible, grey and italic ("stale"); a pair the
    profile never scored shows "…". Undo and redo therefore bring back pairs, order and scores.
    """

    ladder_changed = Signal()

    def __init__(self, anchors: AnchorSet, undo_stack: QUndoStack, parent=None):
        super().__init__(parent)
        self.undo_stack = undo_stack
        self.name, self.levels, self.pairs = anchors.name, anchors.levels, list(anchors.pairs)
        self.metrics: list[str] = []
        self._profile_ladder = None
        self._raw: dict[str, np.ndarray] = {}
        self._similarity: dict[str, np.ndarray] = {}      # "higher = more similar" (for the map)
        self._score_row: dict[tuple[str, str], int] = {}
        self.scored = False

    # ------------------------------------------------------------------ reading

    def anchor_set(self) -> AnchorSet:
        """The edited ladder as it stands (not validated)."""
        return AnchorSet(self.name, self.levels, tuple(self.pairs))

    def profile_row(self, row: int) -> int | None:
        """The profile's anchor pair with the texts of pair `row` (either way round), or None."""
        pair = self.pairs[row]
        found = self._score_row.get((pair.text_a, pair.text_b))
        return self._score_row.get((pair.text_b, pair.text_a)) if found is None else found

    def raw_score(self, metric: str, row: int) -> float | None:
        """Pair `row`'s raw score (the metric's orientation) from the profile, None if unscored."""
        found = self.profile_row(row) if metric in self._raw else None
        return None if found is None else float(self._raw[metric][found])

    def similarity_scores(self, metric: str) -> np.ndarray:
        """Each pair's score "higher = more similar" (NaN for pairs the profile never scored)."""
        values = self._similarity.get(metric)
        rows = [self.profile_row(row) for row in range(len(self.pairs))]
        return np.array([np.nan if values is None or r is None else values[r] for r in rows], dtype=float)

    @property
    def stale(self) -> bool:
        """The ladder differs from the profile's: scores shown are from before the edits."""
        return bool(self.metrics) and not self.scored

    def level_medians(self) -> dict[str, dict[str, tuple[float, bool]]]:
        """Per level and metric: (median raw score of its scored pairs, every pair scored)."""
        if not self.metrics:
            return {}
        rows = [self.profile_row(row) for row in range(len(self.pairs))]
        medians = {}
        for lv in self.levels:
            mine = [r for p, r in zip(self.pairs, rows) if p.level == lv.name]
            known = [r for r in mine if r is not None]
            if known:
                medians[lv.name] = {m: (float(np.median(raw[known])), len(known) == len(mine))
                                    for m, raw in self._raw.items()}
        return medians

    def misfiled(self, metric: str) -> list[tuple[int, str, float]]:
        """Pairs filed by the user (not as the profile scored them) that score past the median of
        a level two or more steps from their own, in that level's direction, as (row, that
        level, its median), both "higher = more similar".

        Neighbouring levels overlap in any real model (in the built-in ladder, two neighbours'
        cosine medians differ by 0.02), so only a pair that skips a level is judged misfiled;
        pairs as the profile scored them are the model's, not the user's, and new pairs have no
        score yet: neither is judged.
        """
        as_scored = set(self._profile_ladder[1]) if self._profile_ladder is not None else set()
        scores = self.similarity_scores(metric)
        names = [lv.name for lv in sorted(self.levels, key=lambda lv: lv.target)]
        filed = np.array([p.level for p in self.pairs], dtype=object)
        medians = []
        for name in names:
            known = scores[(filed == name) & ~np.isnan(scores)]
            medians.append(float(np.median(known)) if known.size else np.nan)
        found = []
        for row, (pair, score) in enumerate(zip(self.pairs, scores)):
            if np.isnan(score) or pair in as_scored or pair.level not in names:
                continue
            own = names.index(pair.level)
            past = [j for j, median in enumerate(medians) if (j >= own + 2 and score > median)
                    or (j <= own - 2 and score < median)]       # NaN medians compare False
            if past:
                far = max(past, key=lambda j: abs(j - own))
                found.append((row, names[far], medians[far]))
        return found

    def set_profile(self, profile) -> None:
        """Show `profile`'s anchor scores (None: no scores)."""
        metrics = list(profile.metrics) if profile is not None else []
        reset = metrics != self.metrics
        if reset:
            self.beginResetModel()
        self.metrics = metrics
        self._profile_ladder = ((profile.anchors.levels, profile.anchors.pairs)
                                if profile is not None else None)
        self._similarity = {m: np.asarray(ref.anchor_scores, dtype=float)
                            for m, ref in (profile.metrics.items() if profile is not None else ())}
        self._raw = {m: s if METRICS[m].higher_is_similar else -s for m, s in self._similarity.items()}
        self._score_row = {}
        for i, pair in enumerate(profile.anchors.pairs if profile is not None else ()):
            self._score_row.setdefault((pair.text_a, pair.text_b), i)
        if reset:
            self.endResetModel()
        self._changed()

    # ------------------------------------------------------------------ Qt model

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.pairs)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(PAIR_COLUMNS) + len(self.metrics)

    def flags(self, index):
        flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        return flags | Qt.ItemFlag.ItemIsEditable if index.column() < len(PAIR_COLUMNS) else flags

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        row, column = index.row(), index.column()
        pair = self.pairs[row]
        if column < len(PAIR_COLUMNS):
            value = getattr(pair, _FIELDS[column])
            if column == LEVEL and role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                label = next((lv.label for lv in self.levels if lv.name == value), value)
                return label if role == Qt.ItemDataRole.DisplayRole else f"level {value}"
            if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
                return value
            if role == Qt.ItemDataRole.ToolTipRole and column != LEVEL:
                return value
            return None
        metric = self.metrics[column - len(PAIR_COLUMNS)]
        value = self.raw_score(metric, row)
        if role == Qt.ItemDataRole.DisplayRole:
            return PENDING if value is None else format_score(value)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT
        if role == Qt.ItemDataRole.ForegroundRole and (value is None or self.stale):
            return _GREY
        if role == Qt.ItemDataRole.FontRole and value is not None and self.stale:
            return _ITALIC
        if role == Qt.ItemDataRole.ToolTipRole and (value is None or self.stale):
            return _PENDING_TIP if value is None else _STALE_TIP
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return str(section + 1) if role == Qt.ItemDataRole.DisplayRole else None
        if section < len(PAIR_COLUMNS):
            return PAIR_COLUMNS[section] if role == Qt.ItemDataRole.DisplayRole else None
        metric = METRICS[self.metrics[section - len(PAIR_COLUMNS)]]
        if role == Qt.ItemDataRole.DisplayRole:
            return metric.name
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"raw {metric.name} of the pair ({metric.orientation})"
        return None

    def setData(self, index, value, role=Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or index.column() >= len(PAIR_COLUMNS):
            return False
        row, field = index.row(), _FIELDS[index.column()]
        old = self.pairs[row]
        new = dataclasses.replace(old, **{field: str(value)})
        if new == old:
            return False
        self.undo_stack.push(_Command(f"edit {PAIR_COLUMNS[index.column()]} of pair {row + 1}",
                                      lambda: self._set_pair(row, new),
                                      lambda: self._set_pair(row, old)))
        return True

    # ------------------------------------------------------------------ undoable edits

    def add_pair(self, row: int, pair: AnchorPair) -> None:
        self.undo_stack.push(_Command("add pair", lambda: self._insert(row, pair),
                                      lambda: self._remove(row)))

    def remove_rows(self, rows) -> None:
        removed = [(row, self.pairs[row]) for row in sorted(set(rows))]
        if not removed:
            return

        def redo():
            for row, _ in reversed(removed):
                self._remove(row)

        def undo():
            for row, pair in removed:
                self._insert(row, pair)

        self.undo_stack.push(_Command(f"delete {len(removed)} pair(s)", redo, undo))

    def move_rows(self, rows, delta: int) -> list[int]:
        """Move `rows` one place up (-1) or down (+1); returns their new rows."""
        rows = sorted(set(rows), reverse=delta > 0)
        if not rows or not 0 <= rows[0] + delta < len(self.pairs):
            return rows
        self.undo_stack.beginMacro("move pairs")
        for row in rows:
            self.undo_stack.push(_Command("move pair", lambda r=row: self._move(r, r + delta),
                                          lambda r=row: self._move(r + delta, r)))
        self.undo_stack.endMacro()
        return [row + delta for row in rows]

    def set_ladder(self, anchors: AnchorSet, text: str) -> None:
        old = self.anchor_set()
        self.undo_stack.push(_Command(text, lambda: self.replace_ladder(anchors),
                                      lambda: self.replace_ladder(old)))

    def edit_level(self, row: int, field: str, value) -> str | None:
        """Change the `field` ("name", "label" or "target") of level `row` as one undoable step
        (a new name is carried to the level's pairs); returns why it was refused, or None."""
        old, text = self.levels[row], str(value).strip()
        pairs = tuple(self.pairs)
        if field == "name":
            if not text:
                return "A level needs a name."
            if text != old.name and text in {lv.name for lv in self.levels}:
                return f"Another level is already called “{text}”: give each level its own name."
            new = dataclasses.replace(old, name=text, label=text if old.label == old.name else old.label)
            pairs = tuple(dataclasses.replace(p, level=text) if p.level == old.name else p
                          for p in pairs)
        elif field == "label":
            new = dataclasses.replace(old, label=text or old.name)
        elif field == "target":
            try:
                target = float(text.replace(",", "."))
            except ValueError:
                target = float("nan")
            if not 0.0 <= target <= 1.0:
                return (f"The target of level “{old.name}” must be a number between 0 (unrelated) "
                        f"and 1 (identical), not “{text}”.")
            new = dataclasses.replace(old, target=target)
        else:
            raise ValueError(f"unknown level field {field}")
        if new == old:
            return None
        levels = sorted((new if i == row else lv for i, lv in enumerate(self.levels)),
                        key=lambda lv: lv.target)
        self.set_ladder(AnchorSet(self.name, tuple(levels), pairs),
                        f"edit the {field} of level {old.name}")
        return None

    def remove_level(self, row: int) -> str | None:
        """Delete level `row` and its pairs as one undoable step; returns why it was refused, or None."""
        if len(self.levels) <= 2:
            return "A ladder needs at least two levels: add another before deleting this one."
        gone = self.levels[row]
        pairs = tuple(p for p in self.pairs if p.level != gone.name)
        levels = tuple(lv for lv in self.levels if lv is not gone)
        self.set_ladder(AnchorSet(self.name, levels, pairs),
                        f"delete level {gone.name} and its {len(self.pairs) - len(pairs)} pair(s)")
        return None

    def replace_ladder(self, anchors: AnchorSet) -> None:
        """Show `anchors` without recording an undo step."""
        self.beginResetModel()
        self.name, self.levels, self.pairs = anchors.name, anchors.levels, list(anchors.pairs)
        self.endResetModel()
        self._changed()

    # ------------------------------------------------------------------ primitives

    def _set_pair(self, row, pair):
        self.pairs[row] = pair
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(PAIR_COLUMNS) - 1))
        self._changed()

    def _insert(self, row, pair):
        self.beginInsertRows(QModelIndex(), row, row)
        self.pairs.insert(row, pair)
        self.endInsertRows()
        self._changed()

    def _remove(self, row):
        self.beginRemoveRows(QModelIndex(), row, row)
        del self.pairs[row]
        self.endRemoveRows()
        self._changed()

    def _move(self, row, to):
        self.beginMoveRows(QModelIndex(), row, row, QModelIndex(), to + 1 if to > row else to)
        self.pairs.insert(to, self.pairs.pop(row))
        self.endMoveRows()
        self._changed()

    def _changed(self):
        self.scored = self._profile_ladder == (self.levels, tuple(self.pairs))
        if self.pairs and self.metrics:
            self.dataChanged.emit(self.index(0, len(PAIR_COLUMNS)),
                                  self.index(len(self.pairs) - 1, self.columnCount() - 1))
        self.ladder_changed.emit()


class LevelTableModel(QAbstractTableModel):
    """The ladder's levels: name, label, target (these three edited in place, undoably), pair
    count and median raw score per metric (grey while the ladder has unapplied edits).

    Signals: ``problem(str)``, why an edit was refused, in plain words.
    """

    COLUMNS = ("Name", "Label", "Target", "Pairs")
    _EDITABLE = ("name", "label", "target")
    problem = Signal(str)

    def __init__(self, pairs: AnchorTableModel, parent=None):
        super().__init__(parent)
        self._pairs = pairs
        self._rows: list[tuple] = []
        self._stale: list[bool] = []
        pairs.ladder_changed.connect(self._refresh)
        self._refresh()

    def _refresh(self):
        medians = self._pairs.level_medians()
        counts = Counter(p.level for p in self._pairs.pairs)
        rows, stale = [], []
        for level in self._pairs.levels:
            known = medians.get(level.name, {})
            scores = [(format_score(known[m][0]) if m in known
                       else PENDING if counts.get(level.name, 0) else "")
                      for m in self._pairs.metrics]
            rows.append((level.name, level.label, f"{level.target:.4g}",
                         str(counts.get(level.name, 0)), *scores))
            stale.append(self._pairs.stale or not all(v[1] for v in known.values()))
        self.beginResetModel()
        self._rows, self._stale = rows, stale
        self.endResetModel()

    def flags(self, index):
        flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        return flags | Qt.ItemFlag.ItemIsEditable if index.column() < 3 else flags

    def setData(self, index, value, role=Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or index.column() >= 3:
            return False
        problem = self._pairs.edit_level(index.row(), self._EDITABLE[index.column()], value)
        self.problem.emit(problem or "")
        return problem is None

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.COLUMNS) + len(self._pairs.metrics)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return self._rows[index.row()][index.column()]
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() >= 2:
            return _RIGHT
        scores = index.column() >= len(self.COLUMNS)
        if role == Qt.ItemDataRole.ForegroundRole and scores and self._stale[index.row()]:
            return _GREY
        if role == Qt.ItemDataRole.FontRole and scores and self._stale[index.row()]:
            return _ITALIC
        if role == Qt.ItemDataRole.ToolTipRole:
            if index.column() < 3:
                return "Double-click to edit (undo with Ctrl+Z)"
            if scores and self._stale[index.row()]:
                return "Median of the scores known before the unapplied edits: Apply to update"
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal or role not in (Qt.ItemDataRole.DisplayRole,
                                                                     Qt.ItemDataRole.ToolTipRole):
            return None
        if section < len(self.COLUMNS):
            return self.COLUMNS[section]
        metric = METRICS[self._pairs.metrics[section - len(self.COLUMNS)]]
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"median raw {metric.name} of the level's pairs ({metric.orientation})"
        return f"median {metric.name}"


class LevelDelegate(QStyledItemDelegate):
    """Edits a pair's level with a combo box of the ladder's levels."""

    def createEditor(self, parent, option, index):
        combo = QComboBox(parent)
        for level in index.model().levels:
            combo.addItem(level.label, level.name)
        combo.activated.connect(lambda: (self.commitData.emit(combo), self.closeEditor.emit(combo)))
        return combo

    def setEditorData(self, editor, index):
        editor.setCurrentIndex(max(0, editor.findData(index.data(Qt.ItemDataRole.EditRole))))

    def setModelData(self, editor, model, index):
        model.setData(index, editor.currentData(), Qt.ItemDataRole.EditRole)
