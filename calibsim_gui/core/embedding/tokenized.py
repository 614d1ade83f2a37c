"""Tokenising as sentence-transformers does, with the folder's ``tokenizer.json`` alone.

The engines that run a prepared graph (`onnx_engine.OnnxEmbedder`, `torch_graph.TorchGraphEmbedder`)
turn texts into token ids here, with the Rust ``tokenizers`` library only (imported inside), set
up from the folder's files as sentence-transformers sets up its tokenizer: lower-casing, truncation
at the model's max length on the side its config names, padding with its pad token.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding.model_folders import ModelInfo, json_dict
from calibsim_gui.core.embedding.prompts import PromptedEmbedder
from calibsim_gui.core.embedding.readability import known_token_counts, unknown_token_ids
from calibsim_gui.core.errors import ModelError


class TokenizedEmbedder(PromptedEmbedder):
    """The tokenizer half of an engine that runs a graph on token ids: subclasses call
    `set_tokenizer` in their ``__init__`` and feed `token_arrays` to their graph."""

    def set_tokenizer(self, info: ModelInfo, stack, who: str, fix: str) -> None:
        """Read the tokenizer of `info`'s folder for `stack` (`onnx_engine.ModuleStack`); `who`
        (the engine) and `fix` name the error of a folder without ``tokenizer.json``.

        Raises
        ------
        ModelError
            When the folder has no readable ``tokenizer.json``.
        """
        from tokenizers import Tokenizer, normalizers

        tokenizer_dir = stack.tokenizer_dir or Path(info.path)
        tokenizer_file = tokenizer_dir / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise ModelError(f"{who} needs {tokenizer_file} (a fast tokenizer). " + fix)
        try:
            self._batched = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:
            raise ModelError(f"Cannot read {tokenizer_file}: {exc}") from exc
        if stack.do_lower_case:
            existing = self._batched.normalizer
            self._batched.normalizer = normalizers.Sequence(
                [normalizers.Lowercase()] + ([existing] if existing is not None else []))
        config = json_dict(tokenizer_dir / "tokenizer_config.json")
        self._batched.no_truncation()
        self._batched.no_padding()
        self._special_ids = {i for i, token in self._batched.get_added_tokens_decoder().items() if token.special}
        self._plain_tokenizer = None
        self._plain_lock = threading.Lock()
        self._prompt_lengths: dict[str, int] = {}
        if stack.max_seq_length:
            self._batched.enable_truncation(stack.max_seq_length,
                                            direction=str(config.get("truncation_side", "right")))
        pad_token = config.get("pad_token")
        pad_token = pad_token.get("content") if isinstance(pad_token, dict) else pad_token
        pad_token = pad_token if isinstance(pad_token, str) else "[PAD]"
        self._batched.enable_padding(direction=str(config.get("padding_side", "right")),
                                     pad_id=self._batched.token_to_id(pad_token) or 0, pad_token=pad_token)

    def token_arrays(self, texts: list[str], prompt: str = "") -> dict:
        """Token ids of `texts` with `prompt` before each, truncated and padded as one batch:
        ``input_ids``, ``attention_mask`` and ``token_type_ids``, each ndarray of shape (len(texts),
        tokens), int64."""
        encodings = self._batched.encode_batch([prompt + str(t) for t in texts])
        return {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64)}

    @property
    def _plain(self):
        """The tokenizer without truncation or padding (token counts and spans, prompt lengths),
        made on first use (~0.1 s): a run whose texts are all in the embedding cache needs none."""
        with self._plain_lock:
            if self._plain_tokenizer is None:
                from tokenizers import Tokenizer

                plain = Tokenizer.from_str(self._batched.to_str())
                plain.no_truncation()
                plain.no_padding()
                self._plain_tokenizer = plain
            return self._plain_tokenizer

    def prompt_length(self, prompt: str) -> int:
        """Tokens of `prompt` with the special tokens around it, less a trailing special one
        (sentence-transformers' ``prompt_length``)."""
        if prompt not in self._prompt_lengths:
            ids = self._plain.encode(prompt).ids
            self._prompt_lengths[prompt] = len(ids) - (1 if ids and ids[-1] in self._special_ids else 0)
        return self._prompt_lengths[prompt]

    def token_counts(self, texts: list[str]) -> np.ndarray:
        """Tokens each text has before truncation, special tokens included.

        Returns
        -------
        ndarray of shape (len(texts),), int64
        """
        encodings = self._plain.encode_batch([str(t) for t in texts]) if texts else []
        return np.array([len(e.ids) for e in encodings], dtype=np.int64)

    def token_spans(self, texts: list[str]) -> list[np.ndarray]:
        """Character span ``(start, end)`` of every token of each text, special tokens left out.

        Returns
        -------
        list of ndarray of shape (n_tokens, 2), int64
        """
        encodings = self._plain.encode_batch([str(t) for t in texts], add_special_tokens=False) if texts else []
        return [np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2) for e in encodings]

    def known_token_counts(self, texts: list[str]) -> np.ndarray:
        """Tokens of each text that are neither special nor unknown (`readability`).

        Returns
        -------
        ndarray of shape (len(texts),), int64
        """
        return known_token_counts(self._plain, texts, unknown_token_ids(self._plain))
