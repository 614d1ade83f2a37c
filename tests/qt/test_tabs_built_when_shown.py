"""The window opens first and builds a tab's view when the tab is first shown or asked for (#29):
what a user sees and does with the tabs is the same as when every view was built at start."""

import json
import os
import subprocess
import sys
import textwrap

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from tests.qt.test_layout import close, current, new_window

WAITING = ["results", "distributions", "agreement", "heatmap", "map", "space", "search", "compare"]


def test_the_window_opens_without_its_plots_and_pandas_and_builds_a_tab_when_it_is_opened(tmp_path):
    code = textwrap.dedent("""
        import json, os, sys
        from PySide6.QtWidgets import QApplication
        app = QApplication([])
        from calibsim_gui.qt.shell.main_window import MainWindow
        window = MainWindow(load_default_model=False, autosave=False)
        window.show()
        app.processEvents()
        loaded = lambda: sorted({"pandas", "pyqtgraph", "sklearn"} & {m.split(".")[0] for m in sys.modules})
        seen = {"at_start": loaded(), "waiting": sorted(window.panels.waiting)}
        window.tabs.setCurrentIndex(7)                                  # the Heatmap tab, clicked
        seen["opened"] = [type(window.tabs.currentWidget()).__name__, window.tabs.tabText(7)]
        seen["after"] = loaded()
        print(json.dumps(seen))
        os._exit(0)
    """)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path)}   # no saved layout
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["at_start"] == [] and seen["waiting"] == sorted(WAITING)
    assert seen["opened"] == ["HeatmapView", "H&eatmap"] and "pyqtgraph" in seen["after"]


def test_a_waiting_tab_is_built_once_in_its_place_when_shown_or_asked_for(qtbot):
    window = new_window(qtbot, load_default_model=False, autosave=False)
    built = []
    window.panels.built.connect(lambda view: built.append(view.objectName()))
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    page = window.tabs.widget(titles.index("Sear&ch"))
    assert type(page) is QWidget and page.objectName() == "search"          # an empty page until shown
    window.tabs.setCurrentIndex(titles.index("Sear&ch"))
    search = window.tabs.currentWidget()
    assert current(window) == "search" and search is window.search is window.view("search")
    assert window.tabs.indexOf(search) == titles.index("Sear&ch") and search.isVisible()
    assert window.view("agreement") is window.agreement and built == ["search", "agreement"]
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == titles          # same places
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=120_000)
    qtbot.keyClick(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)          # Ctrl+K: the map
    assert current(window) == "map" and window.map.query_edit.hasFocus() and built[-1] == "map"
    close(window)


def test_a_remembered_side_by_side_layout_builds_the_tabs_it_shows(qtbot):
    first = new_window(qtbot, load_default_model=False, autosave=False)
    first.panels.show_pair("distributions", "agreement")
    layout = first.panels.state()
    close(first)
    second = new_window(qtbot, load_default_model=False, autosave=False)
    second.panels.restore(json.loads(json.dumps(layout)))
    assert current(second) == "distributions" and second.panels.beside() == ["agreement"]
    assert second.panels.view("agreement", build=False) is second.agreement and second.agreement.isVisible()
    assert second.panels.view("heatmap", build=False) is None                      # not shown: still waiting
    close(second)


def test_the_anchor_editor_draws_its_calibrated_map_when_first_shown(qtbot):
    window = new_window(qtbot, load_default_model=False, autosave=False)
    editor = window.anchors
    assert not editor.map_slot.is_built()
    window.tabs.setCurrentWidget(editor)
    assert editor.map_slot.is_built() and editor.calibrated_map.isVisible()
    close(window)


def test_reading_an_input_imports_the_plot_library_off_the_gui_thread(tmp_path):
    """The Results and Distributions views an input opens need pyqtgraph (about half a second to
    import): the worker reading the file imports it, so the window never pauses for it (#29)."""
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sentence1,sentence2\na cat sits,a cat is sitting\n", encoding="utf-8")
    code = textwrap.dedent("""
        import json, os, sys, threading, time
        from PySide6.QtWidgets import QApplication
        importers = []

        class Watch:
            def find_spec(self, name, path=None, target=None):
                if name == "pyqtgraph":
                    importers.append(threading.current_thread().name)

        sys.meta_path.insert(0, Watch())
        app = QApplication([])
        from calibsim_gui.qt.shell.main_window import MainWindow
        window = MainWindow(load_default_model=False, autosave=False)
        window.show()
        window.open_inputs([sys.argv[1]])
        while window.state.input is None:
            app.processEvents()
            time.sleep(0.01)
        print(json.dumps({"importers": importers, "main": threading.main_thread().name,
                          "tab": window.tabs.currentWidget().objectName()}))
        os._exit(0)
    """)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path),
           "PYTHONFAULTHANDLER": "1"}                   # a crash prints its threads' stacks
    result = subprocess.run([sys.executable, "-c", code, str(pairs)], capture_output=True, text=True, timeout=300,
                            env=env, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["tab"] == "results", seen
    assert len(seen["importers"]) == 1 and seen["importers"] != [seen["main"]], seen
