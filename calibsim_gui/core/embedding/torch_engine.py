"""The torch engine: a sentence-transformers model, in float32 or (checked) bfloat16.

torch and sentence-transformers are imported inside the functions that need them.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding.devices import bfloat16_support, resolve_device
from calibsim_gui.core.embedding.model_folders import (
    ModelFingerprint,
    ModelInfo,
    fingerprint_folder,
    has_weights,
    int_or_none,
    remote_code_refusal,
)
from calibsim_gui.core.embedding.prompts import PromptedEmbedder, PromptSettings, choose_prompts
from calibsim_gui.core.embedding.readability import known_token_counts, unknown_token_ids
from calibsim_gui.core.errors import ModelError
from calibsim_gui.core.geometry.metrics import pair_scores
from calibsim_gui.core.references.anchors import builtin_anchors

BFLOAT16_MAX_ANCHOR_CHANGE = 0.01
# Digests of models whose STS-B Spearman (x100) in bfloat16 stays within 0.1 of float32, measured
# with calibsim's own scoring path (benchmarks/precision.py): they skip the anchor check.
_BFLOAT16_VERIFIED = {
    "c4a57a7f2011f2562b4fb34246d45976f6bb611ae1810569e0bd235637e8475f",  # built-in all-MiniLM-L6-v2
}


def _anchor_check(model, bf16_model) -> float:
    """Largest change of the built-in anchor pairs' cosines between float32 and bfloat16."""
    pairs = builtin_anchors().pairs
    texts = [p.text_a for p in pairs] + [p.text_b for p in pairs]
    scores = []
    for m in (model, bf16_model):
        vectors = np.asarray(m.encode(texts, batch_size=64, show_progress_bar=False, prompt=""), dtype=np.float32)
        scores.append(pair_scores(*np.split(vectors, 2), ["cosine"])["cosine"])
    return float(np.abs(scores[0] - scores[1]).max())


def _float32_outputs(module, args, output: dict) -> dict:
    import torch

    return {k: v.float() if torch.is_tensor(v) and v.dtype == torch.bfloat16 else v for k, v in output.items()}


def _to_bfloat16(model):
    """`model` with its transformer (nearly all the work) in bfloat16; pooling, dense layers and
    normalisation run in float32 on the transformer's outputs, so unit vectors stay unit."""
    import torch

    transformer = model[0]
    transformer.to(torch.bfloat16)
    transformer.register_forward_hook(_float32_outputs)
    return model


def precision_choice(precision: str, device: str, digest: str) -> tuple[str, str] | None:
    """The precision the model with `digest` runs in on `device` when `precision` is asked, and a
    note saying why; None when only the anchor check can tell (``auto`` on a device with native
    bfloat16, for a model not verified: see `load_model`)."""
    reason = bfloat16_support(device)
    if precision == "float32":
        return "float32", "float32 (the same numbers on every machine)"
    if precision == "bfloat16":
        slow = "" if reason is None else f"; {reason}, so it may run slower than float32"
        return "bfloat16", f"bfloat16 (asked{slow})"
    if reason is not None:
        return "float32", f"float32 (auto: {reason})"
    if digest in _BFLOAT16_VERIFIED:
        return "bfloat16", "bfloat16 (auto: native support, verified on STS-B)"
    return None


def _choose_precision(model, precision: str, device: str, digest: str):
    """The model to use, its precision and a note saying why (see `load_model`)."""
    choice = precision_choice(precision, device, digest)
    if choice is not None:
        return (_to_bfloat16(model) if choice[0] == "bfloat16" else model), *choice
    import copy

    bf16_model = _to_bfloat16(copy.deepcopy(model))
    change = _anchor_check(model, bf16_model)
    if change > BFLOAT16_MAX_ANCHOR_CHANGE:
        return model, "float32", (f"float32 (auto: bfloat16 moved anchor scores by up to {change:.3f}, "
                                  f"more than {BFLOAT16_MAX_ANCHOR_CHANGE})")
    return bf16_model, "bfloat16", f"bfloat16 (auto: native support, anchor scores moved <= {change:.4f})"


class SentenceTransformerEmbedder(PromptedEmbedder):
    """A loaded sentence-transformers model that encodes batches of texts.

    Attributes
    ----------
    fingerprint : ModelFingerprint
    info : ModelInfo
    engine : str
        ``"torch"`` (`calibsim_gui.core.embedding.onnx_engine.OnnxEmbedder` is the ``"onnx"`` one).
    device : str
        The device the model runs on.
    precision : str
        ``"float32"`` or ``"bfloat16"``: the dtype of the weights and activations. Embeddings are
        returned as float32 either way.
    precision_note : str
        Why this precision was chosen, for users (e.g. ``"float32 (auto: this CPU has no ...)"``).
    dimension : int
        Length of each embedding.
    max_seq_length : int or None
        Tokens beyond this are truncated by the model.
    prompts : PromptSettings
        The prompts texts are encoded with (`prompt`, `query_prompt`, `document_prompt`).
    """

    engine = "torch"

    def __init__(self, model, info: ModelInfo, fingerprint: ModelFingerprint, device: str,
                 precision: str = "float32", precision_note: str = "float32",
                 prompts: PromptSettings | None = None):
        self._model = model
        self.prompts = choose_prompts(info) if prompts is None else prompts
        self.info = info
        self.fingerprint = fingerprint
        self.device = device
        self.precision = precision
        self.precision_note = precision_note
        self.dimension = int(stated_dimension(model) or info.dimension)
        self.max_seq_length = int_or_none(getattr(model, "max_seq_length", None)) or info.max_seq_length
        self._plain_tokenizer = None
        self._plain_lock = threading.Lock()

    @property
    def _plain(self):
        """The model's Rust tokenizer cloned without truncation or padding, made on first use; None
        for a slow tokenizer. Its batch encoding releases the interpreter lock, where the HF
        tokenizer's call builds Python lists for every text while holding it, starving the GUI thread
        beside it. A clone, because the HF tokenizer sets truncation and padding on its own backend
        for each call the model's encoding makes."""
        with self._plain_lock:
            tokenizer = self._model.tokenizer
            if self._plain_tokenizer is None and getattr(tokenizer, "is_fast", False):
                from tokenizers import Tokenizer

                plain = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
                plain.no_truncation()
                plain.no_padding()
                plain.encode_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
                self._plain_tokenizer = plain
            return self._plain_tokenizer

    def encode_batch(self, texts: list[str], prompt: str = "") -> np.ndarray:
        """Embed `texts` exactly as the model outputs them, with `prompt` put before each.

        The prompt is always passed to sentence-transformers explicitly (``""`` for none), so
        the folder's ``default_prompt_name`` is never applied behind calibsim's back, and a
        Pooling module with ``include_prompt: false`` leaves the prompt's tokens out.

        Returns
        -------
        ndarray of shape (len(texts), dimension), float32
        """
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        import torch

        try:
            with torch.inference_mode():
                vectors = self._model.encode(
                    list(texts), batch_size=len(texts), convert_to_numpy=True, show_progress_bar=False,
                    prompt=str(prompt or ""),
                )
        # configs that misfit the weights; the tokenizers library raises a bare Exception (a vocabulary
        # without the [UNK] token its special_tokens_map.json names)
        except Exception as exc:
            raise ModelError(f"The model in {self.info.path} failed on a batch of {len(texts)} texts: "
                             f"{type(exc).__name__}: {exc}. {CONFIG_FIX}") from exc
        return np.asarray(vectors, dtype=np.float32)

    def token_counts(self, texts: list[str]) -> np.ndarray:
        """Tokens each text has before truncation, special tokens included.

        Returns
        -------
        ndarray of shape (len(texts),), int64
        """
        if not texts:
            return np.zeros(0, dtype=np.int64)
        if self._plain is not None:
            return np.array([len(e) for e in self._plain.encode_batch(list(texts))], dtype=np.int64)
        encoded = self._model.tokenizer(
            list(texts), truncation=False, padding=False, add_special_tokens=True, verbose=False
        )
        return np.array([len(ids) for ids in encoded["input_ids"]], dtype=np.int64)

    def token_spans(self, texts: list[str]) -> list[np.ndarray]:
        """Character span ``(start, end)`` of every token of each text, special tokens left out
        (for `calibsim_gui.core.embedding.chunking`: a run of tokens maps back to a substring).

        Returns
        -------
        list of ndarray of shape (n_tokens, 2), int64

        Raises
        ------
        ModelError
            When the model's tokenizer cannot map tokens back to characters (a slow tokenizer).
        """
        if not texts:
            return []
        if self._plain is None:
            raise ModelError(f"The tokenizer of {self.info.path} cannot map tokens back to the text "
                             "(it has no tokenizer.json), so long texts cannot be split into chunks. "
                             "Fix: score with --long-texts truncate, or use a model with a fast tokenizer.")
        encodings = self._plain.encode_batch(list(texts), add_special_tokens=False)
        return [np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2) for e in encodings]

    def known_token_counts(self, texts: list[str]) -> np.ndarray | None:
        """Tokens of each text that are neither special nor unknown (`readability`); None for a
        slow tokenizer.

        Returns
        -------
        ndarray of shape (len(texts),), int64, or None
        """
        plain = self._plain
        return None if plain is None else known_token_counts(plain, texts, unknown_token_ids(plain))


CONFIG_FIX = ("Fix: check the folder's configs (config.json, sentence_bert_config.json, modules.json, "
              "1_Pooling/config.json) against its weights, or use the folder as it was published.")


def stated_dimension(model):
    """The sentence-embedding dimension a loaded sentence-transformers model states (its method's
    name changed in sentence-transformers 6)."""
    get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return get_dim()


def _check_loaded(model, info: ModelInfo) -> None:
    """Refuse a loaded model whose configs do not fit its weights before any text meets it: a text
    length beyond its position embeddings, or a probe text that gives no finite vector of the
    dimension the model states."""
    first = model[0] if len(model) else None
    config = getattr(getattr(first, "auto_model", None), "config", None)
    positions = int_or_none(getattr(config, "max_position_embeddings", None))
    length = int_or_none(getattr(model, "max_seq_length", None))
    if positions and (length is None or length > positions):
        raise ModelError(f"The model in {info.path} reads texts of up to {length} tokens, but it has "
                         f"{positions} positions (max_position_embeddings in config.json), so long texts "
                         f"could not be encoded. Fix: set max_seq_length in sentence_bert_config.json "
                         f"to at most {positions}.")
    try:
        dimension = stated_dimension(model)
        probe = np.asarray(model.encode(["calibsim"], convert_to_numpy=True, show_progress_bar=False))
    except Exception as exc:
        raise ModelError(f"The model in {info.path} cannot encode a text: {type(exc).__name__}: {exc}. "
                         + CONFIG_FIX) from exc
    finite = bool(np.isfinite(probe).all())
    if probe.shape != (1, dimension) or not finite:
        raise ModelError(f"The model in {info.path} gives a probe text a vector of shape {probe.shape}"
                         f"{'' if finite else ' holding NaN or infinity'}, where its configs state "
                         f"{dimension!r} dimensions. " + CONFIG_FIX)


def check_torch_folder(info: ModelInfo, allow_pickle: bool = False) -> None:
    """Refuse a folder the torch engine must not load: one that needs remote code, holds no
    weights, or holds pickle-only weights without `allow_pickle`.

    Raises
    ------
    ModelError
        Naming the folder and the fix.
    """
    if info.needs_remote_code:
        raise ModelError(remote_code_refusal(info))
    if not has_weights(Path(info.path)):
        raise ModelError(f"Cannot load {info.path}: it holds no weights (model.safetensors). Copy the "
                         "whole model folder, weights included.")
    if not info.safe_weights and not allow_pickle:
        raise ModelError(
            f"Refusing to load {info.path}: its weights are stored as pickles (*.bin), which can "
            "run code when loaded. Convert them to safetensors, or if you trust the folder, "
            "allow it with --allow-pickle on the command line."
        )


def load_torch_model(info: ModelInfo, *, device: str = "auto", precision: str = "float32",
                     allow_pickle: bool = False, prompts: PromptSettings | None = None) -> SentenceTransformerEmbedder:
    """The torch engine for `info`'s model (see `calibsim_gui.core.embedding.models.load_model`).

    Raises
    ------
    ModelError
        If the folder needs remote code, holds no weights or pickle-only weights without
        `allow_pickle`, the device is unusable, or the model fails to load.
    """
    check_torch_folder(info, allow_pickle)
    resolved_device = resolve_device(device)
    fingerprint = fingerprint_folder(info.path, info.name)

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        model = SentenceTransformer(
            str(info.path),
            device=resolved_device,
            trust_remote_code=False,
            local_files_only=True,
            model_kwargs=None if allow_pickle else {"use_safetensors": True},
        )
    except Exception as exc:
        raise ModelError(f"Could not load the model in {info.path}: {type(exc).__name__}: {exc}") from exc
    _check_loaded(model, info)
    model, chosen, note = _choose_precision(model, precision, resolved_device, fingerprint.digest)
    return SentenceTransformerEmbedder(model, info, fingerprint, resolved_device, chosen, note,
                                       choose_prompts(info) if prompts is None else prompts)
