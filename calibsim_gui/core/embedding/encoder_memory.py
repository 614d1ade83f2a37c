"""The encoder's working memory, checked against the memory budget before the first batch (#43).

A run used to count the texts' vectors and output columns only: 100 pairs of ~300-word texts
peaked at 2.06 GB under a 300 MB budget, the encoder's activations (batch x tokens x width x
layers, and the attention scores, tokens squared) being most of it. `check_encoder_memory`
estimates them from the model's config.json and the batches `iter_encode` plans (their real
padded lengths), and refuses before anything is encoded, naming the batch size that fits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding.model_folders import json_dict, transformer_folder
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.io.memory import check_budget, default_budget, encoder_bytes, format_size


def encoder_shape(embedder) -> dict | None:
    """The transformer's layers, width, feed-forward width, heads and weight bytes (float32, from
    its config.json), or None when the embedder has no such config (a test double, a plug-in)."""
    info = getattr(embedder, "info", None)
    path = getattr(info, "path", None)
    try:
        config = json_dict(transformer_folder(Path(path)) / "config.json") if path else {}
    except CalibsimError:
        return None
    names = {"layers": ("num_hidden_layers", "n_layers", "num_layers"), "width": ("hidden_size", "d_model", "dim"),
             "ff_width": ("intermediate_size", "hidden_dim", "d_ff"), "heads": ("num_attention_heads", "n_heads")}
    shape = {key: next((config[n] for n in options if type(config.get(n)) is int and config[n] > 0), None)
             for key, options in names.items()}
    if None in shape.values():
        return None
    vocab = config.get("vocab_size") if type(config.get("vocab_size")) is int else 0
    positions = config.get("max_position_embeddings") if type(config.get("max_position_embeddings")) is int else 0
    width, ff = shape["width"], shape["ff_width"]
    shape["weights"] = 4 * ((vocab + positions) * width + shape["layers"] * (4 * width * width + 2 * width * ff))
    return shape


def check_encoder_memory(embedder, batches: list[np.ndarray], counts: np.ndarray, *, batch_size: int,
                         memory_budget: int | None, run_bytes: int = 0, path=None) -> None:
    """Refuse (InputError naming `path`) when the encoder's weights and the working memory of its
    largest planned batch (texts of token `counts`, padded to the longest of each batch), with
    the rest of the run (`run_bytes`), exceed `memory_budget` (None: the default budget)."""
    shape = encoder_shape(embedder)
    if shape is None or not batches:
        return
    tokens = int(max(counts[batch].max() for batch in batches if len(batch)))
    need = max(encoder_bytes(len(batch), int(counts[batch].max()), **shape) for batch in batches if len(batch))
    budget = default_budget() if memory_budget is None else memory_budget
    fits = next((b for b in (256, 128, 64, 32, 16, 8, 4, 2, 1)
                 if b < batch_size and run_bytes + encoder_bytes(b, tokens, **shape) <= budget), None)
    smaller = (f"encode in smaller batches (--batch-size {fits} needs about "
               f"{format_size(run_bytes + encoder_bytes(fits, tokens, **shape))})" if fits
               else "give shorter texts (a model reads at most its max length), split the input")
    check_budget(run_bytes + need, memory_budget, path=path,
                 what=f"encoding in batches of up to {batch_size} texts of up to {tokens:,} tokens with "
                      f"{embedder.info.name} ({shape['layers']} layers of width {shape['width']}, "
                      f"{format_size(shape['weights'])} of weights) on top of the rest of the run, which",
                 fix=smaller)
