"""Realistic second models for tests and benchmarks, derived from the built-in model's weights.

Each is a plain sentence-transformers folder (safetensors weights, library modules only), so
calibsim loads it like any local model. They differ from all-MiniLM-L6-v2 the way other
real models do:

- ``compressed``: CLS-token pooling (a token the model was not trained to pool), no Normalize
  module, and a fixed offset direction: cosines bunch near the top (random pairs ~0.8, like
  multilingual-e5) and vectors are ~10 long, not unit length.
- ``shallow``: the first 3 of the 6 transformer layers, mean pooling, normalised: an
  undertrained-looking model (random pairs ~0.65).
- ``shifted``: the full model with a fixed direction added to every token's output before
  mean pooling and normalisation (the common "anisotropy" offset; random pairs ~0.45).

Run ``python -m tests.derived_models`` to build them into a temporary folder and print their
mean random-pair cosine on AG News sentences.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

DERIVED_MODELS = {
    "compressed": dict(layers=6, pooling="cls", normalize=False, shift=6.0),
    "shallow": dict(layers=3, pooling="mean", normalize=True, shift=0.0),
    "shifted": dict(layers=6, pooling="mean", normalize=True, shift=2.5),
}
"""Kind -> transformer layers kept, pooling, Normalize module, length of the direction added to
every token's output (the last layer's LayerNorm bias)."""
SHIFT_SEED = 15
_TRANSFORMER = {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}
_POOLING = {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}
_NORMALIZE = {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
_TOKENIZER_FILES = ("config_sentence_transformers.json", "sentence_bert_config.json", "special_tokens_map.json",
                    "tokenizer.json", "tokenizer_config.json", "vocab.txt")


def _write_model(source: Path, folder: Path, weights: dict, *, layers: int, pooling: str,
                 normalize: bool) -> Path:
    """A model folder: the built-in tokenizer, `weights` of a BERT with `layers` layers,
    `pooling` ("mean" or "cls") and, if `normalize`, unit-length outputs."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    for name in _TOKENIZER_FILES:
        shutil.copyfile(source / name, folder / name)
    config = json.loads((source / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_hidden_layers": layers}, indent=2))
    save_file(weights, str(folder / "model.safetensors"))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": config["hidden_size"],
        "pooling_mode_cls_token": pooling == "cls", "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}, indent=2))
    modules = [_TRANSFORMER, _POOLING] + [_NORMALIZE] * normalize
    (folder / "modules.json").write_text(json.dumps(modules, indent=2))
    return folder


def write_derived_models(target, kinds=DERIVED_MODELS) -> dict[str, Path]:
    """Write the derived model folders ``<target>/minilm-<kind>``.

    Parameters
    ----------
    target : str or Path
        Folder to write into (created if missing).
    kinds : sequence of str
        Any of `DERIVED_MODELS`.

    Returns
    -------
    dict kind -> Path of its model folder
    """
    from safetensors.numpy import load_file

    from calibsim_gui.core.embedding.model_folders import builtin_model_path

    unknown = set(kinds) - set(DERIVED_MODELS)
    if unknown:
        raise ValueError(f"unknown derived models {sorted(unknown)}; choose from {list(DERIVED_MODELS)}")
    source = builtin_model_path()
    weights = load_file(str(source / "model.safetensors"))
    out = {}
    for kind in kinds:
        spec = DERIVED_MODELS[kind]
        kept = {k: v for k, v in weights.items()
                if not k.startswith("encoder.layer.") or int(k.split(".")[2]) < spec["layers"]}
        bias = f"encoder.layer.{spec['layers'] - 1}.output.LayerNorm.bias"
        direction = np.random.default_rng(SHIFT_SEED).standard_normal(kept[bias].shape)
        kept[bias] = (kept[bias] + spec["shift"] * direction / np.linalg.norm(direction)).astype(np.float32)
        out[kind] = _write_model(source, Path(target) / f"minilm-{kind}", kept, layers=spec["layers"],
                                 pooling=spec["pooling"], normalize=spec["normalize"])
    return out


def random_pair_cosine(embedder, texts, *, seed: int = 0) -> float:
    """Mean cosine of random pairs of distinct `texts` (each text paired with a shuffled other)."""
    vectors = embedder.encode_batch(list(texts)).astype(np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    n = len(vectors)
    partner = (np.arange(n) + np.random.default_rng(seed).integers(1, n, size=n)) % n
    return float(np.einsum("ij,ij->i", vectors, vectors[partner]).mean())


def agnews_sentences(path, n: int = 200) -> list[str]:
    """The first `n` distinct AG News descriptions of `path` (label,title,description CSV)."""
    import pandas as pd

    return list(dict.fromkeys(pd.read_csv(path)["description"].astype(str)))[:n]


if __name__ == "__main__":
    import os
    import tempfile

    from calibsim_gui.core.embedding.models import load_model

    os.environ["HF_HUB_OFFLINE"] = "1"
    texts = agnews_sentences(Path(__file__).resolve().parents[2] / "shared/data/agnews/test.csv")
    with tempfile.TemporaryDirectory() as tmp:
        folders = {"built-in": None, **write_derived_models(tmp)}
        for kind, folder in folders.items():
            embedder = load_model(None if folder is None else str(folder), device="cpu", precision="float32")
            lengths = np.linalg.norm(embedder.encode_batch(texts[:20]), axis=1)
            print(f"{kind:<11} {embedder.fingerprint.id:<40} random-pair cosine "
                  f"{random_pair_cosine(embedder, texts):.3f}  vector length {lengths.mean():.2f}")
