"""ONNX graphs that come with a model folder (#27, #30 item 2): used only once checked against the
folder's weights (every initializer with a counterpart, every token id, the check sentences), or
on request under their own fingerprint marked unverified; never under the real model's identity
or cache entries. Built from the tiny model of tests/tiny_models.py, so no test loads the real one."""

import importlib.util
import json
import shutil
import sys

import numpy as np
import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.core.embedding import file_digests, model_folders, onnx_export
from calibsim_gui.core.embedding.cache import cache_key
from calibsim_gui.core.embedding.model_folders import fingerprint_folder, resolve_model
from calibsim_gui.core.embedding.models import UNVERIFIED_NOTE, load_model
from calibsim_gui.core.embedding.onnx_engine import EXPORT_MANIFEST, UNVERIFIED_SUFFIX, shipped_fingerprint
from calibsim_gui.core.errors import ModelError
from tests.tiny_models import write_tiny_model


@pytest.fixture(autouse=True)
def _own_graph_folder(tmp_path, monkeypatch):
    """Exports and check notes of one test are never seen by another."""
    monkeypatch.setenv("CALIBSIM_ONNX_DIR", str(tmp_path / "graphs"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny model folder and the graph calibsim exports from it (checked against torch)."""
    folder = write_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny")
    graph = onnx_export.export_graph(resolve_model(str(folder)), tmp_path_factory.mktemp("graph") / "model.onnx")
    return folder, graph


def without_torch(monkeypatch):
    """As in the desktop bundle: torch cannot be found or imported (as tests/core/test_models.py does)."""
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real_find_spec(name, *a))
    monkeypatch.setitem(sys.modules, "torch", None)


def changed_graph(graph, target, change):
    """`graph` written to `target` with `change(name, array)` applied to each float initializer
    (it returns the new array, or None to keep it)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(graph))
    for index, init in enumerate(model.graph.initializer):
        if init.data_type == onnx.TensorProto.FLOAT:
            new = change(init.name, numpy_helper.to_array(init).copy())
            if new is not None:
                model.graph.initializer[index].CopyFrom(numpy_helper.from_array(new.astype(np.float32), init.name))
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(target))
    return target


def folder_with_graph(tiny, tmp_path, change=None, name="shipped"):
    """A copy of the tiny folder shipping `tiny`'s graph, changed by `change`, as onnx/model.onnx."""
    folder = shutil.copytree(tiny[0], tmp_path / name)
    changed_graph(tiny[1], folder / "onnx" / "model.onnx", change or (lambda name, array: None))
    return folder


def one_matrix_moved(name, array):
    """Adds 0.1 to the first 16 x 16 weight matrix seen (an attention projection)."""
    if array.shape == (16, 16) and not getattr(one_matrix_moved, "done", False):
        one_matrix_moved.done = True
        return array + 0.1
    return None


def unused_rows_moved(name, array):
    """Moves every row of the word embeddings that `CHECK_SENTENCES` never use (in a random
    direction: a shift along (1, 1, ...) would vanish in the LayerNorm that follows)."""
    from tokenizers import Tokenizer

    if array.shape != (30522, 16):
        return None
    tokenizer = Tokenizer.from_file(str(model_folders.builtin_model_path() / "tokenizer.json"))
    used = {i for e in tokenizer.encode_batch(list(onnx_export.CHECK_SENTENCES)) for i in e.ids}
    unused = np.setdiff1d(np.arange(len(array)), sorted(used))
    array[unused] += np.random.default_rng(3).normal(0, 0.5, (len(unused), array.shape[1]))
    return array


# --------------------------------------------------------------------------- with torch: checked


def test_a_graph_that_matches_the_weights_runs_under_the_folders_fingerprint(tiny, tmp_path, monkeypatch):
    folder = folder_with_graph(tiny, tmp_path)
    monkeypatch.setattr(onnx_export, "export_graph", lambda *a, **k: pytest.fail("the folder has a graph"))
    embedder = load_model(str(folder), engine="onnx")
    torch_embedder = load_model(str(folder), engine="torch", device="cpu")
    assert embedder.graph == folder / "onnx" / "model.onnx"
    assert embedder.fingerprint == torch_embedder.fingerprint == fingerprint_folder(folder)
    assert "UNVERIFIED" not in embedder.precision_note
    texts = ["A cat sleeps on the sofa.", "Markets fell sharply on Monday."]
    np.testing.assert_allclose(embedder.encode_batch(texts), torch_embedder.encode_batch(texts), atol=1e-5)
    without_torch(monkeypatch)               # checked once: a later run without torch trusts the note
    assert load_model(str(folder)).fingerprint == torch_embedder.fingerprint


def test_a_graph_that_differs_from_its_weights_is_refused_with_torch(tiny, tmp_path):
    one_matrix_moved.done = False
    folder = folder_with_graph(tiny, tmp_path, one_matrix_moved)
    with pytest.raises(ModelError, match="holds weights that are not its torch weights") as error:
        load_model(str(folder), engine="onnx")
    assert str(folder / "onnx" / "model.onnx") in str(error.value) and "--engine torch" in str(error.value)


def test_a_graph_moved_only_in_rows_the_check_sentences_never_use_is_refused(tiny, tmp_path, monkeypatch):
    folder = folder_with_graph(tiny, tmp_path, unused_rows_moved)
    graph, info = folder / "onnx" / "model.onnx", resolve_model(str(folder))
    reference = load_model(str(folder), engine="torch", device="cpu")
    # the old check (the sentences only) passed this graph, yet other texts score differently
    assert onnx_export.graph_difference(info, graph, reference) <= onnx_export.MAX_EXPORT_DIFF
    with pytest.raises(ModelError, match="holds weights that are not its torch weights"):
        load_model(str(folder), engine="onnx")
    # the vocabulary probe catches it on its own too (a graph whose weights were renamed or fused)
    monkeypatch.setattr(onnx_export, "initializer_mismatches", lambda *a: [])
    with pytest.raises(ModelError, match="on the token ids of its vocabulary by up to"):
        load_model(str(folder), engine="onnx")


def test_new_weights_in_a_dot_folder_give_a_new_fingerprint_and_graph(tmp_path, monkeypatch):
    """modules.json -> .t: the ONNX engine used to serve the graph of the old weights under the
    old fingerprint while torch used the new ones (scores 2.7 apart)."""
    folder = write_tiny_model(tmp_path / "dotted", transformer_path=".t")
    texts = ["A cat sleeps on the sofa.", "Markets fell sharply on Monday."]
    old = load_model(str(folder), engine="onnx")
    old_vectors = old.encode_batch(texts)
    write_tiny_model(folder, transformer_path=".t", seed=1)
    new = load_model(str(folder), engine="onnx")
    assert new.fingerprint.digest != old.fingerprint.digest and new.graph != old.graph
    assert cache_key(new, "") != cache_key(old, "")
    new_torch = load_model(str(folder), engine="torch", device="cpu")
    np.testing.assert_allclose(new.encode_batch(texts), new_torch.encode_batch(texts), atol=1e-5)
    assert not np.allclose(new.encode_batch(texts), old_vectors, atol=1e-3)
    write_tiny_model(folder, transformer_path=".t", seed=2)
    without_torch(monkeypatch)                   # no graph for these weights yet, and none can be made
    with pytest.raises(ModelError, match="torch is not installed to export one"):
        load_model(str(folder))


# --------------------------------------------------------------------------- without torch: only on request


@pytest.mark.parametrize("change", [None, one_matrix_moved, unused_rows_moved], ids=["same", "differing", "rows"])
def test_without_torch_a_folder_graph_runs_only_on_request_under_its_own_fingerprint(tiny, tmp_path, monkeypatch,
                                                                                    change):
    one_matrix_moved.done = False
    folder = folder_with_graph(tiny, tmp_path, change)
    real = fingerprint_folder(folder)
    without_torch(monkeypatch)
    with pytest.raises(ModelError, match="cannot be checked: torch is not installed.*--trust-folder-graph"):
        load_model(str(folder))
    embedder = load_model(str(folder), trust_folder_graph=True)
    assert embedder.engine == "onnx" and UNVERIFIED_NOTE in embedder.precision_note
    assert embedder.fingerprint.name == "shipped" + UNVERIFIED_SUFFIX and embedder.fingerprint.digest != real.digest
    assert cache_key(embedder, "") not in {real.id, real.id + "+onnx"}
    int8 = load_model(str(folder), trust_folder_graph=True, precision="int8")
    assert UNVERIFIED_NOTE in int8.precision_note and int8.fingerprint == embedder.fingerprint


def test_two_unverified_graphs_of_one_folder_never_share_a_fingerprint(tiny, tmp_path, monkeypatch):
    one_matrix_moved.done = False
    same = folder_with_graph(tiny, tmp_path, name="a")
    moved = folder_with_graph(tiny, tmp_path, one_matrix_moved, name="b")
    shutil.move(moved, tmp_path / "b-moved")
    shutil.move(same, tmp_path / "b")                       # same folder name and files, other graph
    without_torch(monkeypatch)
    first = load_model(str(tmp_path / "b"), trust_folder_graph=True).fingerprint
    second = load_model(str(tmp_path / "b-moved"), trust_folder_graph=True).fingerprint
    assert first.digest != second.digest


def test_the_cli_says_unverified_on_stderr_and_in_the_output(tiny, tmp_path, monkeypatch, capsys):
    folder = folder_with_graph(tiny, tmp_path)
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": ["A cat sleeps.", "Markets fell."],
                  "sentence2": ["A cat is sleeping.", "I like soup."]}).to_csv(pairs, index=False)
    without_torch(monkeypatch)
    out = tmp_path / "out.json"
    assert cli.main(["score", str(pairs), "--model", str(folder), "--out", str(out)]) == 2
    assert "--trust-folder-graph" in capsys.readouterr().err and not out.exists()
    assert cli.main(["score", str(pairs), "--model", str(folder), "--trust-folder-graph", "--out", str(out)]) == 0
    assert "UNVERIFIED" in capsys.readouterr().err
    assert UNVERIFIED_NOTE in out.read_text() and UNVERIFIED_SUFFIX in out.read_text()


# --------------------------------------------------------------------------- re-sealed export folders (#30 item 2)


def resealed_as_builtin(tiny, tmp_path):
    """calibsim's export format rebuilt by hand: the built-in model's configs and tokenizer, a
    graph that is not the built-in model's, and a manifest whose hashes are all recomputed and
    that names the built-in model as its source. Named all-MiniLM-L6-v2."""
    builtin = model_folders.builtin_model_path()
    folder = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(builtin, folder, ignore=shutil.ignore_patterns("*.safetensors"))
    graph = changed_graph(tiny[1], folder / "onnx" / "model.onnx", lambda name, array: None)
    files = {rel: file_digests.file_sha256(path) for rel, path in model_folders.model_files(builtin)}
    (folder / EXPORT_MANIFEST).write_text(json.dumps({
        "source": fingerprint_folder(builtin, model_folders.BUILTIN_MODEL_NAME).to_dict(), "files": files,
        "graph_sha256": file_digests.file_sha256(graph)}))
    return folder


@pytest.mark.parametrize("torch_installed", [True, False], ids=["torch", "no-torch"])
def test_a_resealed_export_folder_never_takes_the_built_in_models_identity(tiny, tmp_path, monkeypatch,
                                                                         torch_installed):
    folder = resealed_as_builtin(tiny, tmp_path)
    builtin = fingerprint_folder(model_folders.builtin_model_path(), model_folders.BUILTIN_MODEL_NAME)
    if not torch_installed:
        without_torch(monkeypatch)
    with pytest.raises(ModelError, match="holds no weights .* to compare it with.*--trust-folder-graph"):
        load_model(str(folder))
    embedder = load_model(str(folder), trust_folder_graph=True)
    assert embedder.fingerprint.digest != builtin.digest and embedder.fingerprint.id != builtin.id
    assert embedder.fingerprint.name == "all-MiniLM-L6-v2" + UNVERIFIED_SUFFIX
    assert cache_key(embedder, "") not in {builtin.id, builtin.id + "+onnx"}
    assert UNVERIFIED_NOTE in embedder.precision_note


def test_only_the_installed_built_in_folder_keeps_its_manifests_identity(tiny, tmp_path, monkeypatch):
    """The desktop bundle ships the built-in model as an export folder in calibsim's own install:
    there (and only there) the manifest names the source, once every listed hash is checked."""
    builtin = fingerprint_folder(model_folders.builtin_model_path(), model_folders.BUILTIN_MODEL_NAME)
    folder = resealed_as_builtin(tiny, tmp_path)
    info = resolve_model(str(folder))
    assert shipped_fingerprint(info) is None
    monkeypatch.setattr(model_folders, "builtin_model_path", lambda: folder)
    assert shipped_fingerprint(info).digest == builtin.digest
    (folder / "tokenizer.json").write_text((folder / "tokenizer.json").read_text().replace("[UNK]", "[UNKNOWN]"))
    with pytest.raises(ModelError, match="changed after export"):
        shipped_fingerprint(info)
