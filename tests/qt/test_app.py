from calibsim_gui.qt.app import MainWindow


def test_main_window_opens_offscreen_and_points_to_the_command_line(qtbot, tmp_path):
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert window.windowTitle().startswith("calibsim")
    assert "calibsim score" in window.centralWidget().text()
    assert window.grab().save(str(tmp_path / "main-window.png"))
