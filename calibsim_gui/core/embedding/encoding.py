"""Turning texts into embeddings: batched, deduplicated, cached, cancellable."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from calibsim_gui.core.embedding.cache import cache_key
from calibsim_gui.core.embedding.encoder_memory import check_encoder_memory
from calibsim_gui.core.embedding.prompts import embedder_prompt
from calibsim_gui.core.errors import Cancelled, InputError
from calibsim_gui.core.progress import Progress, ShouldStop

# Tokenizers give an ASCII text at most one token per character, plus a few special tokens
# ([CLS], [SEP], a sentencepiece word start): shorter texts need no tokenizing to know they fit.
SPECIAL_TOKEN_ROOM = 8
MAX_BATCH_SIZE = 4096
"""Largest batch: more texts at once only adds memory (padding, activations), not speed."""
CPU_BATCH_SIZE = 64
GPU_BATCH_SIZE = 256
"""Texts per batch on a GPU when none is asked: on an H200 the built-in model encoded at 54 % of
bare ``SentenceTransformer.encode``'s best rate in batches of 64 and 102 % in batches of 256, where
each batch's fixed cost (tokenising, copies, the cache) is spread over 4 times the texts
(benchmarks/gpu.py)."""


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


def default_batch_size(embedder) -> int:
    """Texts per batch for `embedder` when none is asked: `CPU_BATCH_SIZE` on a CPU (and for
    encoders that name no device), `GPU_BATCH_SIZE` on a GPU."""
    device = str(getattr(embedder, "device", "cpu"))
    return CPU_BATCH_SIZE if device.startswith("cpu") else GPU_BATCH_SIZE


def seen_parts(embedder, texts: Sequence[str], prompt: str = "") -> tuple[np.ndarray, list[str]]:
    """Each text's token count (with `prompt` before it) up to the model's max length, and the
    part of the text the model reads: a text longer than that is cut, at a space, once a prefix
    gives more tokens than the model reads (`CUT_CHARS_PER_TOKEN` x max length characters first,
    then 8 times more each round), so an 8 M-word text is never tokenised whole (it took minutes
    and gigabytes). A count above the max length only says the text is over it.

    Returns
    -------
    counts : ndarray of shape (len(texts),), int64
    parts : list of str, the texts as cut (the model's tokens of a part are the text's own)
    """
    parts = [str(t) for t in texts]
    counts = np.zeros(len(parts), dtype=np.int64)
    limit = embedder.max_seq_length
    todo, size = np.arange(len(parts)), (limit or 0) * CUT_CHARS_PER_TOKEN
    while len(todo):
        cut = [text_prefix(parts[i], size) if limit else parts[i] for i in todo]
        got = np.asarray(embedder.token_counts([prompt + c for c in cut]), dtype=np.int64)
        counts[todo] = got
        whole = np.array([len(c) == len(parts[i]) for c, i in zip(cut, todo)], dtype=bool)
        enough = ~whole & (got > limit + SPECIAL_TOKEN_ROOM) if limit else whole
        for c, i in zip(np.asarray(cut, dtype=object)[enough], todo[enough]):
            parts[i] = c
        todo, size = todo[~(whole | enough)], size * 8
    return counts, parts


CUT_CHARS_PER_TOKEN = 16
"""Characters per token of the model's max length in the first prefix `seen_parts` tokenises."""


def text_prefix(text: str, size: int) -> str:
    """`text` up to the last space, tab or line end before character `size`; the whole text when
    it is no longer, or has no such break there (a cut inside a word could change its tokens)."""
    if len(text) <= size:
        return text
    end = max(text.rfind(" ", 0, size), text.rfind("\n", 0, size), text.rfind("\t", 0, size))
    return text[:end] if end > 0 else text


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
            out[may_exceed] = seen_parts(embedder, [texts[i] for i in may_exceed])[0] > limit
    return out


@dataclass(frozen=True)
class EncodingStep:
    """Where `iter_encode` stands: yielded once before the first batch and after each batch.

    Attributes
    ----------
    done, total : int
        Distinct texts encoded so far / to encode (texts found in the cache are not counted).
    batch : int
        Batches encoded so far (0 before the first).
    rows : ndarray of shape (n_texts,), int
        Each input text's row in `table`.
    ready_after : ndarray of shape (len(table),), int
        The batch after which each row of `table` holds its vector (0: taken from the cache).
    table : ndarray of shape (n_distinct, dim), float32
        Vectors of the distinct texts, filled where ``ready_after <= batch``.
    work : float
        Share of the encoding work done, 0 to 1: the padded tokens of the batches encoded so
        far over all of them (short texts come first, so it runs behind ``done / total``).
    """

    done: int
    total: int
    batch: int
    rows: np.ndarray
    ready_after: np.ndarray
    table: np.ndarray
    work: float = 1.0


def token_batches(counts: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Positions of texts with token `counts`, in batches of `batch_size` texts of similar token
    counts (fewest first): a batch pads every text to its longest, so padding stays small."""
    order = np.argsort(counts, kind="stable")
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def iter_encode(embedder, texts: Sequence[str], *, batch_size: int | None = None, cache=None,
                should_stop: ShouldStop | None = None, prompt: str | None = None,
                memory_budget: int | None = None, run_bytes: int = 0, path=None):
    """`encode_texts` as a generator: yields an `EncodingStep` before the first batch and after
    each batch, and returns the `EncodingResult`. Before the first step the encoder's memory for
    the planned batches, with `run_bytes` of the rest of the run, is checked against
    `memory_budget` (`encoder_memory.check_encoder_memory`; InputError naming `path`).

    The first step already says when each distinct text will be ready (`EncodingStep.ready_after`),
    so a caller can tell which of its results become computable after each batch.
    """
    batch_size = default_batch_size(embedder) if batch_size is None else check_batch_size(batch_size)
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
    shown = [prompt + t for t in unique] if prompt else unique       # what the model reads
    # one tokenizer pass over the texts to encode serves their order, their truncation flags and
    # the parts the model reads (a long text is tokenised only as far as the model reads it)
    counts, seen = seen_parts(embedder, missing, prompt)
    seen = dict(zip(missing, seen))
    too_long = np.zeros(len(unique), dtype=bool)
    limit = embedder.max_seq_length
    if limit:
        too_long[[positions[t] for t in missing]] = counts > limit
        too_long[[positions[t] for t in found]] = over_limit(embedder, [shown[positions[t]] for t in found])
        counts = np.minimum(counts, limit)          # the model reads (and pads to) at most `limit`
    planned = token_batches(counts, batch_size)
    check_encoder_memory(embedder, planned, counts, batch_size=batch_size, memory_budget=memory_budget,
                         run_bytes=run_bytes, path=path)
    batches = [[missing[i] for i in batch] for batch in planned]
    # a batch costs its texts padded to its longest one
    cost = np.cumsum([len(batch) * int(counts[batch].max()) for batch in planned], dtype=np.float64)
    work = cost / cost[-1] if len(cost) else cost
    ready_after = np.zeros(len(unique), dtype=np.int64)
    for number, batch in enumerate(batches, start=1):
        ready_after[[positions[t] for t in batch]] = number

    total = len(missing)
    done = 0
    yield EncodingStep(0, total, 0, rows, ready_after, table, 0.0 if total else 1.0)
    for number, batch in enumerate(batches, start=1):
        if should_stop():
            raise Cancelled(f"encoding stopped after {done} of {total} texts")
        # Encoders without prompts (test doubles, plug-ins) keep `encode_batch(texts)`.
        parts = [seen[t] for t in batch]
        vectors = embedder.encode_batch(parts, prompt=prompt) if prompt else embedder.encode_batch(parts)
        vectors = np.asarray(vectors, dtype=np.float32)
        table[[positions[t] for t in batch]] = vectors
        if cache is not None:
            cache.store(key, batch, vectors)
        done += len(batch)
        yield EncodingStep(done, total, number, rows, ready_after, table, float(work[number - 1]))

    # Distinct inputs (a background corpus, a document set) already are the table: no copy.
    distinct = len(rows) == len(unique)
    embeddings = table if distinct else table[rows]
    return EncodingResult(embeddings, len(unique), len(unique) - total, int(too_long.sum()),
                          too_long if distinct else too_long[rows])


def encode_texts(embedder, texts: Sequence[str], *, batch_size: int | None = None, cache=None,
                 progress: Progress | None = None, should_stop: ShouldStop | None = None,
                 prompt: str | None = None) -> EncodingResult:
    """Encode `texts` with `embedder`, each distinct text once, with `prompt` before each.

    Distinct texts already in `cache` (an `EmbeddingCache`, keyed by `cache_key`) are not
    re-encoded; new ones are tokenized once and encoded in batches of similar token counts
    (`token_batches`: little padding) and stored in the cache.

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
    progress = progress or _no_progress
    steps = iter_encode(embedder, texts, batch_size=batch_size, cache=cache,
                        should_stop=should_stop, prompt=prompt)
    while True:
        try:
            step = next(steps)
        except StopIteration as end:
            return end.value
        if step.batch == 0:
            cached = len(step.table) - step.total
            progress(0, step.total, f"encoding {step.total} texts ({cached} cached)")
        else:
            progress(step.done, step.total, f"encoded {step.done} of {step.total} texts")
