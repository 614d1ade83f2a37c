"""Runs interrupted like a user would: Cancel at any moment of any run, a new run started while
one is running. Afterwards the window is consistent and still scores a good file."""

from __future__ import annotations

import time

import pandas as pd
import pytest
from PySide6.QtCore import QCoreApplication

from calibsim_gui.core.io import inputs
from calibsim_gui.core.embedding import models
from calibsim_gui.core import reports as core_reports
from calibsim_gui.qt.widgets.workers import wait_for_workers
from tests.fakes import FakeEmbedder, random_sentences
from tests.qt.conftest import WORKERS_END_MS, Gate, drop

class SlowEmbedder(FakeEmbedder):
    """The fake model, `delay` seconds per batch, so a run lasts long enough to interrupt; with
    a `gate`, each batch first passes it."""

    def __init__(self, delay=0.03, gate=None, **kwargs):
        super().__init__(**kwargs)
        self.delay, self.gate = delay, gate

    def encode_batch(self, texts):
        if self.gate is not None:
            self.gate()
        else:
            time.sleep(self.delay)
        return super().encode_batch(texts)


def held(function, gate):
    def wrapper(*args, **kwargs):
        gate()
        return function(*args, **kwargs)
    return wrapper


def deliver_late_signals():
    """Every worker has ended; what they emitted last is delivered now (a stale result would show)."""
    assert wait_for_workers(WORKERS_END_MS)
    QCoreApplication.processEvents()


def many_pairs(path, n=2000, seed=11):
    texts = random_sentences(2 * n, seed=seed)
    pd.DataFrame({"sentence1": texts[:n], "sentence2": texts[n:]}).to_csv(path, index=False)
    return path


def assert_consistent_and_working(window, qtbot, pairs_csv):
    """Nothing runs, Cancel is hidden, a model and references are in place, and a good file scores."""
    qtbot.waitUntil(lambda: not any(r.running for r in window.runners), timeout=120_000)
    assert not window.cancel_button.isVisible() and not window.progress.isVisible()
    assert window.state.embedder is not None and window.state.profile is not None
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    assert window.state.input.path == pairs_csv
    assert window.state.results.frame["cosine_calibrated"].notna().all()


def start_model_load(window, tmp_path, monkeypatch, gate):
    load = held(lambda spec, device="auto", **kw: FakeEmbedder(name="next"), gate)
    monkeypatch.setattr(models, "load_model", load)
    window.load_model(None, "cpu")
    return window.model_runner


def start_background_build(window, tmp_path, monkeypatch, gate):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(random_sentences(3000, seed=3)))
    documents = inputs.load_documents(corpus)
    window.state.embedder = SlowEmbedder(gate=gate)
    window.build_background(documents, 2000, 0)
    return window.profile_runner


def start_reading(window, tmp_path, monkeypatch, gate):
    monkeypatch.setattr(inputs, "load_pairs", held(inputs.load_pairs, gate))
    drop(window, [many_pairs(tmp_path / "many.csv", n=50)])
    return window.input_runner


def start_scoring(window, tmp_path, monkeypatch, gate):
    window.state.embedder = SlowEmbedder(gate=gate)
    drop(window, [many_pairs(tmp_path / "many.csv")])
    return window.score_runner


def start_export(window, tmp_path, monkeypatch, gate):
    monkeypatch.setattr(core_reports, "build_report", held(core_reports.build_report, gate))
    window.exports.start(path=str(tmp_path / "report.pdf"), metric="cosine", form="calibrated",
                         figures=True, force=False)
    return window.export_runner


RUNS = {"loading a model": start_model_load, "building a background": start_background_build,
        "reading an input": start_reading, "scoring": start_scoring, "exporting a report": start_export}


@pytest.mark.parametrize("moment", ["at-once", "mid-way"])
@pytest.mark.parametrize("run", list(RUNS))
def test_cancel_at_any_moment_of_any_run_leaves_the_window_consistent(
        window, qtbot, tmp_path, pairs_csv, monkeypatch, run, moment):
    if run == "exporting a report":
        with qtbot.waitSignal(window.results_shown, timeout=120_000):
            drop(window, [pairs_csv])
    model, profile = window.state.embedder, window.state.profile
    batched = run in ("building a background", "scoring")
    gate = Gate(free=2 if moment == "mid-way" and batched else 0)    # mid-way: held inside its work
    with monkeypatch.context() as patch:                        # the slow parts, for this run only
        runner = RUNS[run](window, tmp_path, patch, gate)
        qtbot.waitUntil(lambda: runner.running, timeout=120_000)
        assert window.cancel_button.isVisible()
        if moment == "mid-way":
            qtbot.waitUntil(lambda: gate.holding, timeout=120_000)
        with qtbot.waitSignal(runner.cancelled, timeout=120_000):
            window.cancel_button.click()
        gate.release()
    assert window.status_label.text() == f"Stopped {runner.name}."      # the one task that ran
    if run == "exporting a report":
        deliver_late_signals()
        assert not list(tmp_path.glob("report*")) and not list(tmp_path.glob(".report*"))
    if run == "building a background":
        assert window.state.profile is profile                   # the old references stay
    window.state.embedder = model                                # the slow stand-in goes
    assert_consistent_and_working(window, qtbot, pairs_csv)
    deliver_late_signals()                      # a cancelled run's late result would arrive now
    assert window.state.embedder is model and window.state.input.path == pairs_csv
    assert window.state.results is not None


def test_a_file_dropped_while_another_is_scored_replaces_it(window, qtbot, tmp_path, pairs_csv):
    window.state.embedder = SlowEmbedder()
    drop(window, [many_pairs(tmp_path / "first.csv")])
    qtbot.waitUntil(lambda: window.score_runner.running, timeout=120_000)
    shown = []
    window.results_shown.connect(lambda: shown.append(window.state.input.path))
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    deliver_late_signals()                            # the first run's result would arrive now
    assert shown == [pairs_csv] and len(window.state.results.frame) == 30


def test_a_model_loaded_while_scoring_rescores_with_the_new_model(window, qtbot, tmp_path, monkeypatch):
    window.state.embedder = SlowEmbedder()
    path = many_pairs(tmp_path / "many.csv", n=600)
    drop(window, [path])
    qtbot.waitUntil(lambda: window.score_runner.running, timeout=120_000)
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: FakeEmbedder(name="second"))
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.load_model(None, "cpu")
    assert window.state.embedder.fingerprint.name == "second"
    assert window.state.results.provenance["model"]["name"] == "second"
    assert len(window.state.results.frame) == 600
