"""Tabs side by side: a second pane beside the main tabs, the pairs offered in View ▸ Side by side,
and the arrangement as plain JSON (for the settings, kept across restarts, and for projects).

The arrangement is ``{"current": <main tab's name>, "beside": [<names in the side pane>],
"sizes": [<main width>, <side width>]}``; names are the tab widgets' ``objectName``.

A tab may be built when it is first shown (or asked for by `view`): until then an empty page of
that name holds its place, and the window opens without paying for views nobody looked at.
"""

from __future__ import annotations

import json

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QSplitter, QTabWidget, QWidget

from calibsim_gui.core.analysis.project import layout_of

SETTINGS_KEY = "view/layout"
PANE_MIN_WIDTH = 420     # side by side, each pane may be this narrow (a 1024-pixel screen holds two)
# (stays in the main tabs, shown beside it): the views that make sense together
PAIRS = (("results", "map", "Te&xt map beside Results"),
         ("distributions", "agreement", "Agreeme&nt beside Distributions"))


class Panels(QObject):
    """The main `tabs` and a side pane in one splitter; a tab moves between them and back to its
    place. `changed` is emitted when the arrangement or the current tab changes.

    `waiting` maps a tab's name to the function that builds its view: that tab is an empty page
    until it is shown or asked for (`view`); then the view takes the page's place and `built`
    is emitted."""

    changed = Signal()
    built = Signal(QWidget)

    def __init__(self, parent, tabs: QTabWidget, waiting: dict | None = None):
        super().__init__(parent)
        self.tabs = tabs
        self.waiting = dict(waiting or {})
        self.home = [(tabs.widget(i), tabs.tabText(i)) for i in range(tabs.count())]   # their places
        self.side = QTabWidget(objectName="side")
        self.side.setDocumentMode(True)
        self.side.hide()
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(tabs)
        self.splitter.addWidget(self.side)
        self.pair_actions: list[QAction] = []
        for pane in (tabs, self.side):
            pane.currentChanged.connect(self.build_shown)         # first: then it is the shown tab
            pane.currentChanged.connect(self.changed)
        self.splitter.splitterMoved.connect(self.changed)

    # ------------------------------------------------------------------ moving tabs

    def widgets(self) -> list[QWidget]:
        """Every tab, in its place among the main tabs (a tab added later goes last)."""
        known = {id(w) for w, _ in self.home}
        self.home += [(self.tabs.widget(i), self.tabs.tabText(i)) for i in range(self.tabs.count())
                      if id(self.tabs.widget(i)) not in known]
        return [w for w, _ in self.home]

    def view(self, name: str, *, build: bool = True) -> QWidget | None:
        """The tab `name`, built now if it waits for its first showing (None if unknown, or
        not built yet when `build` is false)."""
        page = next((w for w in self.widgets() if name and w.objectName() == name), None)
        if name not in self.waiting:
            return page
        return self._build(name, page) if build else None

    def _build(self, name: str, page: QWidget) -> QWidget:
        """Put the view of the waiting tab `name` in its `page`'s place, wherever that is."""
        view = self.waiting.pop(name)()
        view.setObjectName(name)
        title = {w.objectName(): t for w, t in self.home}[name]
        for pane in (self.tabs, self.side):
            index = pane.indexOf(page)
            if index >= 0:
                pane.blockSignals(True)              # the same tab stays current: no change to tell
                pane.insertTab(index, view, title)
                if pane.currentIndex() == index + 1:
                    pane.setCurrentIndex(index)      # the view is shown, never the empty page
                pane.removeTab(index + 1)
                pane.blockSignals(False)
        self.home = [(view if w is page else w, t) for w, t in self.home]
        page.deleteLater()
        self.built.emit(view)
        return view

    def build_shown(self) -> None:
        """Build the tabs shown now: the current one of each pane (called when either changes)."""
        for pane in (self.tabs, self.side):
            page = pane.currentWidget()
            if page is not None and page.objectName() in self.waiting:
                self._build(page.objectName(), page)

    def beside(self) -> list[str]:
        return [self.side.widget(i).objectName() for i in range(self.side.count())]

    def show_beside(self, name: str) -> None:
        """Move the tab `name` into the side pane (shown at half the width when it opens)."""
        widget = self.view(name)
        index = self.tabs.indexOf(widget) if widget is not None else -1
        if index < 0 or self.tabs.count() == 1:
            return
        title = self.tabs.tabText(index)
        self.tabs.removeTab(index)
        self.side.setCurrentIndex(self.side.addTab(widget, title))
        self._fit_panes()
        if self.side.isHidden():
            self.side.show()
            half = max(self.splitter.width(), 2) // 2
            self.splitter.setSizes([half, half])
        self._update()

    def bring_back(self, name: str) -> None:
        """Put the tab `name` back in its place among the main tabs."""
        widget = self.view(name)
        index = self.side.indexOf(widget) if widget is not None else -1
        if index < 0:
            return
        self.side.removeTab(index)
        widgets = self.widgets()
        place = sum(1 for w in widgets[: widgets.index(widget)] if self.tabs.indexOf(w) >= 0)
        self.tabs.insertTab(place, widget, {w.objectName(): t for w, t in self.home}[name])
        self.side.setVisible(self.side.count() > 0)
        self._fit_panes()
        self._update()

    def one_pane(self) -> None:
        for name in self.beside():
            self.bring_back(name)

    def show_pair(self, main: str, partner: str, on: bool = True) -> None:
        """`partner` beside `main` (the current main tab), or back among the main tabs."""
        if not on:
            self.bring_back(partner)
            return
        self.bring_back(main)
        self.show_beside(partner)
        self.tabs.setCurrentWidget(self.view(main))

    def show_current_beside(self) -> None:
        self.show_beside(self.tabs.currentWidget().objectName())

    # ------------------------------------------------------------------ the menu

    def build_menu(self, menu) -> None:
        """View ▸ Side by side: the offered pairs (checked while shown), the current tab, one pane."""
        window = self.parent()
        sub = menu.addMenu("&Side by side")
        for main, partner, text in PAIRS:
            action = QAction(text, window, checkable=True)
            action.setStatusTip("Show the two views side by side; the arrangement is remembered")
            action.toggled.connect(lambda on, m=main, p=partner: self.show_pair(m, p, on))
            sub.addAction(action)
            self.pair_actions.append(action)
        sub.addSeparator()
        for text, slot in (("Show the current tab &beside", self.show_current_beside),
                           ("&One pane", self.one_pane)):
            action = QAction(text, window)
            action.triggered.connect(slot)
            sub.addAction(action)
        self._update()

    def _fit_panes(self) -> None:
        """Side by side, each pane may be narrower than its widest tab needs, so that the window
        still fits its screen (the splitter gives either pane more room); alone, the tabs' own."""
        for pane in (self.tabs, self.side):
            pane.setMinimumWidth(PANE_MIN_WIDTH if self.side.count() else 0)

    def _update(self) -> None:
        shown = set(self.beside())
        for action, (main, partner, _) in zip(self.pair_actions, PAIRS):
            action.blockSignals(True)
            action.setChecked(partner in shown and main not in shown)
            action.blockSignals(False)
        self.changed.emit()

    # ------------------------------------------------------------------ the arrangement

    def state(self) -> dict:
        """The arrangement as plain JSON (see the module's docstring)."""
        layout = {"current": self.tabs.currentWidget().objectName(), "beside": self.beside()}
        if self.side.count():
            layout["sizes"] = [int(n) for n in self.splitter.sizes()]
        return layout

    def restore(self, layout: dict) -> None:
        """Arrange the tabs as `layout` says (from `layout_of`: unknown names are skipped)."""
        self.one_pane()
        for name in layout.get("beside", []):
            self.show_beside(name)
        if self.side.count() and layout.get("sizes"):
            self.splitter.setSizes(layout["sizes"])
        current = self.view(layout.get("current", ""))
        if current is not None and self.tabs.indexOf(current) >= 0:
            self.tabs.setCurrentWidget(current)

    def remember(self, settings) -> None:
        settings.setValue(SETTINGS_KEY, json.dumps(self.state()))

    def restore_settings(self, settings) -> None:
        """The arrangement of the last session (a damaged setting is ignored)."""
        try:
            data = json.loads(str(settings.value(SETTINGS_KEY, "{}")))
        except ValueError:
            return
        self.restore(layout_of(data)[0])
