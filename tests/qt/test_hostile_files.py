"""Hostile and broken files given to the app: refused with a message, never a crash or a hang;
the references, the input and the session in use are kept, and a good file is scored after."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import threading

import pytest
from PySide6.QtCore import QThreadPool
from PySide6.QtWidgets import QMessageBox

import calibsim_gui.core.calibration.profile as core_profile
from calibsim_gui.core.references.anchors import AnchorPair, builtin_anchors
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.analysis.project import Project, ProjectInput
from calibsim_gui.qt.shell.main_window import MainWindow
from calibsim_gui.qt.widgets.workers import wait_for_workers
from tests.fakes import random_sentences
from tests.qt.conftest import REFERENCES_MS, WORKERS_END_MS, drop, shown_error


def _percentile_table_cut(data):
    calibrator = data["metrics"]["cosine"]["calibrators"]["bg_percentile"]
    calibrator["cum_"] = calibrator["cum_"][:2]


def _negative_spread(data):
    data["metrics"]["cosine"]["calibrators"]["bg_zscore"]["std_"] = -1.0


def _garbage_sketch(data):
    data["metrics"]["cosine"]["background"]["kll"] = base64.b64encode(bytes(range(256)) * 4).decode()


DAMAGE = {"percentile table cut short": _percentile_table_cut, "negative spread": _negative_spread,
          "garbage KLL bytes": _garbage_sketch}


def damaged_profile(window, path, damage: str):
    """A profile of the window's model with a background, written to `path` with `damage` done."""
    profile = build_profile(window.state.embedder, random_sentences(400, seed=8), ProfileSettings(n_pairs=300, seed=1))
    data = profile.to_dict()
    DAMAGE[damage](data)
    path.write_text(json.dumps(data))
    return path


def assert_refused_and_kept(window, qtbot, path, before):
    """The error names the file, the references in use stay, and so does where they came from."""
    message = shown_error(window, qtbot)
    assert str(path) in message and "Traceback" not in message
    qtbot.waitUntil(lambda: not window.profile_runner.running, timeout=REFERENCES_MS)
    assert window.state.profile is before and window.profile_path is None


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_profile_opened_on_the_background_tab_is_refused_and_scoring_still_works(
        window, qtbot, tmp_path, good_results, damage):
    before = window.state.profile
    path = damaged_profile(window, tmp_path / "bad.calibsim-profile", damage)
    window._last_error = None
    window.background.profile_open_requested.emit(str(path))
    assert_refused_and_kept(window, qtbot, path, before)
    good_results()
    assert window.current_project().profile is None


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_project_with_a_damaged_profile_says_so_and_scores_with_the_built_in_references(
        window, qtbot, tmp_path, pairs_csv, damage):
    bad = damaged_profile(window, tmp_path / "bad.calibsim-profile", damage)
    project = Project(profile=str(bad), inputs=[ProjectInput(str(pairs_csv))]).save(tmp_path / "p.calibsim")
    window._last_error = None
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_project(str(project))      # a new model first: no references stay, the built-in come
    assert str(bad) in window._last_error.text()
    assert window.state.profile_label == "built-in" and window.profile_path is None
    assert window.state.results.frame["cosine_calibrated"].notna().all()


def test_an_unexpected_error_while_opening_a_profile_is_shown_without_its_traceback(
        window, qtbot, tmp_path, good_results, monkeypatch):
    def broken(path):
        raise RuntimeError("a bug in the reader")

    monkeypatch.setattr(core_profile.ReferenceProfile, "load", broken)
    before = window.state.profile
    window._last_error = None
    window.open_profile(str(tmp_path / "any.calibsim-profile"))
    message = shown_error(window, qtbot)
    assert message.startswith("Unexpected error: RuntimeError: a bug in the reader")
    assert "Traceback" not in message and "Traceback" in window._last_error.detailedText()
    assert window.state.profile is before
    good_results()


# --------------------------------------------------------------------------- FIFOs


@pytest.fixture
def fifos(tmp_path):
    """Make named pipes; any reader still blocked on one after 30 s is let go (the test then fails
    on its message instead of hanging; a refused pipe is never opened, so this never acts then)."""
    made = []

    def make(name):
        path = tmp_path / name
        os.mkfifo(path)
        made.append(path)
        return path

    def release():
        for path in made:
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))   # only succeeds if a reader waits
            except OSError:
                pass

    timer = threading.Timer(30, release)
    timer.start()
    yield make
    timer.cancel()
    release()


def test_two_dropped_fifos_are_refused_at_once_and_the_window_still_scores_and_closes(
        window, qtbot, fifos, good_results):
    for name in ("first.csv", "second.csv"):
        path = fifos(name)
        window._last_error = None
        drop(window, [path])
        assert "named pipe" in shown_error(window, qtbot, timeout=120_000)
    good_results()
    window.close()
    assert QThreadPool.globalInstance().activeThreadCount() == 0      # no reader left waiting


def _open_project(window, path):
    window.open_project(str(path))
    return window._last_error.text()


def _import_anchors(window, path):
    window.anchors.import_file(path)
    return window.anchors.message.text()


def _open_profile(window, path):
    window.open_profile(str(path))
    return None


def _add_background(window, path):
    window.background.add_paths([path])
    return None


FIFO_READERS = {"project": _open_project, "anchors": _import_anchors, "profile": _open_profile,
                "background corpus": _add_background}


@pytest.mark.parametrize("what", list(FIFO_READERS))
def test_a_fifo_given_as_any_kind_of_file_is_refused_without_waiting(window, qtbot, fifos, what):
    path = fifos(f"{what.replace(' ', '_')}.json")
    window._last_error = None
    message = FIFO_READERS[what](window, path)
    if what == "background corpus":
        qtbot.waitUntil(lambda: not window.background.runner.running, timeout=120_000)
        message = window.background.message.text()
    elif message is None:
        message = shown_error(window, qtbot, timeout=120_000)
    assert "named pipe" in message


# --------------------------------------------------------------------------- the session kept


def test_a_refused_file_is_not_recorded_as_the_session_input(window, qtbot, tmp_path, pairs_csv):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    bad = tmp_path / "ragged.csv"
    bad.write_text("sentence1,sentence2\na,b\nc,d,e,f\n")
    window._last_error = None
    drop(window, [bad])
    assert "line 3" in shown_error(window, qtbot)
    window.autosaver.save_now()
    saved = Project.load(window.autosaver.path)
    assert [i.path for i in saved.inputs] == [str(pairs_csv)]
    assert window.state.input.path == pairs_csv


def test_unapplied_anchor_edits_are_autosaved_and_restored_after_a_crash(window, qtbot):
    level = builtin_anchors().levels[0].name
    window.anchors.model.add_pair(0, AnchorPair(level, "half typed", ""))   # not even valid yet
    edited = window.anchors.anchor_set()
    qtbot.waitUntil(window.autosaver.path.exists, timeout=120_000)            # within seconds
    assert window.state.profile.anchors == builtin_anchors()
    assert wait_for_workers(WORKERS_END_MS)

    second = MainWindow()           # the first session "crashed": its autosave is still there
    qtbot.addWidget(second)
    try:
        qtbot.waitUntil(lambda: second._restore_box is not None, timeout=120_000)
        assert "unapplied anchor edits" in second._restore_box.text()
        second._restore_box.button(QMessageBox.StandardButton.Yes).click()
        qtbot.waitUntil(lambda: second.anchors.anchor_set().pairs == edited.pairs, timeout=120_000)
        qtbot.waitUntil(lambda: not any(r.running for r in second.runners), timeout=120_000)
        assert second.anchors.anchor_set().pairs == edited.pairs          # still there, not applied
        assert second.state.profile.anchors == builtin_anchors()
        assert second.anchors.pending_edits() is not None
    finally:
        second.close()
        assert wait_for_workers(WORKERS_END_MS)
        second.deleteLater()


# --------------------------------------------------------------------------- a full disk


class FullDisk:
    """A database connection on a full disk: every statement fails."""

    def execute(self, *args):
        raise sqlite3.OperationalError("database or disk is full")

    executemany = execute

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def close(self):
        pass


def test_a_full_cache_disk_turns_the_cache_off_with_a_warning_and_scoring_goes_on(
        window, qtbot, pairs_csv, good_results):
    cache = window.cache
    cache._conn.close()
    cache._conn = FullDisk()
    window._last_error = None
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    assert window.state.results.frame["cosine_calibrated"].notna().all()
    message = shown_error(window, qtbot)
    assert "database or disk is full" in message and "Fix:" in message
    qtbot.waitUntil(lambda: not any(r.running for r in window.runners), timeout=120_000)
    assert "no embedding cache" in window.status_label.text()
    good_results()                  # the warning is said once; later runs just go on
