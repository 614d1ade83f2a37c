"""The window's tabs: their names and titles, and the views built when a tab is first shown.

A plot's module imports pyqtgraph and a view builds its plots, which together cost more than the
rest of the window: so the views below wait until their tab is shown or asked for
(`MainWindow.view`, or the window's attribute of the same name), and the window opens first;
the modules of those an input opens are imported by the reading worker (`import_input_views`).
"""

from __future__ import annotations

# mnemonics are unique across tabs and menus (Alt+H is Help; Heatmap is Alt+E); the names are
# the tabs' objectName, which projects and the layout keep
TABS = (("welcome", "&Welcome"), ("model", "&Model"), ("anchors", "&Anchors"), ("background", "&Background"),
        ("results", "&Results"), ("distributions", "&Distributions"), ("agreement", "Agreeme&nt"),
        ("heatmap", "H&eatmap"), ("map", "Te&xt map"), ("space", "S&pace"), ("search", "Sear&ch"),
        ("compare", "C&ompare"))


class BuiltOnUse:
    """A window attribute naming a tab built on first use: reading it builds the tab."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, window, owner=None):
        return self if window is None else window.view(self.name)


QT_MODULES_OF_PLOTS = ("PySide6.QtOpenGL", "PySide6.QtOpenGLWidgets", "PySide6.QtSvg", "PySide6.QtTest")
"""The Qt modules pyqtgraph imports beyond the window's own (those it finds)."""


def import_qt_modules_of_plots() -> None:
    """Import `QT_MODULES_OF_PLOTS` (~5 ms) on the GUI thread, so that `import_input_views` in a
    worker loads no Qt library there: a Qt library's start-up code may use the application,
    which belongs to the GUI thread (a worker's pyqtgraph import ended once in a crash, #44)."""
    import importlib

    for name in QT_MODULES_OF_PLOTS:
        try:
            importlib.import_module(name)
        except ImportError:
            pass                  # left out of the desktop bundle (QtTest): pyqtgraph goes on without it


def import_input_views() -> None:
    """Import the modules of the views a read input opens (Results, Distributions; with them
    pyqtgraph, about half a second) and of the Compare tab that a comparison of its pairs opens:
    the session's reading worker calls it, so the window, which builds those views next, does not
    pause for the import (#29, #44)."""
    from calibsim_gui.qt.views import comparison_view  # noqa: F401
    from calibsim_gui.qt.views.distributions import distribution_plot  # noqa: F401
    from calibsim_gui.qt.views.results import results_view  # noqa: F401


def waiting_views(window) -> dict:
    """``{tab name: function building its view}`` for the tabs built when first shown."""
    return {"results": lambda: results(window), "distributions": lambda: distributions(window),
            "agreement": lambda: agreement(window), "heatmap": lambda: heatmap(window),
            "map": lambda: text_map(window), "space": lambda: space(window),
            "search": lambda: search(window), "compare": lambda: window.compare.build_view()}   # the flow is made after the tabs


def results(window):
    from calibsim_gui.qt.views.results.results_view import ResultsView

    return ResultsView(window.state)


def distributions(window):
    from calibsim_gui.qt.views.distributions.distribution_plot import DistributionPlot

    return DistributionPlot(window.state)


def agreement(window):
    from calibsim_gui.qt.views.agreement_view import AgreementView

    return AgreementView(window.state)


def heatmap(window):
    from calibsim_gui.qt.views.heatmap.heatmap_view import HeatmapView

    return HeatmapView(window.state)


def text_map(window):
    from calibsim_gui.qt.views.map.map_view import MapView

    view = MapView(window.state, cache=lambda: window.cache)
    window.watch_runners(view.runner, view.query_runner)
    return view


def space(window):
    from calibsim_gui.qt.views.space_view import SpaceView

    view = SpaceView(window.state)
    window.watch_runners(view.runner)
    view.geometry_chosen.connect(window.state.set_geometry)
    return view


def search(window):
    from calibsim_gui.qt.views.search_view import SearchView

    view = SearchView(window.state, cache=lambda: window.cache, memory_budget=window.preferences.memory_budget,
                      settings=window.settings, run_sources=window.state.run_sources)
    window.watch_runners(view.runner, view.export_runner)
    return view
