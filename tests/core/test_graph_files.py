"""ONNX graph files that cannot be run safely (#27): wrong inputs or outputs, NaN or infinite
values, a graph that fails inside ONNX Runtime, external data outside the model folder. Each is
a `ModelError` naming the graph, even when the user trusts the folder's graph and torch is absent."""

import json
import os
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from calibsim_gui.core.embedding import graph_checks
from calibsim_gui.core.embedding.cache_folder import default_cache_dir
from calibsim_gui.core.embedding.model_folders import builtin_model_path
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.errors import ModelError
from tests.core.test_models import make_st_folder

TOKENS = helper.make_tensor_value_info("token_embeddings", TensorProto.FLOAT, ["batch", "sequence", 16])


def _graph(folder, nodes=(), *, output=TOKENS, inputs=None, initializers=()):
    """A graph mapping input_ids to rows of a random 30,522 x 16 embedding, then `nodes` (which
    read "tokens" and write `output`), saved as `folder`/onnx/model.onnx."""
    embedding = numpy_helper.from_array(np.random.default_rng(0).normal(size=(30522, 16)).astype(np.float32), "emb")
    inputs = inputs or [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])]
    gather = helper.make_node("Gather", ["emb", inputs[0].name], ["tokens" if nodes else output.name])
    graph = helper.make_graph([gather, *nodes], "tokens", inputs, [output], [embedding, *initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (folder / "onnx").mkdir(exist_ok=True)
    path = folder / "onnx" / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _scaled(value):
    scale = numpy_helper.from_array(np.array([value], dtype=np.float32), "scale")
    return {"nodes": [helper.make_node("Mul", ["tokens", "scale"], ["token_embeddings"])], "initializers": [scale]}


def _external(location):
    def change(folder):
        path = _graph(folder)
        import onnx
        from onnx.external_data_helper import set_external_data

        model = onnx.load(str(path))
        tensor = model.graph.initializer[0]
        set_external_data(tensor, location=location)
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
        path.write_bytes(model.SerializeToString())
    return change


CASES = {
    "2-D output": (lambda f: _graph(f, [helper.make_node("ReduceMean", ["tokens"], ["token_embeddings"], axes=[1],
                                                         keepdims=0)],
                                    output=helper.make_tensor_value_info("token_embeddings", TensorProto.FLOAT,
                                                                         ["batch", 16])),
                   "not a 3-D float32 tensor"),
    "int output": (lambda f: _graph(f, [helper.make_node("Cast", ["tokens"], ["token_embeddings"],
                                                         to=TensorProto.INT64)],
                                    output=helper.make_tensor_value_info("token_embeddings", TensorProto.INT64,
                                                                         ["batch", "sequence", 16])),
                   "is a 3-D int64 tensor, not a 3-D float32"),
    "other input": (lambda f: _graph(f, inputs=[helper.make_tensor_value_info("pixel_values", TensorProto.INT64,
                                                                              ["batch", "sequence"])]),
                    "takes inputs \\['pixel_values'\\]"),
    "float ids": (lambda f: _graph(f, [helper.make_node("Identity", ["tokens"], ["token_embeddings"])],
                                   inputs=[helper.make_tensor_value_info("input_ids", TensorProto.FLOAT,
                                                                         ["batch", "sequence"])]),
                  "input input_ids is a 2-D float tensor"),
    "NaN": (lambda f: _graph(f, **_scaled(np.nan)), "returned NaN or infinite values"),
    "Inf": (lambda f: _graph(f, **_scaled(np.inf)), "returned NaN or infinite values"),
    "fails at run time": (lambda f: _graph(f, [helper.make_node("Reshape", ["tokens", "shape"], ["token_embeddings"])],
                                           initializers=[numpy_helper.from_array(np.array([1, 5, 16]), "shape")]),
                          "ONNX Runtime failed to run"),
    "external data at /": (_external("/etc/hostname"), "outside the model folder"),
    "external data above": (_external("../../../weights.bin"), "outside the model folder"),
    "external data a FIFO": (lambda f: (_external("weights.bin")(f), os.mkfifo(f / "onnx" / "weights.bin")),
                             "not a regular file but a folder, named pipe"),         # #43: said "missing"
    "not a graph": (lambda f: ((f / "onnx").mkdir(), (f / "onnx" / "model.onnx").write_bytes(b"\x00garbage" * 9)),
                    "not a readable ONNX graph"),
}


@pytest.fixture(autouse=True)
def _no_torch_and_own_graph_folder(tmp_path, monkeypatch):
    from tests.core.test_folder_graphs import without_torch

    monkeypatch.setenv("CALIBSIM_ONNX_DIR", str(tmp_path / "graphs"))
    without_torch(monkeypatch)


@pytest.mark.parametrize("case", list(CASES))
def test_a_graph_that_cannot_run_safely_is_refused_even_when_trusted(tmp_path, case):
    build, words = CASES[case]
    folder = make_st_folder(tmp_path / "graphed")
    shutil.copyfile(builtin_model_path() / "tokenizer.json", folder / "tokenizer.json")
    build(folder)
    with pytest.raises(ModelError, match=words) as error:
        load_model(str(folder), trust_folder_graph=True)
    assert str(folder / "onnx" / "model.onnx") in str(error.value) and "Fix:" in str(error.value)


def test_a_plain_graph_of_the_right_form_runs_on_trust(tmp_path):
    """The control: the same builder without a fault gives a graph that encodes."""
    folder = make_st_folder(tmp_path / "graphed")
    shutil.copyfile(builtin_model_path() / "tokenizer.json", folder / "tokenizer.json")
    _graph(folder)
    graph_checks.check_graph_file(folder / "onnx" / "model.onnx", folder)
    vectors = load_model(str(folder), trust_folder_graph=True).encode_batch(["A cat sleeps.", "Markets fell."])
    assert vectors.shape == (2, 16) and np.isfinite(vectors).all()


def _graphed_folder(tmp_path):
    folder = make_st_folder(tmp_path / "graphed")
    shutil.copyfile(builtin_model_path() / "tokenizer.json", folder / "tokenizer.json")
    _graph(folder)
    return folder


def _count_sessions(monkeypatch) -> list:
    import onnxruntime

    opened, real = [], onnxruntime.InferenceSession

    def counting(*args, **kwargs):
        opened.append(args[0])
        return real(*args, **kwargs)
    monkeypatch.setattr(onnxruntime, "InferenceSession", counting)
    return opened


TEXTS = ["A cat sleeps.", "Markets fell."]


def test_a_graph_checked_once_opens_its_session_when_it_first_encodes(tmp_path, monkeypatch):
    """#29: a later load of the same graph bytes skips ONNX Runtime (~0.3 s for the built-in
    model) until a text is encoded, so a run whose texts are all cached opens none."""
    folder = _graphed_folder(tmp_path)
    first = load_model(str(folder), trust_folder_graph=True)
    expected = first.encode_batch(TEXTS)
    opened = _count_sessions(monkeypatch)
    again = load_model(str(folder), trust_folder_graph=True)
    assert opened == [] and again.dimension == first.dimension == 16
    assert np.array_equal(again.encode_batch(TEXTS), expected) and len(opened) == 1


def test_a_checked_graph_replaced_by_a_broken_one_is_refused_at_load(tmp_path):
    """The record of a check belongs to the graph's bytes, not to its path."""
    folder = _graphed_folder(tmp_path)
    load_model(str(folder), trust_folder_graph=True).encode_batch(TEXTS)
    build, words = CASES["other input"]
    build(folder)
    with pytest.raises(ModelError, match=words):
        load_model(str(folder), trust_folder_graph=True)


@pytest.mark.parametrize("damage", ["garbage", "wrong width"])
def test_a_damaged_record_of_a_check_is_checked_again_or_refused_with_its_fix(tmp_path, monkeypatch, damage):
    folder = _graphed_folder(tmp_path)
    expected = load_model(str(folder), trust_folder_graph=True).encode_batch(TEXTS)
    (record,) = (default_cache_dir() / "checked").glob("onnx-graph-*.json")
    if damage == "garbage":
        record.write_bytes(b"\x00not json")
        opened = _count_sessions(monkeypatch)
        again = load_model(str(folder), trust_folder_graph=True)
        assert len(opened) == 1 and np.array_equal(again.encode_batch(TEXTS), expected)
    else:
        entry = json.loads(record.read_text())
        record.write_text(json.dumps({**entry, "found": {"width": 17}}))
        with pytest.raises(ModelError, match="not the 17 recorded") as error:
            load_model(str(folder), trust_folder_graph=True).encode_batch(TEXTS)
        assert str(record) in str(error.value) and "Fix: delete that record" in str(error.value)
