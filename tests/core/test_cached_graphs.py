"""Graphs calibsim wrote into its graph cache (CALIBSIM_ONNX_DIR) are checked before they run
(#43): the sha256 recorded when a graph was exported (or quantised) must match its bytes at load.
A swapped or damaged graph used to run silently under the model's fingerprint, its provenance
still "equal to torch float32 within 1e-5" (cosine off by 0.094 with another model's graph)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from calibsim_gui.core.embedding import models
from calibsim_gui.core.embedding.graph_checks import record_path
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.errors import ModelError
from tests.core.test_folder_graphs import without_torch
from tests.tiny_models import write_tiny_model

TEXTS = ["A cat sleeps on the sofa.", "Markets fell sharply on Monday."]


@pytest.fixture
def tiny_pair(tmp_path, monkeypatch):
    """Two tiny models with other weights, their graphs exported into a private graph cache."""
    monkeypatch.setenv("CALIBSIM_ONNX_DIR", str(tmp_path / "graphs"))
    ours = write_tiny_model(tmp_path / "ours")
    other = write_tiny_model(tmp_path / "other", seed=1)
    return ours, load_model(str(ours), engine="onnx"), load_model(str(other), engine="onnx")


def _swap(graph, other_graph):
    graph.unlink()                          # as a user's cp would: new bytes under the old name
    shutil.copyfile(other_graph, graph)


def _truncate(graph, other_graph):
    data = graph.read_bytes()
    graph.write_bytes(data[: len(data) // 2])


def _no_record(graph, other_graph):          # a graph exported by an earlier calibsim, then swapped
    record_path(graph).unlink()
    _swap(graph, other_graph)


@pytest.mark.parametrize("damage", [_swap, _truncate, _no_record], ids=["swapped", "truncated", "no record"])
def test_a_swapped_or_damaged_cached_graph_is_exported_again_and_the_provenance_says_so(tiny_pair, damage):
    ours, embedder, other = tiny_pair
    expected = embedder.encode_batch(TEXTS)
    assert "exported again" not in embedder.precision_note
    assert record_path(embedder.graph).is_file()
    damage(embedder.graph, other.graph)
    again = load_model(str(ours), engine="onnx")
    assert again.graph == embedder.graph
    assert "the cached graph was exported again" in again.precision_note
    np.testing.assert_allclose(again.encode_batch(TEXTS), expected, atol=1e-6)
    assert "exported again" not in load_model(str(ours), engine="onnx").precision_note   # recorded anew


def test_a_swapped_cached_graph_is_refused_where_torch_cannot_export_it(tiny_pair, monkeypatch):
    ours, embedder, other = tiny_pair
    _swap(embedder.graph, other.graph)
    without_torch(monkeypatch)
    with pytest.raises(ModelError, match="differ from the sha256 recorded") as error:
        load_model(str(ours), engine="onnx")
    assert str(embedder.graph) in str(error.value) and "Fix: delete the graph" in str(error.value)


def test_a_swapped_int8_graph_is_made_again(tiny_pair, monkeypatch):
    ours, _, other = tiny_pair
    int8 = load_model(str(ours), engine="onnx", precision="int8")
    expected = int8.encode_batch(TEXTS)
    other_int8 = load_model(str(tiny_pair[2].info.path), engine="onnx", precision="int8")
    _swap(int8.graph, other_int8.graph)
    monkeypatch.setattr(models, "export_graph", lambda *a, **k: pytest.fail("the float32 graph is sound"))
    again = load_model(str(ours), engine="onnx", precision="int8")
    assert "the cached int8 graph was made again" in again.precision_note
    np.testing.assert_array_equal(again.encode_batch(TEXTS), expected)


@pytest.mark.parametrize("note", ["garbage", '{"max_abs_diff": 0.5, "probe_diff": 0.0}'], ids=["garbage", "failed"])
def test_a_damaged_record_of_a_checked_folder_graph_is_not_taken_for_a_check(tmp_path, monkeypatch, note):
    """The record that a folder's own graph passed its check against the weights (in the graph
    cache's checked/ folder) counted by its existence alone; now it must say the graph passed."""
    from calibsim_gui.core.embedding import onnx_export
    from tests.core.test_folder_graphs import folder_with_graph

    monkeypatch.setenv("CALIBSIM_ONNX_DIR", str(tmp_path / "graphs"))
    folder = write_tiny_model(tmp_path / "tiny")
    graph = onnx_export.export_graph(models.resolve_model(str(folder)), tmp_path / "exported" / "model.onnx")
    shipped = folder_with_graph((folder, graph), tmp_path)
    load_model(str(shipped), engine="onnx")                          # checked with torch: a record
    records = list((tmp_path / "graphs" / "checked").glob("*.json"))
    assert len(records) == 1
    records[0].write_text(note)
    without_torch(monkeypatch)
    with pytest.raises(ModelError, match="cannot be checked: torch is not installed"):
        load_model(str(shipped), engine="onnx")
