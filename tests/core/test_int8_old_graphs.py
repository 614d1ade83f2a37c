"""int8 graphs that are never loaded again (an earlier recipe's, such as the batched ``w7pc``, or
one quantised from an earlier float32 graph; 23 MB each for the built-in model) are removed from
calibsim's graph cache when a model is loaded in int8 (#29)."""

from __future__ import annotations

from calibsim_gui.core.embedding.graph_checks import RECORD_SUFFIX
from calibsim_gui.core.embedding.model_folders import fingerprint_folder
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.embedding.onnx_engine import INT8_RECIPE, cached_graph
from tests.tiny_models import write_tiny_model


def test_int8_graphs_of_earlier_recipes_are_removed_and_the_rest_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBSIM_ONNX_DIR", str(tmp_path / "graphs"))
    model = write_tiny_model(tmp_path / "model")
    fp32 = load_model(str(model), engine="onnx")
    folder = fp32.graph.parent
    assert folder == cached_graph(fingerprint_folder(model, "model")).parent
    old = [folder / "model-int8-w7pc-3a9e0696b8cef65b.onnx",                      # the batched recipe
           folder / f"model-int8-{INT8_RECIPE}-0000000000000000.onnx"]           # an earlier float32 graph
    other_model = tmp_path / "graphs" / "other-0123" / "model-int8-w7pc-3a9e0696b8cef65b.onnx"
    for path in [*old, other_model]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0" * 1000)
    int8 = load_model(str(model), engine="onnx", precision="int8")
    kept = [fp32.graph.name, int8.graph.name]                   # and the digest recorded for each (#43)
    assert sorted(p.name for p in folder.iterdir()) == sorted(kept + [name + RECORD_SUFFIX for name in kept])
    assert other_model.exists()                                 # another model's folder is its own
    old[0].write_bytes(b"\0")                                   # left by an older calibsim since
    again = load_model(str(model), engine="onnx", precision="int8")
    assert again.graph == int8.graph and not old[0].exists()
    assert again.encode_batch(["A man is playing a guitar."]).shape == (1, 16)
