"""`calibsim --screenshot DIR`: run the app on the built-in demo and save every main view.

Also writes `timings.json` with the seconds from process start to the first window shown and
to results shown. The README's screenshots are made by it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from calibsim_gui import PROCESS_START
from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import ScoredPairs
from calibsim_gui.core.io.atomic import write_text_atomic
from calibsim_gui.core.resources import resource_path

TIMEOUT_S = 600
SEARCH_QUERY = "Will it rain a lot tomorrow?"    # the Search tab's typed query in the README's picture


class ScreenshotTour:
    """Drives a `MainWindow` through the demo: pairs first, then documents; exits when done."""

    def __init__(self, window, out_dir, *, app=None):
        self.window, self.out = window, Path(out_dir)
        window.panels.one_pane()               # each view alone, whatever layout was remembered
        self.app = app or QApplication.instance()
        self.out.mkdir(parents=True, exist_ok=True)
        self.timings: dict[str, float] = {}
        self.shown_timer = QTimer(window, singleShot=True, interval=0)   # first event-loop turn: the window is up
        self.shown_timer.timeout.connect(self._window_shown)
        self.shown_timer.start()
        self.exit_code = 1
        window.state.profile_changed.connect(self._maybe_open_pairs)
        window.results_shown.connect(self._on_results)
        self.give_up_timer = QTimer(window, singleShot=True, interval=TIMEOUT_S * 1000)
        self.give_up_timer.timeout.connect(self._give_up)
        self.give_up_timer.start()
        self._after_map = None                 # what to do once the Text map is drawn
        window.map.runner.finished.connect(self._map_ready)
        window.map.runner.failed.connect(self._map_ready)

    def _window_shown(self) -> None:
        self.timings["window_shown_s"] = round(time.perf_counter() - PROCESS_START, 3)
        welcome = getattr(self.window, "welcome", None)
        if welcome is not None:
            self._shoot(welcome, "first_run")          # what a first launch shows

    def _maybe_open_pairs(self) -> None:
        state = self.window.state
        if state.profile is not None and state.input is None:
            self.window.open_inputs([resource_path("demo", "pairs.csv")])

    def _shoot(self, widget, name: str) -> None:
        self.window.tabs.setCurrentWidget(widget)
        for _ in range(5):
            self.app.processEvents()
        self.window.grab().save(str(self.out / f"{name}.png"))

    def _on_results(self) -> None:
        results, w = self.window.state.results, self.window
        if isinstance(results, ScoredPairs) and "results_shown_s" not in self.timings:
            self.timings["results_shown_s"] = round(time.perf_counter() - PROCESS_START, 3)
            w.state.select_row(int(results.frame["cosine_calibrated"].idxmax()))
            for widget, name in ((w.models, "model_manager"), (w.anchors, "anchor_editor"),
                                 (w.background, "background_loader"), (w.results, "results_table"),
                                 (w.distributions, "distributions"), (w.agreement, "agreement")):
                self._shoot(widget, name)
            self._shoot_brushed(results)
            self._shoot_map("map", lambda: self._shoot_map_selection(lambda: self._shoot_search(
                lambda: self._shoot_compare(lambda: w.open_inputs([resource_path("demo", "documents.txt")],
                                                                  per_file=False)))))
        elif isinstance(results, DocumentMatrix):
            w.results.table.selectRow(0)              # the most similar pair, selected everywhere
            self._shoot(w.heatmap, "heatmap")
            self._shoot(w.results, "results_documents")
            self._shoot_map("map_documents", self._finish)

    def _finish(self) -> None:
        write_text_atomic(self.out / "timings.json", json.dumps(self.timings, indent=1))
        self.exit_code = 0
        self.window.close()
        self.app.exit(0)

    def _shoot_map(self, name: str, then) -> None:
        """Open the Text map (it computes in its worker); shoot it once drawn, then `then()`."""
        self._after_map = (name, then)
        view = self.window.map
        self.window.tabs.setCurrentWidget(view)
        if view.drawn():
            self._map_ready()

    def _map_ready(self, _result=None) -> None:
        if self._after_map is None:
            return
        (name, then), self._after_map = self._after_map, None
        view = self.window.map
        if view.text_map is not None:
            view.colour_combo.setCurrentText("cluster")   # the clusters, named by their typical words
            view.show_neighbours(0)                   # a clicked point's nearest texts, ringed
        self._shoot(view, name)
        then()

    def _shoot_map_selection(self, then) -> None:
        """A lasso around the left half of the Text map: the map rings the chosen texts, Results
        keeps their pairs and Distributions marks them; the choice is cleared before `then()`."""
        view = self.window.map
        if view.text_map is not None:
            coords = view.text_map.projection.coords
            (left, low), (right, high) = coords.min(axis=0), coords.max(axis=0)
            middle = (left + right) / 2
            view.choose_inside(np.array([[left, low], [middle, low], [middle, high], [left, high]]))
            self._shoot(view, "map_selected")
            self._shoot(self.window.distributions, "distributions_selected")
            view.choose([])
        then()

    def _shoot_search(self, then) -> None:
        """The Search tab with a typed query ranked against the demo pairs' texts, its best hit chosen."""
        w = self.window

        def done(_result=None) -> None:
            for signal in (w.search.runner.finished, w.search.runner.failed):
                signal.disconnect(done)
            w.search.table.selectRow(0)
            self._shoot(w.search, "search")
            then()

        w.search.runner.finished.connect(done)
        w.search.runner.failed.connect(done)
        self.window.tabs.setCurrentWidget(w.search)
        w.search.query_edit.setText(SEARCH_QUERY)
        w.search.start_search()

    def _shoot_compare(self, then) -> None:
        """The Compare tab with the pairs scored by a second model (the folder in
        CALIBSIM_SCREENSHOT_COMPARE, else the first other model listed); its empty state without one."""
        w = self.window
        current = w.state.model_info
        listed = [str(m.path) if m.source == "local" else m.name for m in w.models.table_model.models
                  if current is None or m.path != current.path]
        spec = os.environ.get("CALIBSIM_SCREENSHOT_COMPARE") or next(iter(listed), None)
        if spec is None:
            self._shoot(w.compare.view, "compare")
            then()
            return

        def done(_result=None) -> None:
            for signal in (w.compare_runner.finished, w.compare_runner.failed):
                signal.disconnect(done)
            self._shoot(w.compare.view, "compare")
            then()

        w.compare_runner.finished.connect(done)
        w.compare_runner.failed.connect(done)
        w.compare.compare_with(spec)

    def _shoot_brushed(self, results) -> None:
        """A range brushed on the calibrated histogram, and the table it filters."""
        w = self.window
        self.window.tabs.setCurrentWidget(w.distributions)
        w.distributions.plot_data()
        values = results.frame["cosine_calibrated"]
        w.distributions.brush(w.distributions.cal_panel, float(values.quantile(0.55)),
                              float(values.quantile(0.9)))
        self._shoot(w.distributions, "distributions_brushed")
        self._shoot(w.results, "results_filtered")
        size = w.size()
        w.resize(1024, 700)                       # a small laptop's screen: every tab and the status bar fit
        self._shoot(w.models, "small_screen")
        w.resize(size)
        w.state.set_score_range(None)

    def _give_up(self) -> None:
        print(f"calibsim --screenshot: no results after {TIMEOUT_S} s", flush=True)
        self.window.close()
        self.app.exit(1)
