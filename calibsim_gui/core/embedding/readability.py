"""Texts a model cannot read: every token of the text unknown to its vocabulary, or special.

An English WordPiece model reads "🚗", "😀😀", a zero-width space or a sentence in Amharic or
Cherokee as ``[CLS] [UNK] … [SEP]`` (or ``[CLS] [SEP]``): every such text gets nearly the same
vector, so any two of them score as near-identical (cosine 1.000). Nothing about their meaning
reached the model, so calibsim gives their pairs no calibrated score and says why
(`UNREADABLE_COLUMN`). The model's own tokenizer decides (`known_token_counts`, which both
engines offer); an embedder without one (no tokenizer to ask) flags nothing.
"""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np

from calibsim_gui.core.embedding.encoding import CUT_CHARS_PER_TOKEN, text_prefix

UNREADABLE_COLUMN = "unreadable"
UNREADABLE_NOTE = ("no token the model knows: only unknown or special tokens (emoji, symbols, "
                   "invisible characters, a script outside its vocabulary)")


def unknown_token_ids(tokenizer) -> set[int]:
    """Ids of a Rust ``tokenizers.Tokenizer``'s special tokens and of its unknown token."""
    ids = {i for i, token in tokenizer.get_added_tokens_decoder().items() if token.special}
    unknown = getattr(tokenizer.model, "unk_token", None)
    if unknown is not None:
        found = tokenizer.token_to_id(unknown)
        ids |= set() if found is None else {found}
    else:                                   # Unigram keeps its unknown token as an id
        unk_id = json.loads(tokenizer.to_str()).get("model", {}).get("unk_id")
        ids |= {unk_id} if isinstance(unk_id, int) else set()
    return ids


def known_token_counts(tokenizer, texts: Sequence[str], unknown: set[int]) -> np.ndarray:
    """Tokens of each text that are neither special nor unknown (`unknown_token_ids`), read by a
    Rust ``tokenizers.Tokenizer`` without padding.

    Returns
    -------
    ndarray of shape (len(texts),), int64
    """
    if not len(texts):
        return np.zeros(0, dtype=np.int64)
    encodings = tokenizer.encode_batch([str(t) for t in texts], add_special_tokens=False)
    return np.array([sum(i not in unknown for i in e.ids) for e in encodings], dtype=np.int64)


def unreadable_texts(embedder, texts: Sequence[str]) -> np.ndarray | None:
    """True for each text the embedder's tokenizer finds no known token in; None when the embedder
    has no tokenizer to ask (its ``known_token_counts`` is missing or returns None). A text past
    `CUT_CHARS_PER_TOKEN` x the model's max length characters is judged on that part (the model
    reads no further), so a huge text is never tokenised whole."""
    counts = getattr(embedder, "known_token_counts", None)
    limit = getattr(embedder, "max_seq_length", None)
    if limit:
        texts = [text_prefix(str(t), limit * CUT_CHARS_PER_TOKEN) for t in texts]
    found = counts(list(texts)) if counts is not None else None
    return None if found is None else np.asarray(found) == 0


def side_marks(flags: np.ndarray | None, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per pair: "a", "b", "both" or "" — which of its texts (positions `first`, `second` in the
    texts `flags` is over) is flagged."""
    if flags is None or not len(flags):
        return np.full(len(first), "", dtype=object)
    a, b = flags[first], flags[second]
    return np.where(a & b, "both", np.where(a, "a", np.where(b, "b", ""))).astype(object)
