"""The torch engine's prepared graph (#44): traced and checked on the first load, then run with torch
and the tokenizers library only, giving sentence-transformers' vectors; what it cannot reproduce,
or a graph that fails its check, runs through sentence-transformers with a note saying why."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.embedding import graph_preparation, torch_graph
from calibsim_gui.core.embedding.model_folders import fingerprint_folder, resolve_model
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.embedding.torch_engine import SentenceTransformerEmbedder, load_torch_model
from calibsim_gui.core.embedding.torch_graph import TorchGraphEmbedder, graph_path, recorded_check
from tests.conftest import DATA
from tests.tiny_models import write_tiny_model

REPO = Path(__file__).resolve().parents[2]
TEXTS = ["A cat sits on the mat.", "東京は日本の首都です。", "  spaces around  ", "", "word " * 100,
         "Two dogs run through a field."]
HEAVY = ("sentence_transformers", "transformers", "sympy", "sklearn")


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """The tiny model, with a graph folder of its own (the session's may hold its graph already)."""
    monkeypatch.setenv(torch_graph.GRAPH_DIR_ENV, str(tmp_path / "graphs"))
    return resolve_model(str(write_tiny_model(tmp_path / "model")))


def test_a_tiny_models_prepared_graph_gives_sentence_transformers_vectors(tiny, monkeypatch):
    first = load_model(tiny, device="cpu", engine="torch")
    assert isinstance(first, TorchGraphEmbedder) and first.engine == "torch"
    assert first.precision_note.endswith("prepared graph)")
    full = load_torch_model(tiny, device="cpu")
    monkeypatch.setattr(torch_graph, "load_torch_model", None)      # a later load never needs it
    again = load_model(tiny, device="cpu", engine="torch")
    assert isinstance(again, TorchGraphEmbedder) and again.fingerprint == full.fingerprint
    assert (again.dimension, again.max_seq_length) == (full.dimension, full.max_seq_length)
    for prompt in ("", "query: "):
        np.testing.assert_allclose(again.encode_batch(TEXTS, prompt), full.encode_batch(TEXTS, prompt), atol=1e-5)
    np.testing.assert_array_equal(again.token_counts(TEXTS), full.token_counts(TEXTS))


def test_a_prepared_graph_loads_on_one_thread_and_gives_the_threads_back(tiny, monkeypatch):
    """`torch.jit.load` holds the interpreter lock throughout and compares its constants some 5,000
    times, each a parallel region: beside two busy processes it took 2.5 s on two threads, the
    window waiting as long, and 44-120 ms on one (#44). The encodes after it use every thread."""
    import torch

    load_model(tiny, device="cpu", engine="torch")                     # prepares the graph
    embedder = load_model(tiny, device="cpu", engine="torch")
    threads, seen = torch.get_num_threads(), []
    original = torch.jit.load
    monkeypatch.setattr(torch.jit, "load", lambda *a, **kw: (seen.append(torch.get_num_threads()), original(*a, **kw))[1])
    embedder.encode_batch(TEXTS[:2])
    assert seen == [1] and torch.get_num_threads() == threads


def test_a_graph_that_fails_its_check_is_deleted_and_sentence_transformers_runs(tiny, monkeypatch):
    monkeypatch.setattr(torch_graph, "check_graph", lambda embedder, reference: 0.5)
    embedder = load_model(tiny, device="cpu", engine="torch")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert "the prepared graph is not used" in embedder.precision_note and "0.5" in embedder.precision_note
    assert not graph_path(embedder.fingerprint, "cpu", "float32").exists()


def test_a_folder_the_graph_cannot_pool_runs_through_sentence_transformers(tiny):
    pooling = Path(tiny.path) / "1_Pooling" / "config.json"
    pooling.write_text(json.dumps({"word_embedding_dimension": 16, "pooling_mode_weightedmean_tokens": True}))
    embedder = load_model(resolve_model(str(tiny.path)), device="cpu", engine="torch")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert "prepared graph cannot pool with weightedmean" in embedder.precision_note
    assert not any(torch_graph.torch_graph_dir().rglob("*.pt"))


def test_turned_off_the_torch_engine_runs_through_sentence_transformers(tiny, monkeypatch):
    monkeypatch.setenv(torch_graph.TORCH_GRAPH_ENV, "0")
    embedder = load_model(tiny, device="cpu", engine="torch")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.precision_note == "float32 (the same numbers on every machine)"


def test_graphs_are_kept_apart_by_device_type_and_precision_and_checked_bytes(tiny):
    embedder = load_model(tiny, device="cpu", engine="torch")
    fingerprint = fingerprint_folder(tiny.path, tiny.name)
    cpu = graph_path(fingerprint, "cpu", "float32")
    assert cpu == embedder.graph
    assert len({cpu, graph_path(fingerprint, "cuda", "float32"), graph_path(fingerprint, "cpu", "bfloat16"),
                graph_path(fingerprint, "mps", "float32")}) == 4
    assert graph_path(fingerprint, "cuda:1", "float32") == graph_path(fingerprint, "cuda", "float32")
    assert recorded_check(cpu, fingerprint.digest, "cpu", "float32") is not None
    cuda = graph_path(fingerprint, "cuda", "float32")         # a cpu trace copied under the cuda key
    cuda.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cpu, cuda)
    shutil.copyfile(cpu.with_suffix(".json"), cuda.with_suffix(".json"))
    assert recorded_check(cuda, fingerprint.digest, "cuda", "float32") is None
    assert recorded_check(cpu, fingerprint.digest, "cpu", "bfloat16") is None
    assert recorded_check(cpu, "0" * 64, "cpu", "float32") is None
    with open(cpu, "ab") as f:                                   # changed bytes: prepared again
        f.write(b"\0")
    assert recorded_check(cpu, fingerprint.digest, "cpu", "float32") is None
    assert isinstance(load_model(tiny, device="cpu", engine="torch"), TorchGraphEmbedder)
    assert recorded_check(cpu, fingerprint.digest, "cpu", "float32") is not None


@pytest.mark.slow
@pytest.mark.parametrize("weights", ["safetensors", "pickle"])
def test_the_apps_load_runs_sentence_transformers_while_a_child_process_prepares_the_graph(tiny, weights):
    options = {"device": "cpu", "engine": "torch", "prepare_graph": "background"}
    if weights == "pickle":                      # the child is allowed the pickles the app was allowed
        import torch
        from safetensors.torch import load_file

        stored = Path(tiny.path) / "model.safetensors"
        torch.save(load_file(stored), Path(tiny.path) / "pytorch_model.bin")
        stored.unlink()
        tiny, options["allow_pickle"] = resolve_model(str(tiny.path)), True
    first = load_model(tiny, **options)
    assert isinstance(first, SentenceTransformerEmbedder)
    assert first.precision_note.endswith("; sentence-transformers while its graph is prepared)")
    assert load_model(tiny, **options).graph_preparation is first.graph_preparation     # one child per graph
    assert first.graph_preparation.wait() == 0
    again = load_model(tiny, **options)
    assert isinstance(again, TorchGraphEmbedder) and again.precision_note.endswith("prepared graph)")
    np.testing.assert_allclose(again.encode_batch(TEXTS), first.encode_batch(TEXTS), atol=1e-5)


def test_a_preparation_stopped_when_the_app_quits_leaves_no_graph_and_starts_again(tiny):
    first = load_model(tiny, device="cpu", engine="torch", prepare_graph="background")
    graph = graph_path(first.fingerprint, "cpu", "float32")
    graph_preparation.stop_preparations()
    assert first.graph_preparation.returncode is not None
    assert not graph.exists() and not graph.with_suffix(".json").exists()
    assert not [p for p in torch_graph.torch_graph_dir().rglob("*") if p.is_file()]    # nothing half-written
    again = load_model(tiny, device="cpu", engine="torch", prepare_graph="background")
    assert again.graph_preparation is not first.graph_preparation
    graph_preparation.stop_preparations()


@pytest.mark.slow
def test_models_prepare_with_a_torch_device_prepares_the_graphs_and_names_a_folder_it_cannot(tiny, capsys):
    from calibsim_gui import cli

    pooling = Path(tiny.path) / "1_Pooling" / "config.json"
    pooling.write_text(json.dumps({"word_embedding_dimension": 16, "pooling_mode_lasttoken": True}))
    assert cli.main(["models", "--prepare", "--torch-device", "cpu", "--folder", str(tiny.path)]) == 2
    out = capsys.readouterr().out
    assert "all-MiniLM-L6-v2: torch engine's graph on cpu ready" in out
    assert "cannot pool with lasttoken" in out and "scoring will use sentence-transformers" in out
    assert len(list(torch_graph.torch_graph_dir().rglob("cpu-float32.pt"))) == 1


_LEAN_RUN = """
import runpy, sys
sys.argv = ["calibsim", *sys.argv[1:]]
try:
    runpy.run_path({main!r}, run_name="__main__")
except SystemExit as exit:
    assert not exit.code, exit.code
print("HEAVY", [m for m in {heavy!r} if m in sys.modules])
"""


@pytest.mark.slow
def test_a_second_torch_run_imports_no_sentence_transformers_and_scores_as_the_full_engine(tmp_path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("".join((DATA / "stsb" / "test.csv").read_text(encoding="utf-8").splitlines(True)[:41]),
                     encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "CALIBSIM_CACHE_DIR": str(tmp_path / "cache"),
           "CALIBSIM_TORCH_GRAPH_DIR": str(tmp_path / "graphs")}

    def score(out, *extra, code=None, **more):
        cmd = [sys.executable, "-c", code, *extra] if code else [sys.executable, str(REPO / "main.py"), *extra]
        proc = subprocess.run([*cmd, "score", str(pairs), "--engine", "torch", "--device", "cpu", "--no-cache",
                               "--out", str(tmp_path / out)], env={**env, **more}, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    score("full.csv", CALIBSIM_TORCH_GRAPH="0")
    first = score("first.csv")
    assert "prepared graph" in first.stderr
    lean = score("lean.csv", code=_LEAN_RUN.format(main=str(REPO / "main.py"), heavy=HEAVY))
    assert "HEAVY []" in lean.stdout
    full, ours = pd.read_csv(tmp_path / "full.csv"), pd.read_csv(tmp_path / "lean.csv")
    numbers = full.select_dtypes("number").columns
    assert list(ours.columns) == list(full.columns)
    np.testing.assert_allclose(ours[numbers].to_numpy(float), full[numbers].to_numpy(float), atol=1e-4)
