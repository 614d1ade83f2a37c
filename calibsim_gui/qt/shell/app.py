"""The desktop application's entry point."""

from __future__ import annotations

import sys

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from calibsim_gui.core.doctor import window_libraries_problem
from calibsim_gui.core.resources import resource_path


def application_icon() -> QIcon:
    """calibsim's icon (resources/icons), for the windows and the task bar."""
    return QIcon(str(resource_path("icons", "calibsim.png")))


def run_app(argv=None, *, screenshot_dir: str | None = None, files=()) -> int:
    """Open the main window (or, with `screenshot_dir`, run the screenshot tour) and run Qt.

    `files` (``calibsim pairs.csv``, or a file manager's "Open with") are opened once the
    window is up: a project is restored, a pairs table or documents are read and scored. When
    Qt's platform plugin lacks system libraries, says which (as `calibsim doctor`) and returns 1
    before Qt would abort with its generic hint.
    """
    problem = None if QApplication.instance() is not None else window_libraries_problem()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv[:1])
    app.setApplicationName("calibsim")
    app.setOrganizationName("calibsim")
    app.setWindowIcon(application_icon())
    app.setDesktopFileName("calibsim")           # ties the window to calibsim.desktop on Linux
    from calibsim_gui.qt.shell.main_window import MainWindow

    window = MainWindow(autosave=screenshot_dir is None)      # a demo tour leaves no session behind
    tour = None
    if screenshot_dir is not None:
        from calibsim_gui.qt.shell.screenshots import ScreenshotTour

        tour = ScreenshotTour(window, screenshot_dir, app=app)
    elif files:
        from PySide6.QtCore import QTimer

        opener = QTimer(window, singleShot=True, interval=0)
        opener.timeout.connect(lambda: window.open_files(list(files)))
        opener.start()
    window.show()                 # on a screen smaller than the window, it is fitted to the screen
    if tour is not None:
        window.resize(1180, 760)  # the screenshots' size, whatever the screen
    code = app.exec()
    return tour.exit_code if tour is not None else code
