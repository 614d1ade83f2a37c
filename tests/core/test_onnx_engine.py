"""The ONNX Runtime engine: pooling read from the folder, engine choice, and (slow) equality with
the torch engine on the built-in model, int8, folders shipping a graph (the tiny model), and no
torch import."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.embedding import devices, model_folders
from calibsim_gui.core.embedding import onnx_engine
from calibsim_gui.core.embedding import onnx_export
from calibsim_gui.core.embedding.cache import cache_key
from calibsim_gui.core.errors import ModelError
from calibsim_gui.core.embedding.model_folders import ModelFingerprint
from calibsim_gui.core.embedding.models import choose_engine, load_model
from calibsim_gui.core.embedding.onnx_engine import INT8_RECIPE, ModuleStack, pool, read_module_stack
from tests.conftest import DATA
from tests.tiny_models import write_tiny_model


def _folder(tmp_path, modules=("Transformer", "Pooling", "Normalize"), pooling=None, st_config=None):
    """A folder with just the json files `read_module_stack` reads."""
    folder = tmp_path / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "modules.json").write_text(json.dumps(
        [{"path": "" if kind == "Transformer" else f"{i}_{kind}", "type": f"sentence_transformers.models.{kind}"}
         for i, kind in enumerate(modules)]))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling or {"pooling_mode_mean_tokens": True}))
    (folder / "sentence_bert_config.json").write_text(json.dumps(st_config or {"max_seq_length": 128}))
    return folder


# --------------------------------------------------------------------------- fast: no model


def test_module_stack_is_read_from_the_folder(tmp_path):
    folder = _folder(tmp_path)
    assert read_module_stack(folder) == ModuleStack(("mean",), True, True, 128, False, folder)
    legacy = read_module_stack(_folder(tmp_path / "a", modules=("Transformer", "Pooling"), pooling={
        "pooling_mode_cls_token": True, "pooling_mode_max_tokens": True, "include_prompt": False}))
    assert legacy.pooling_modes == ("cls", "max") and not legacy.include_prompt and not legacy.normalize
    assert read_module_stack(_folder(tmp_path / "b", pooling={"pooling_mode": "cls"})).pooling_modes == ("cls",)


@pytest.mark.parametrize("modules, pooling, words", [
    (("Transformer", "Pooling", "Dense", "Normalize"), None, "Dense"),
    (("Transformer", "Pooling"), {"pooling_mode": "weightedmean"}, "weightedmean"),
    (("Transformer", "Pooling"), {"pooling_mode_lasttoken": True}, "lasttoken"),
])
def test_stacks_it_cannot_reproduce_are_refused_with_the_fix(tmp_path, modules, pooling, words):
    folder = _folder(tmp_path, modules=modules, pooling=pooling)
    with pytest.raises(ModelError, match=words) as error:
        read_module_stack(folder)
    assert "--engine torch" in str(error.value)
    assert onnx_engine.onnx_refusal(folder) is not None


def test_pooling_matches_a_hand_computation():
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(2, 4, 3)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]])
    stack = ModuleStack(("cls", "mean", "max", "mean_sqrt_len_tokens"), True, False, None, False)
    out = pool(tokens, mask, stack)
    first = tokens[0, :3]
    np.testing.assert_allclose(out[0], np.concatenate([first[0], first.mean(0), first.max(0),
                                                       first.sum(0) / np.sqrt(3)]), rtol=1e-6)
    no_prompt = pool(tokens, mask, ModuleStack(("cls", "mean"), False, True, None, False), prompt_length=2)
    expected = np.concatenate([tokens[1, 2], tokens[1, 2:].mean(0)])
    np.testing.assert_allclose(no_prompt[1], expected / np.linalg.norm(expected), rtol=1e-5)


def test_auto_engine_is_onnx_on_the_cpu_and_torch_elsewhere(monkeypatch):
    assert choose_engine("auto", "cpu") == "onnx"
    assert choose_engine("auto", "cuda") == choose_engine("auto", "mps") == "torch"
    assert choose_engine("auto", "cpu", "bfloat16") == choose_engine("auto", "cpu", "auto") == "torch"
    monkeypatch.setattr(devices, "cpu_only_torch", lambda: False)
    monkeypatch.setattr(devices, "resolve_device", lambda device="auto": "cuda")
    assert choose_engine("auto", "auto") == "torch"
    monkeypatch.setattr(devices, "cpu_only_torch", lambda: True)       # known without importing torch
    assert choose_engine("auto", "auto") == "onnx"
    monkeypatch.setattr(onnx_engine, "onnxruntime_missing", lambda: "onnxruntime is not installed")
    assert choose_engine("auto", "cpu") == "torch"


@pytest.mark.parametrize("engine, device, precision, words", [
    ("torch", "cpu", "int8", "--engine onnx"),
    ("onnx", "cuda", "float32", "--device cpu"),
    ("onnx", "cpu", "bfloat16", "--engine torch"),
    ("tensorrt", "cpu", "float32", "Unknown engine"),
])
def test_engine_and_precision_that_cannot_go_together_are_refused(engine, device, precision, words):
    with pytest.raises(ModelError, match=words):
        choose_engine(engine, device, precision)


def test_cache_keys_keep_engines_and_precisions_apart(fake_embedder):
    bare = cache_key(fake_embedder, "")
    assert bare == fake_embedder.fingerprint.id           # torch float32: the key old caches used
    fake_embedder.engine = "onnx"
    assert cache_key(fake_embedder, "") == bare + "+onnx"
    fake_embedder.precision = "int8"
    assert cache_key(fake_embedder, "") == bare + "+onnx+int8"
    fake_embedder.quantisation = INT8_RECIPE                # an int8 graph says how it was quantised
    assert cache_key(fake_embedder, "") == bare + f"+onnx+int8-{INT8_RECIPE}"


# --------------------------------------------------------------------------- slow: the built-in model


@pytest.fixture(scope="session")
def torch_embedder():
    return load_model(None, device="cpu", engine="torch")


@pytest.fixture(scope="session")
def onnx_embedder():
    return load_model(None, engine="onnx")


@pytest.fixture(scope="session")
def stsb_sentences():
    path = DATA / "stsb" / "test.csv"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    frame = pd.read_csv(path).head(100)
    return list(frame["sentence1"]) + list(frame["sentence2"])


def _tiny_shipping_its_graph(folder: Path, pooling: dict) -> Path:
    """The tiny model with its own export as onnx/model.onnx, and `pooling` merged into its
    pooling config (the graph gives token embeddings: pooling is not in it)."""
    write_tiny_model(folder)
    graph = load_model(str(folder), engine="onnx").graph
    (folder / "onnx").mkdir()
    shutil.copyfile(graph, folder / "onnx" / "model.onnx")
    config = json.loads((folder / "1_Pooling" / "config.json").read_text())
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({**config, **pooling}))
    return folder


@pytest.mark.slow
def test_onnx_float32_equals_torch_float32(onnx_embedder, torch_embedder, stsb_sentences):
    assert (onnx_embedder.engine, onnx_embedder.device, onnx_embedder.precision) == ("onnx", "cpu", "float32")
    assert onnx_embedder.fingerprint == torch_embedder.fingerprint          # profiles fit both
    assert (onnx_embedder.dimension, onnx_embedder.max_seq_length) == (384, 256)
    long_text = " ".join(stsb_sentences[:40])                                  # past 256 tokens
    texts = stsb_sentences + [long_text]
    # both engines pad a batch to its longest text: short texts padded to 256 tokens beside the
    # long one, the others in a batch of their own (all 201 at 256 tokens took most of the test)
    for batch in (texts[-41:], texts[:-41]):
        np.testing.assert_allclose(onnx_embedder.encode_batch(batch), torch_embedder.encode_batch(batch), atol=1e-5)
    for prompt in ("query: ", "Represent this sentence for searching: "):
        np.testing.assert_allclose(onnx_embedder.encode_batch(texts[:50], prompt=prompt),
                                   torch_embedder.encode_batch(texts[:50], prompt=prompt), atol=1e-5)
    assert onnx_embedder.encode_batch([]).shape == (0, 384)


@pytest.mark.slow
def test_token_counts_and_spans_equal_torch(onnx_embedder, torch_embedder, stsb_sentences):
    texts = stsb_sentences + [" ".join(stsb_sentences[:40]), "Ünïcödé — ok 数据中心", ""]
    np.testing.assert_array_equal(onnx_embedder.token_counts(texts), torch_embedder.token_counts(texts))
    for mine, theirs in zip(onnx_embedder.token_spans(texts), torch_embedder.token_spans(texts)):
        np.testing.assert_array_equal(mine, theirs)


@pytest.mark.slow
def test_int8_stays_near_float32_under_its_own_cache_key(onnx_embedder, stsb_sentences):
    int8 = load_model(None, engine="onnx", precision="int8")
    assert int8.precision == "int8" and int8.graph.name.startswith(f"model-int8-{INT8_RECIPE}-")
    assert "int8" in int8.precision_note and cache_key(int8, "").endswith(f"+int8-{INT8_RECIPE}")
    assert np.abs(int8.encode_batch(stsb_sentences) - onnx_embedder.encode_batch(stsb_sentences)).max() < 0.1
    keys = {cache_key(int8, ""), cache_key(onnx_embedder, ""), onnx_embedder.fingerprint.id}
    assert len(keys) == 3


@pytest.mark.slow
@pytest.mark.parametrize("pooling", [{"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False},
                                     {"include_prompt": False}])
def test_pooling_comes_from_the_folder_and_matches_torch(onnx_embedder, tmp_path, monkeypatch, pooling,
                                                         stsb_sentences):
    folder = _tiny_shipping_its_graph(tmp_path / "model", pooling)      # the built-in's took ~10 s more
    monkeypatch.setattr(onnx_export, "export_graph", lambda *a, **k: pytest.fail("the folder has a graph"))
    # the probe (every token id through both engines) has its own tests in test_folder_graphs.py
    monkeypatch.setattr(onnx_export, "probe_difference", lambda *a: 0.0)
    mine = load_model(str(folder), engine="onnx")
    assert mine.graph == folder / "onnx" / "model.onnx"
    theirs = load_model(str(folder), engine="torch", device="cpu")
    texts = stsb_sentences[:40]
    for prompt in ("", "query: "):
        np.testing.assert_allclose(mine.encode_batch(texts, prompt=prompt), theirs.encode_batch(texts, prompt=prompt),
                                   atol=1e-5)
    assert mine.stack == read_module_stack(folder) != onnx_embedder.stack


@pytest.mark.slow
def test_a_graph_the_folder_ships_is_checked_against_torch_once(tmp_path, monkeypatch):
    """On the tiny model, shipping its own export: the built-in's check in a fraction of the time."""
    folder = _tiny_shipping_its_graph(tmp_path / "model", {})
    monkeypatch.setattr(onnx_export, "probe_difference", lambda *a: 0.0)     # see the test above
    monkeypatch.setattr(onnx_export, "MAX_EXPORT_DIFF", -1.0)
    with pytest.raises(ModelError, match="came with the model differs from its torch weights"):
        load_model(str(folder), engine="onnx")
    monkeypatch.setattr(onnx_export, "MAX_EXPORT_DIFF", 1e-5)
    assert load_model(str(folder), engine="onnx").graph == folder / "onnx" / "model.onnx"
    monkeypatch.setattr(onnx_export, "graph_difference", lambda *a: pytest.fail("checked twice"))
    load_model(str(folder), engine="onnx")


@pytest.mark.slow
def test_an_export_that_does_not_match_torch_is_deleted(tmp_path, monkeypatch):
    """On the tiny model: the same export and check as the built-in's, in a fraction of the time."""
    folder = write_tiny_model(tmp_path / "tiny")
    monkeypatch.setenv("CALIBSIM_ONNX_DIR", str(tmp_path / "graphs"))
    monkeypatch.setattr(onnx_export, "MAX_EXPORT_DIFF", -1.0)
    with pytest.raises(ModelError, match="differs from torch.*deleted"):
        load_model(str(folder), engine="onnx")
    assert [p for p in (tmp_path / "graphs").rglob("*") if p.is_file()] == []


@pytest.mark.slow
def test_exported_folder_and_cached_graph_encode_without_torch(onnx_embedder, tmp_path):
    """The desktop bundle: the built-in model exported without weights into calibsim's own install
    keeps its fingerprint; the same folder anywhere else runs only on trust, under its own."""
    out = onnx_export.export_folder(model_folders.resolve_model(None), tmp_path / "bundle-model")
    assert not list(out.glob("*.safetensors")) and (out / "onnx" / "model.onnx").is_file()
    script = f"""
import sys
from pathlib import Path
from calibsim_gui.core.embedding import model_folders
from calibsim_gui.core.embedding.models import load_model
loaded = []
for spec in (None, {str(out)!r}):
    embedder = load_model(spec, device="cpu", trust_folder_graph=spec is not None)
    loaded.append(embedder)
model_folders.builtin_model_path = lambda: Path({str(out)!r})      # as installed in the bundle
loaded.append(load_model(None, device="cpu"))
for embedder in loaded:
    assert embedder.engine == "onnx", embedder
    vectors = embedder.encode_batch(["A cat sleeps.", "Markets fell."], prompt="query: ")
    embedder.token_counts(["one"]), embedder.token_spans(["one"])
    print(embedder.fingerprint.id, embedder.fingerprint.digest, round(float(vectors[0] @ vectors[1]), 4))
modules = [m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules]
assert not modules, modules
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CALIBSIM_ONNX_DIR": os.environ["CALIBSIM_ONNX_DIR"]})
    assert done.returncode == 0, done.stderr
    builtin, elsewhere, bundled = (line.split() for line in done.stdout.split("\n")[:3])
    assert builtin[1] == bundled[1] == onnx_embedder.fingerprint.digest and builtin[2] == bundled[2]
    assert elsewhere[1] != builtin[1] and elsewhere[0].startswith("bundle-model+unverified-graph@")
    with pytest.raises(ModelError, match="holds no weights .* --trust-folder-graph"):
        load_model(str(out), device="cpu")


def test_a_folder_without_weights_or_graph_says_the_weights_are_missing(tmp_path):
    folder = _folder(tmp_path)
    (folder / "config.json").write_text("{}")
    with pytest.raises(ModelError, match="holds no weights"):
        load_model(str(folder), engine="onnx")
    assert isinstance(model_folders.fingerprint_folder(folder), ModelFingerprint)


@pytest.mark.slow
def test_scores_with_the_onnx_engine_use_the_built_in_reference_and_record_the_engine(onnx_embedder):
    from calibsim_gui.core.analysis.pairs import score_pairs
    from calibsim_gui.core.io.inputs import load_pairs
    from calibsim_gui.core.calibration.profile_builder import default_profile
    from calibsim_gui.core.resources import resource_path

    results = score_pairs(load_pairs(resource_path("demo", "pairs.csv")), onnx_embedder,
                          default_profile(onnx_embedder), metrics=["cosine"])
    model = results.provenance["model"]
    assert (model["engine"], model["precision"]) == ("onnx", "float32")
    assert results.frame["cosine_calibrated"].between(0, 1).all()
