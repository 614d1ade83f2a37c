"""The app's shared state: the session model (`session.SessionModel`) with a Qt signal for every change.

Widgets read from `AppState` and subscribe to its signals; they change it only through its
setters, which are the session model's. Heavy work (loading, encoding, building) happens in
`TaskRunner`s, never here.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from calibsim_gui.session.model import EVENTS, FIELDS, SessionModel

# What people read for a calibrated form; the ids ("anchor_minmax") stay the data of combos
# and the column names of tables and files.
FORM_LABELS = {
    "raw": "raw score", "calibrated": "calibrated (0-1)",
    "calibrated_lo": "reference uncertainty, low", "calibrated_hi": "reference uncertainty, high",
    "calibrated_band80_lo": "80 % of people, low", "calibrated_band80_hi": "80 % of people, high",
    "calibrated_band95_lo": "95 % of people, low", "calibrated_band95_hi": "95 % of people, high",
    "anchor_minmax": "min-max over anchors",
    "bg_minmax": "min-max over background", "bg_percentile": "background percentile",
    "bg_zscore": "background z-score", "bg_surprise": "background surprise",
    "query_zscore": "z-score per query", "human": "expected human similarity",
}


def form_label(form: str) -> str:
    """'bg_percentile' -> 'background percentile' (an unknown id is shown as it is)."""
    return FORM_LABELS.get(form, form.replace("_", " "))


def _field(name: str) -> property:
    def get(self):
        return getattr(self.session_model, name)

    def put(self, value):
        setattr(self.session_model, name, value)

    return property(get, put, doc=f"The session model's `{name}`.")


class AppState(QObject):
    """The session model (`session_model`) as the window sees it: its state as
    attributes, its methods (``set_model``, ``set_profile``, ``select_row``, ...), and a signal
    emitted on each of its events (see `SessionModel` for what each holds and says)."""

    model_changed = Signal()
    profile_changed = Signal()
    input_changed = Signal()
    results_changed = Signal()
    view_changed = Signal()              # metric or form changed
    selection_changed = Signal()
    geometry_changed = Signal()
    human_changed = Signal()
    labels_changed = Signal()            # human-score column or scale chosen
    range_changed = Signal()             # a score range brushed (or cleared)
    row_columns_changed = Signal()       # columns added to the results by another view
    shown_rows_changed = Signal()        # the rows every filter leaves changed
    filters_cleared = Signal()           # every view drops its filters (`clear_filters`)
    scores_stale = Signal(str)           # the results were dropped: the input is to be scored again (why)

    def __init__(self, parent: QObject | None = None, session_model: SessionModel | None = None):
        super().__init__(parent)
        self.session_model = session_model or SessionModel()
        for name in EVENTS + ("scores_stale",):
            getattr(self.session_model, name).connect(getattr(self, name).emit)

    def __getattr__(self, name: str):
        """The session model's methods (``set_model``, ``forms``, ...)."""
        if name == "session_model":
            raise AttributeError(name)
        return getattr(self.session_model, name)


for _name in FIELDS:
    setattr(AppState, _name, _field(_name))
