"""Fuzzing ONNX graphs (hypothesis, #27): a model folder's own graph built with onnx.helper from
drawn parts — input names, dtypes and ranks; the output's name, rank, dtype and declared type;
a scale that may be NaN, infinite, zero or overflow; external data inside, outside or missing,
or shorter than it says; the file truncated or with bytes overwritten. Run on trust without
torch (the desktop bundle), each graph ends in a `ModelError` naming the graph and the fix, or
encodes to the numbers the graph computes: the mean of its token rows, normalised."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.embedding.model_folders import builtin_model_path
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.errors import ModelError
from tests.core.test_folder_graphs import without_torch
from tests.core.test_fuzz_files import FUZZ
from tests.core.test_models import make_st_folder

DIM = 16
EMBEDDING = np.random.default_rng(0).normal(size=(30522, DIM)).astype(np.float32)
TEXTS = ["A cat sits on the mat.", "Markets fell sharply on Monday, " * 3]
DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "double": TensorProto.DOUBLE,
          "int64": TensorProto.INT64, "int32": TensorProto.INT32}
OUTSIDE = ("/etc/hostname", "../weights.bin", "../../../etc/hostname", "sub/../../weights.bin", "link.bin")


@st.composite
def graphs(draw):
    """The parts of one graph (a dict `_write` understands)."""
    names = ["input_ids"] + draw(st.lists(st.sampled_from(["attention_mask", "token_type_ids"]), unique=True))
    if draw(st.integers(0, 5)) == 0:            # one name the engine does not feed, or input_ids missing
        names[draw(st.integers(0, len(names) - 1))] = draw(st.sampled_from(["pixel_values", "ids"]))
    return {
        "inputs": [(name, draw(st.sampled_from(["int64"] * 12 + ["int32", "float32", "double"])),
                    draw(st.sampled_from([2] * 12 + [1, 3, None]))) for name in names],
        "output": draw(st.sampled_from(["token_embeddings"] * 8 + ["last_hidden_state", "sentence_embedding"])),
        "form": draw(st.sampled_from(["3-D"] * 12 + ["2-D", "4-D"])),
        "cast": draw(st.sampled_from(["float32"] * 12 + ["float16", "double", "int64"])),
        "declared_type": draw(st.sampled_from(["as computed"] * 12 + list(DTYPES))),
        "declared_rank": draw(st.sampled_from(["as computed"] * 12 + [2, 3, 4, None])),
        "scale": draw(st.sampled_from([1.0] * 6 + [-1.0, 0.5, 1e3, 3e38, 0.0, np.nan, np.inf, -np.inf])),
        "external": draw(st.sampled_from([None] * 10 + ["weights.bin", "missing.bin", "short.bin", *OUTSIDE])),
        "damage": draw(st.sampled_from([None] * 10 + ["truncate", "overwrite"])),
        "at": draw(st.floats(0, 1)),
        "garbage": draw(st.binary(min_size=1, max_size=16)),
    }


def _write(folder, parts) -> None:
    """`folder`/onnx/model.onnx: input_ids (else the first input) gathers rows of `EMBEDDING`, times the scale, then
    reduced to 2-D or widened to 4-D, cast, declared as `parts` say, then stored and damaged."""
    inputs = [helper.make_tensor_value_info(name, DTYPES.get(dtype, TensorProto.FLOAT),
                                            None if rank is None else [f"d{i}" for i in range(rank)])
              for name, dtype, rank in parts["inputs"]]
    computed_rank = {"3-D": 3, "2-D": 2, "4-D": 4}[parts["form"]]
    ids = next((i.name for i in inputs if i.name == "input_ids"), inputs[0].name)
    nodes = [helper.make_node("Gather", ["emb", ids], ["rows"]),
             helper.make_node("Mul", ["rows", "scale"], ["scaled"])]
    last = "scaled"
    if parts["form"] == "2-D":
        nodes.append(helper.make_node("ReduceMean", [last], ["reduced"], axes=[1], keepdims=0))
        last = "reduced"
    elif parts["form"] == "4-D":
        nodes.append(helper.make_node("Unsqueeze", [last, "axis"], ["widened"]))
        last = "widened"
    nodes.append(helper.make_node("Cast", [last], [parts["output"]], to=DTYPES[parts["cast"]]))
    rank = computed_rank if parts["declared_rank"] == "as computed" else parts["declared_rank"]
    kind = DTYPES[parts["cast"] if parts["declared_type"] == "as computed" else parts["declared_type"]]
    output = helper.make_tensor_value_info(parts["output"], kind,
                                           None if rank is None else [f"o{i}" for i in range(rank)])
    weights = [numpy_helper.from_array(EMBEDDING, "emb"),
               numpy_helper.from_array(np.array([parts["scale"]], dtype=np.float32), "scale"),
               numpy_helper.from_array(np.array([0], dtype=np.int64), "axis")]
    model = helper.make_model(helper.make_graph(nodes, "fuzzed", inputs, [output], weights),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (folder / "onnx").mkdir(exist_ok=True)
    if parts["external"]:
        _externalise(folder, model.graph.initializer[0], parts["external"])
    data = bytearray(model.SerializeToString())
    at = int(parts["at"] * (len(data) - 1))
    if parts["damage"] == "truncate":
        data = data[:at]
    elif parts["damage"] == "overwrite":
        data[at:at + len(parts["garbage"])] = parts["garbage"]
    (folder / "onnx" / "model.onnx").write_bytes(bytes(data))


def _externalise(folder, tensor, location) -> None:
    """Move `tensor`'s bytes to the external file `location` (relative to the graph's folder)."""
    raw = tensor.raw_data
    target = folder / "onnx" / location
    if location == "link.bin":
        target.symlink_to(folder.parent / "weights.bin")
    if location in ("weights.bin", "short.bin"):
        target.write_bytes(raw[:len(raw) // 2] if location == "short.bin" else raw)
    if location.startswith(".."):
        (folder.parent / "weights.bin").write_bytes(raw)
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(len(raw)))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def _expected(folder, parts) -> np.ndarray:
    """What the graph computes for `TEXTS` through mean pooling and Normalize (scale-free), in float64."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    vectors = np.stack([EMBEDDING[tokenizer.encode(t).ids].astype(np.float64).mean(axis=0) for t in TEXTS])
    vectors *= np.sign(parts["scale"])
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture(autouse=True)
def _no_torch_and_own_graph_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBSIM_ONNX_DIR", str(tmp_path / "graphs"))
    without_torch(monkeypatch)


PLAIN = {"inputs": [("input_ids", "int64", 2)], "output": "token_embeddings", "form": "3-D", "cast": "float32",
         "declared_type": "as computed", "declared_rank": "as computed", "scale": 1.0, "external": None,
         "damage": None, "at": 0.0, "garbage": b"\0"}


@FUZZ
@given(parts=graphs())
@example(parts=PLAIN)                                                   # encodes
@example(parts={**PLAIN, "external": "weights.bin", "scale": -1.0})     # encodes
@example(parts={**PLAIN, "inputs": [("attention_mask", "int64", 2), ("input_ids", "int32", 2)]})  # encodes
@example(parts={**PLAIN, "scale": 0.0})              # zero vectors: were used silently
@example(parts={**PLAIN, "cast": "float16"})         # declared float32, computed float16: no fix was named
@example(parts={**PLAIN, "external": "missing.bin"})
@example(parts={**PLAIN, "external": "short.bin"})
@example(parts={**PLAIN, "form": "2-D", "declared_rank": 3})
def test_hostile_graphs_are_refused_by_name_or_give_the_numbers_they_compute(tmp_path_factory, parts):
    folder = make_st_folder(tmp_path_factory.mktemp("fuzzed") / "model")
    shutil.copyfile(builtin_model_path() / "tokenizer.json", folder / "tokenizer.json")
    _write(folder, parts)
    try:
        embedder = load_model(str(folder), trust_folder_graph=True)
        vectors = encode_texts(embedder, TEXTS).embeddings
    except ModelError as exc:
        message = str(exc)
        assert str(folder / "onnx") in message and "Fix:" in message, message
        event(f"refused: {message.replace(str(folder), '')[:50]}")
        return
    event("encoded")
    assert vectors.shape == (len(TEXTS), DIM)
    np.testing.assert_allclose(vectors, _expected(folder, parts), atol=1e-5)
