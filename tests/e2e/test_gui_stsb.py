"""A new user's first minute, with the real built-in model: drop STS-B test, save, re-open."""

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from scipy.stats import spearmanr

from calibsim_gui.core.analysis.pairs import ScoredPairs
from calibsim_gui.qt.shell.main_window import MainWindow
from calibsim_gui.qt.widgets.workers import wait_for_workers
from tests.qt.conftest import REFERENCES_MS, WORKERS_END_MS

pytestmark = pytest.mark.slow


def open_window(qtbot):
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.state.profile is not None, timeout=REFERENCES_MS)
    return window


def test_drop_stsb_then_save_and_reopen_the_project(qtbot, stsb_test_path, tmp_path, shared_stsb_cache):
    window = open_window(qtbot)
    assert window.state.profile.has_background           # built-in reference, no set-up
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(stsb_test_path))])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.dropEvent(QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime,
                                    Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier))
    results = window.state.results
    assert isinstance(results, ScoredPairs) and len(results.frame) == 1379
    frame = results.frame
    rho = spearmanr(frame["cosine_raw"], frame["score"].astype(float)).statistic
    assert rho * 100 == pytest.approx(82.03, abs=0.3)
    assert window.results.model.rowCount() == 1379
    edges, counts = window.distributions.plot_data()["raw_user"]
    assert counts.sum() == 1379
    for suffix in (".html", ".pdf", ".xlsx", ".json", ".csv"):          # every export format
        out = tmp_path / f"stsb-report{suffix}"
        with qtbot.waitSignal(window.export_runner.finished, timeout=120_000):
            window.exports.start(path=str(out), metric="cosine", form="calibrated", figures=False,
                                 force=False)
        assert out.stat().st_size > 100_000, suffix
    exported = pd.read_excel(tmp_path / "stsb-report.xlsx", sheet_name="results")
    np.testing.assert_allclose(exported["cosine_calibrated"], frame["cosine_calibrated"], rtol=1e-12)
    project = tmp_path / "stsb.calibsim"
    window.write_project(str(project))
    window.close()
    assert wait_for_workers(WORKERS_END_MS)

    again = open_window(qtbot)
    with qtbot.waitSignal(again.results_shown, timeout=120_000):
        again.open_project(str(project))
    pd.testing.assert_frame_equal(again.state.results.frame.drop(columns=[]), frame)
    assert np.isfinite(again.state.results.frame["cosine_calibrated"]).all()
    again.close()
    assert wait_for_workers(WORKERS_END_MS)
