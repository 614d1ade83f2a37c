"""Turning texts into embeddings: batched, deduplicated, cached, cancellable."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from calibsim_gui.core.cache import cache_key
from calibsim_gui.core.errors import Cancelled, InputError
from calibsim_gui.core.models import embedder_prompt

Progress = Callable[[int, int, str], None]
ShouldStop = Callable[[], bool]

# Tokenizers give an ASCII text at most one token per character, plus a few special tokens
# ([CLS], [SEP], a sentencepiece word start): shorter texts need no tokenizing to know they fit.
SPECIAL_TOKEN_ROOM = 8
MAX_BATCH_SIZE = 4096
"""Largest batch: more texts at once only adds memory (padding, activations), not speed."""


@dataclass(frozen=True)
class EncodingResult:
    """Embeddings of the requested texts, row-aligned with them, and how they were obtained.

    Attributes
    ----------
    embeddings : ndarray of shape (n_texts, dim), float32
    n_unique : int
        Distinct texts among the inputs (each is encoded at most once).
    n_cached : int
        Distinct texts taken from the embedding cache instead of the model.
    n_truncated : int
        Distinct texts longer than the model's max sequence length (the model saw only the start).
    truncated : ndarray of shape (n_texts,), bool, or None
        Row-aligned with the inputs: True where that text is longer than the model's max length.
    """

    embeddings: np.ndarray
    n_unique: int
    n_cached: int
    n_truncated: int
    truncated: np.ndarray | None = None

    def summary(self) -> str:
        return (f"{self.n_unique} distinct texts, {self.n_cached} from cache, "
                f"{self.n_truncated} truncated to the model's max length")


def _no_progress(done: int, total: int, message: str) -> None:
    pass


def check_batch_size(batch_size) -> int:
    """`batch_size` when it is a whole number from 1 to `MAX_BATCH_SIZE`, else InputError."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) \
            or not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise InputError(f"the batch size {batch_size!r} is not a whole number from 1 to "
                         f"{MAX_BATCH_SIZE}.", fix="use a batch size such as 64 (the default)")
    return int(batch_size)


def over_limit(embedder, texts: Sequence[str]) -> np.ndarray:
    """Which `texts` are longer than the model's max length (the model would see only their start).

    Returns
    -------
    ndarray of shape (len(texts),), bool; all False when the model declares no max length.
    """
    texts = [str(t) for t in texts]
    out = np.zeros(len(texts), dtype=bool)
    limit = embedder.max_seq_length
    if limit:
        may_exceed = [i for i, t in enumerate(texts)
                      if not (t.isascii() and len(t) + SPECIAL_TOKEN_ROOM <= limit)]
        if may_exceed:
            out[may_exceed] = np.asarray(embedder.token_counts([texts[i] for i in may_exceed])) > limit
    return out


def encode_texts(embedder, texts: Sequence[str], *, batch_size: int = 64, cache=None,
                 progress: Progress | None = None, should_stop: ShouldStop | None = None,
                 prompt: str | None = None) -> EncodingResult:
    """Encode `texts` with `embedder`, each distinct text once, with `prompt` before each.

    Distinct texts already in `cache` (an `EmbeddingCache`, keyed by `cache_key`) are not
    re-encoded; new ones are encoded in batches of similar length (less padding) and stored in
    the cache.

    Parameters
    ----------
    embedder : object with ``fingerprint.id``, ``dimension``, ``max_seq_length``,
        ``encode_batch(texts)``, ``token_counts(texts)`` and optionally ``precision``
    progress : callable ``progress(done, total, message)``, called after each batch
    should_stop : callable returning True to cancel; checked before each batch
    prompt : str, optional
        Text the model puts before each text (sentence-transformers' ``prompt``); defaults to
        the embedder's symmetric prompt (`embedder_prompt`, "" for none). Part of the cache key,
        so prompted and unprompted vectors of a text never mix.

    Raises
    ------
    InputError
        When `batch_size` is not a whole number from 1 to `MAX_BATCH_SIZE` (before any work).
    Cancelled
        When `should_stop()` returned True. Batches already encoded stay in the cache.
    """
    batch_size = check_batch_size(batch_size)
    progress = progress or _no_progress
    should_stop = should_stop or (lambda: False)
    positions: dict[str, int] = {}                 # distinct text -> its row in `table`
    rows = np.fromiter((positions.setdefault(str(t), len(positions)) for t in texts), dtype=np.int64)
    unique = list(positions)
    prompt = embedder_prompt(embedder) if prompt is None else str(prompt)
    key = cache_key(embedder, prompt)
    table = np.empty((len(unique), embedder.dimension), dtype=np.float32)

    found = cache.lookup(key, unique, dimension=embedder.dimension) if cache is not None else {}
    for text, vector in found.items():
        table[positions[text]] = vector
    missing = [t for t in unique if t not in found]
    too_long = over_limit(embedder, [prompt + t for t in unique] if prompt else unique)
    n_truncated = int(too_long.sum())

    missing.sort(key=len)
    total = len(missing)
    progress(0, total, f"encoding {total} texts ({len(found)} cached)")
    for start in range(0, total, batch_size):
        if should_stop():
            raise Cancelled(f"encoding stopped after {start} of {total} texts")
        batch = missing[start:start + batch_size]
        # Encoders without prompts (test doubles, plug-ins) keep `encode_batch(texts)`.
        vectors = embedder.encode_batch(batch, prompt=prompt) if prompt else embedder.encode_batch(batch)
        vectors = np.asarray(vectors, dtype=np.float32)
        table[[positions[t] for t in batch]] = vectors
        if cache is not None:
            cache.store(key, batch, vectors)
        done = min(start + batch_size, total)
        progress(done, total, f"encoded {done} of {total} texts")

    # Distinct inputs (a background corpus, a document set) already are the table: no copy.
    distinct = len(rows) == len(unique)
    embeddings = table if distinct else table[rows]
    return EncodingResult(embeddings, len(unique), len(unique) - total, n_truncated,
                          too_long if distinct else too_long[rows])
