"""The export recipe (#29): calibsim exports graphs with eager attention and ONNX Runtime's BERT
fusions, keeps the unfused graph when the fused one does not match torch, names the graph and its
vectors' cache key for the recipe, and removes graphs of earlier recipes from its cache."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from calibsim_gui.core.embedding import onnx_export
from calibsim_gui.core.embedding.cache import cache_key
from calibsim_gui.core.embedding.model_folders import fingerprint_folder
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.embedding.onnx_engine import EXPORT_RECIPE, INT8_RECIPE, cached_graph
from tests.tiny_models import write_tiny_model

TEXTS = ["A man is playing a guitar.", "ok", "Two dogs run through a field of tall grass. " * 4]
FUSED = {"Attention", "SkipLayerNormalization", "EmbedLayerNormalization"}
REAL_FUSION = onnx_export.fuse_transformer


def _ops(graph) -> collections.Counter:
    return collections.Counter(node.op_type for node in onnx.load(str(graph)).graph.node)


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A tiny model folder, exported into an empty graph folder of its own."""
    monkeypatch.setenv("CALIBSIM_ONNX_DIR", str(tmp_path / "graphs"))
    return write_tiny_model(tmp_path / "model")


def test_graphs_of_earlier_recipes_are_removed_when_the_new_ones_are_written(tiny):
    folder = cached_graph(fingerprint_folder(tiny, "model")).parent
    folder.mkdir(parents=True)
    old = [folder / "model.onnx", folder / "model-int8-w7pc-3a9e0696b8cef65b.onnx",
           folder / f"model-int8-{INT8_RECIPE}-3a9e0696b8cef65b.onnx"]     # quantised from the old float32
    for path in old:
        path.write_bytes(b"\0" * 1000)
    mine = folder.parent / "other-model-0123" / "model.onnx"               # another model's: kept
    mine.parent.mkdir()
    mine.write_bytes(b"\0")
    fp32 = load_model(str(tiny), engine="onnx")
    assert fp32.graph == folder / f"model-{EXPORT_RECIPE}.onnx"
    assert not any(path.exists() for path in old) and mine.exists()
    assert cache_key(fp32, "") == f"{fp32.fingerprint.id}+onnx-{EXPORT_RECIPE}"
    int8 = load_model(str(tiny), engine="onnx", precision="int8")
    assert sorted(p.name for p in folder.iterdir()) == sorted([fp32.graph.name, int8.graph.name])
    assert cache_key(int8, "") == f"{fp32.fingerprint.id}+onnx+int8-{EXPORT_RECIPE}-{INT8_RECIPE}"
    stale = folder / f"model-int8-{INT8_RECIPE}-0000000000000000.onnx"  # from a float32 graph since replaced
    stale.write_bytes(b"\0")
    int8.graph.unlink()
    assert load_model(str(tiny), engine="onnx", precision="int8").graph.is_file() and not stale.exists()


def test_the_exported_graph_is_fused_and_equals_torch(tiny):
    onnx_graph = load_model(str(tiny), engine="onnx")
    ops = _ops(onnx_graph.graph)
    assert FUSED <= set(ops) and not {"IsNaN", "Softmax", "LayerNormalization"} & set(ops)
    torch_model = load_model(str(tiny), engine="torch", device="cpu")
    np.testing.assert_allclose(onnx_graph.encode_batch(TEXTS), torch_model.encode_batch(TEXTS), atol=1e-5)


def _off_fusion(raw, out, config):
    """The real fusions, then the last LayerNorm's shift 0.05 off: the fused numbers are wrong."""
    fused = REAL_FUSION(raw, out, config)
    model = onnx.load(str(fused))
    node = [node for node in model.graph.node if node.op_type == "SkipLayerNormalization"][-1]
    beta = next(init for init in model.graph.initializer if init.name == node.input[3])
    beta.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(beta) + 0.05, beta.name))
    onnx.save(model, str(fused))
    return fused


@pytest.mark.parametrize("fusion", [_off_fusion, lambda raw, out, config: None], ids=["off", "none"])
def test_a_fused_graph_that_does_not_match_torch_gives_way_to_the_plain_one(tiny, monkeypatch, fusion):
    monkeypatch.setattr(onnx_export, "fuse_transformer", fusion)
    onnx_graph = load_model(str(tiny), engine="onnx")
    assert onnx_graph.graph.name == f"model-{EXPORT_RECIPE}.onnx" and "Attention" not in _ops(onnx_graph.graph)
    torch_model = load_model(str(tiny), engine="torch", device="cpu")
    np.testing.assert_allclose(onnx_graph.encode_batch(TEXTS), torch_model.encode_batch(TEXTS), atol=1e-5)
