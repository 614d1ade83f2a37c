"""A torch model the app loads for the first time is used at once, through sentence-transformers,
while its graph is prepared in a child process beside the app (tracing in the app's own process
froze the window: #44); quitting the app stops that process."""

from __future__ import annotations

from calibsim_gui.core.embedding import models, torch_graph
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.embedding.torch_engine import SentenceTransformerEmbedder
from tests.qt.conftest import REFERENCES_MS
from tests.tiny_models import write_tiny_model


def test_a_first_torch_load_scores_at_once_and_quitting_stops_its_graphs_preparation(window, qtbot, monkeypatch,
                                                                                   tmp_path):
    monkeypatch.setattr(models, "load_model", load_model)           # the real loader, not the fake
    monkeypatch.setenv(torch_graph.GRAPH_DIR_ENV, str(tmp_path / "graphs"))
    tiny = write_tiny_model(tmp_path / "model")
    window.models.engine_combo.setCurrentIndex(window.models.engine_combo.findData("torch"))
    with qtbot.waitSignal(window.state.profile_changed, timeout=REFERENCES_MS):
        window.load_model(str(tiny), "cpu")
    embedder = window.state.embedder
    assert isinstance(embedder, SentenceTransformerEmbedder) and embedder.info.path == tiny
    assert embedder.precision_note.endswith("; sentence-transformers while its graph is prepared)")
    child = embedder.graph_preparation
    window.close()
    assert child.poll() is not None                                  # no process left behind the app
