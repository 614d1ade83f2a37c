"""The app scores the input again on the session model's `scores_stale`, once per change (#41)."""

import pytest

from tests.qt.conftest import REFERENCES_MS, drop


@pytest.fixture
def scoring_runs(window, monkeypatch):
    """The scoring runs the window starts from now on (each a list entry)."""
    runs, start = [], window.score_runner.start
    monkeypatch.setattr(window.score_runner, "start", lambda *a, **k: (runs.append(a), start(*a, **k))[1])
    return runs


def edit_anchors(window):
    window.apply_anchors(window.anchors.anchor_set())


def other_geometry(window):
    window.state.set_geometry("whiten" if window.state.geometry != "whiten" else "none")


def no_human(window):
    window.state.set_human(None)


@pytest.mark.parametrize("change", [edit_anchors, other_geometry, no_human])
def test_one_change_that_affects_scores_scores_the_input_once(window, qtbot, pairs_csv, profile, scoring_runs,
                                                              change):
    window.state.set_profile(profile, "with a background")      # its geometry fixes can be applied
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    scoring_runs.clear()
    with qtbot.waitSignal(window.results_shown, timeout=REFERENCES_MS):
        change(window)
    assert len(scoring_runs) == 1
    assert window.state.results is not None and len(window.state.results.frame) == 30


@pytest.mark.parametrize("change", [edit_anchors, other_geometry, no_human])
def test_without_an_input_a_change_scores_nothing(window, qtbot, profile, scoring_runs, change):
    window.state.set_profile(profile, "with a background")
    change(window)
    qtbot.waitUntil(lambda: not window.profile_runner.running, timeout=REFERENCES_MS)
    assert scoring_runs == [] and window.state.results is None
