"""Long texts: split a text past the model's max length into overlapping token windows, and
score a pair of long texts by an aggregate of its chunk pairs.

A model sees at most ``max_seq_length`` tokens (256 for the built-in all-MiniLM-L6-v2) and
silently drops the rest. Two ways to handle a longer text (`LONG_TEXTS`):

- ``"truncate"`` (the default): the model scores the beginning; the pair is flagged in a
  ``truncated`` column so nobody mistakes "identical beginnings" for "identical texts".
- ``"chunk"``: the text is cut into windows of the model's length with `overlap` tokens shared
  by neighbours (each chunk a real substring, found through the tokenizer's character offsets);
  every chunk is encoded, and a pair scores an aggregate of its chunk-pair similarities
  (`CHUNK_AGGREGATE_DESCRIPTIONS`: max, mean, or match, the mean of best matches both ways).
  Calibration is unchanged: the calibrated forms are applied to the aggregated raw score.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from calibsim_gui.core.embedding.encoding import EncodingResult, encode_texts, over_limit, seen_parts
from calibsim_gui.core.embedding.prompts import embedder_prompt
from calibsim_gui.core.errors import InputError, ModelError
from calibsim_gui.core.geometry.metrics import METRICS, pair_scores
from calibsim_gui.core.io.memory import check_budget, chunk_bytes

LONG_TEXTS = ("truncate", "chunk")
CHUNK_AGGREGATES = ("max", "mean", "match")
CHUNK_AGGREGATE_DESCRIPTIONS = {
    "max": "the most similar chunk pair (finds a shared passage; two texts sharing a chunk score "
           "as identical)",
    "mean": "the mean over all chunk pairs (identical long texts score below identical)",
    "match": "each chunk's best match in the other text, averaged both ways (identical texts "
             "score as identical, a changed passage lowers the score)",
}
DEFAULT_LONG_TEXTS = "truncate"
DEFAULT_CHUNK_AGGREGATE = "match"     # max scores the issue-17 pair (one changed sentence) 1.000
DEFAULT_CHUNK_OVERLAP = 32
MAX_CHUNK_OVERLAP = 10_000
MAX_CHUNK_COMBINATIONS = 16_384     # chunk pairs scored at once (bounds memory for huge texts)
TRUNCATED_COLUMN = "truncated"
CALIBRATION_NOTE = ("the calibrated forms are applied to the aggregated raw score; the references "
                    "were scored on whole short texts, so read calibrated scores of chunked pairs "
                    "as approximate")


def check_long_texts(long_texts: str, aggregate: str = DEFAULT_CHUNK_AGGREGATE,
                     overlap=DEFAULT_CHUNK_OVERLAP) -> None:
    """Raise InputError (naming the fix) for an unknown mode or aggregate, or a bad overlap."""
    if long_texts not in LONG_TEXTS:
        raise InputError(f"unknown long-text handling {long_texts!r}.",
                         fix=f"choose {' or '.join(LONG_TEXTS)}")
    if aggregate not in CHUNK_AGGREGATES:
        raise InputError(f"unknown chunk aggregate {aggregate!r}.",
                         fix=f"choose {' or '.join(CHUNK_AGGREGATES)}")
    if isinstance(overlap, bool) or not isinstance(overlap, numbers.Integral) \
            or not 0 <= overlap <= MAX_CHUNK_OVERLAP:
        raise InputError(f"the chunk overlap {overlap!r} is not a whole number of tokens from 0 to "
                         f"{MAX_CHUNK_OVERLAP}.", fix=f"use e.g. --chunk-overlap {DEFAULT_CHUNK_OVERLAP}")


TOKEN_SPAN_BYTES = 800
"""Bytes held per token while a text is tokenised with its character spans (the tokenizer's
encoding and the spans as Python tuples; measured as peak RSS growth over a 2 MB STS-B text)."""


def chunk_window(embedder) -> int | None:
    """Tokens of text one chunk may hold: the max length less the special tokens ([CLS], [SEP])
    and the embedder's prompt, if any; None when the model declares no max length."""
    limit = embedder.max_seq_length
    if not limit:
        return None
    specials = int(np.asarray(embedder.token_counts([embedder_prompt(embedder)]))[0])
    return max(1, limit - specials)


def window_starts(n_tokens: int, window: int, overlap: int) -> list[int]:
    """First token of each window of `window` tokens, neighbours sharing `overlap` tokens, the
    last window reaching the last token."""
    if n_tokens <= window:
        return [0]
    step = window - overlap
    return list(range(0, n_tokens - window + step, step))


def chunk_spans(spans: np.ndarray, window: int, overlap: int) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the chunks of a text whose tokens have `spans`."""
    if overlap >= window:
        raise InputError(f"the chunk overlap ({overlap} tokens) is not smaller than the model's "
                         f"window ({window} tokens).", fix=f"use --chunk-overlap below {window}, "
                                                           f"e.g. {min(DEFAULT_CHUNK_OVERLAP, window // 4)}")
    spans = np.asarray(spans).reshape(-1, 2)
    if not len(spans):
        return []
    return [(int(spans[s, 0]), int(spans[min(s + window, len(spans)) - 1, 1]))
            for s in window_starts(len(spans), window, overlap)]


def split_texts(embedder, texts: Sequence[str], *, overlap: int = DEFAULT_CHUNK_OVERLAP,
                memory_budget: int | None = None, run_bytes: int = 0, path=None) -> list[list[str]]:
    """Each text as its chunks: ``[text]`` when it fits the model, else substrings of at most the
    model's window of tokens, neighbours sharing `overlap` tokens, together covering the text
    from its first token to its last.

    The chunks are counted before a substring is cut: InputError (naming `path`, the input) when
    they (`memory.chunk_bytes`) and the rest of the run (`run_bytes`) exceed `memory_budget`
    (None: the default budget)."""
    texts = [str(t) for t in texts]
    out = [[t] for t in texts]
    prompt = embedder_prompt(embedder)          # encoded before each text: it takes room too
    long = np.flatnonzero(over_limit(embedder, [prompt + t for t in texts] if prompt else texts))
    if not len(long):
        return out
    window = chunk_window(embedder)
    token_spans = getattr(embedder, "token_spans", None)
    if token_spans is None:
        raise ModelError("This model cannot map tokens back to the text, so long texts cannot be "
                         "split into chunks. Fix: score with --long-texts truncate.")
    what = (f"--long-texts chunk cuts {len(long):,} long text{'s' * (len(long) > 1)} into {{}} chunks of up to "
            f"{window} tokens ({overlap} shared by neighbours), which")
    fix = "score with --long-texts truncate, or a smaller --chunk-overlap, or split the long texts into parts"
    # before the texts are tokenised whole: their tokens guessed from the part the model reads
    counts, parts = seen_parts(embedder, [texts[i] for i in long])
    tokens = sum(int(c * len(texts[i]) / max(len(p), 1)) for c, p, i in zip(counts, parts, long))
    guess = -(-tokens // max(window - overlap, 1))
    check_budget(run_bytes + tokens * TOKEN_SPAN_BYTES + chunk_bytes(guess, sum(len(texts[i]) for i in long),
                                                                     embedder.dimension),
                 memory_budget, path=path, what=what.format(f"about {guess:,}"), fix=fix)
    cuts = {i: chunk_spans(spans, window, overlap) for i, spans in zip(long, token_spans([texts[i] for i in long]))}
    n_chunks = sum(map(len, cuts.values()))
    n_chars = sum(end - start for spans in cuts.values() for start, end in spans)
    check_budget(run_bytes + chunk_bytes(n_chunks, n_chars, embedder.dimension), memory_budget, path=path,
                 what=what.format(f"{n_chunks:,}"), fix=fix)
    for i, spans in cuts.items():
        out[i] = [texts[i][start:end] for start, end in spans] or [texts[i]]
    return out


@dataclass(frozen=True)
class ChunkedEncoding:
    """Texts encoded chunk by chunk.

    Attributes
    ----------
    encoding : EncodingResult
        Of the texts: ``embeddings`` row-aligned with them (a chunked text's row is the mean of
        its chunk vectors, scaled to their mean length: for per-text figures such as norms),
        counts over the distinct chunks encoded, ``truncated`` the texts still cut (none unless
        a chunk re-tokenises longer than the window).
    chunks : dict int -> ndarray of shape (n_chunks, dim)
        Chunk vectors of each text that was split (by its row); texts absent here are one chunk.
    n_chunks : int
        Chunks the split texts were cut into.
    """

    encoding: EncodingResult
    chunks: dict
    n_chunks: int


def encode_chunked(embedder, texts: Sequence[str], *, overlap: int = DEFAULT_CHUNK_OVERLAP,
                   batch_size: int | None = None, cache=None, progress=None, should_stop=None
                   ) -> ChunkedEncoding:
    """Encode every chunk of `texts` (through `encode_texts`: cache, batches, progress, Cancel)."""
    pieces = split_texts(embedder, texts, overlap=overlap)
    flat = [p for text_pieces in pieces for p in text_pieces]
    return combine_chunks(pieces, encode_texts(embedder, flat, batch_size=batch_size, cache=cache,
                                               progress=progress, should_stop=should_stop))


def combine_chunks(pieces: Sequence[Sequence[str]], result: EncodingResult) -> ChunkedEncoding:
    """The `ChunkedEncoding` of texts split into `pieces` (`split_texts`), from `result`: the
    encoding of the pieces, flattened in order."""
    vectors = np.empty((len(pieces), result.embeddings.shape[1]), dtype=np.float32)
    truncated = np.zeros(len(pieces), dtype=bool)
    chunks, start = {}, 0
    for row, text_pieces in enumerate(pieces):
        block = result.embeddings[start:start + len(text_pieces)]
        if result.truncated is not None:
            truncated[row] = result.truncated[start:start + len(text_pieces)].any()
        start += len(text_pieces)
        if len(text_pieces) == 1:
            vectors[row] = block[0]
            continue
        chunks[row] = block
        mean = block.mean(axis=0)
        norm = np.linalg.norm(mean)
        vectors[row] = mean * (np.linalg.norm(block, axis=1).mean() / norm) if norm > 0 else mean
    encoding = EncodingResult(vectors, result.n_unique, result.n_cached, int(truncated.sum()), truncated)
    return ChunkedEncoding(encoding, chunks, sum(len(chunks[row]) for row in chunks))


def aggregate_pair_scores(sets_a: Sequence[np.ndarray], sets_b: Sequence[np.ndarray], metrics,
                          aggregate: str = DEFAULT_CHUNK_AGGREGATE, transform=None
                          ) -> dict[str, np.ndarray]:
    """Score pair i as the `aggregate` over every pair of a chunk of ``sets_a[i]`` and a chunk of
    ``sets_b[i]`` (arrays of shape (n_chunks, dim)): "max" the most similar chunk pair, "mean"
    their mean, "match" each chunk's best match in the other text, averaged over the chunks of
    each text and then over both directions.

    `transform` (optional) maps vectors before scoring (a geometry fix). Scores are in each
    metric's own orientation, as `pair_scores` gives them; "max" takes the most similar chunk
    pair whatever the orientation. A pair of one-chunk texts scores exactly as `pair_scores`.
    """
    if aggregate not in CHUNK_AGGREGATES:
        check_long_texts("chunk", aggregate)
    names = list(metrics)
    n = len(sets_a)
    out = {name: np.empty(n) for name in names}
    sizes = np.array([len(a) * len(b) for a, b in zip(sets_a, sets_b)], dtype=np.int64)
    start = 0
    while start < n:                  # groups of pairs with a bounded number of chunk pairs
        if sizes[start] > MAX_CHUNK_COMBINATIONS:       # one pair of long texts: in blocks of rows
            a, b = (x if transform is None else transform(x) for x in (sets_a[start], sets_b[start]))
            for name, value in _large_pair(a, b, names, aggregate).items():
                out[name][start] = value
            start += 1
            continue
        stop = start + 1
        total = sizes[start]
        while stop < n and total + sizes[stop] <= MAX_CHUNK_COMBINATIONS:
            total += sizes[stop]
            stop += 1
        a_all = np.concatenate(sets_a[start:stop])
        b_all = np.concatenate(sets_b[start:stop])
        if transform is not None:
            a_all, b_all = transform(a_all), transform(b_all)
        first, second, offset_a, offset_b = [], [], 0, 0
        for a, b in zip(sets_a[start:stop], sets_b[start:stop]):
            first.append(np.repeat(np.arange(len(a)), len(b)) + offset_a)
            second.append(np.tile(np.arange(len(b)), len(a)) + offset_b)
            offset_a += len(a)
            offset_b += len(b)
        scores = pair_scores(a_all[np.concatenate(first)], b_all[np.concatenate(second)], names)
        bounds = np.concatenate([[0], np.cumsum(sizes[start:stop])[:-1]])
        for name in names:
            similarity = METRICS[name].as_similarity(np.asarray(scores[name], dtype=np.float64))
            if aggregate == "max":
                combined = np.maximum.reduceat(similarity, bounds)
            elif aggregate == "mean":
                combined = np.add.reduceat(similarity, bounds) / sizes[start:stop]
            else:
                combined = np.array([_best_matches(similarity[at:at + len(a) * len(b)].reshape(len(a), len(b)))
                                     for at, a, b in zip(bounds, sets_a[start:stop], sets_b[start:stop])])
            out[name][start:stop] = METRICS[name].as_similarity(combined)   # back to raw orientation
        start = stop
    return out


def _large_pair(a: np.ndarray, b: np.ndarray, names, aggregate: str) -> dict[str, float]:
    """Raw scores of one pair of chunk sets with more than `MAX_CHUNK_COMBINATIONS` chunk pairs
    (`aggregate_pair_scores`), computed for a block of `a`'s chunks against all of `b`'s at a
    time, so memory stays that of `MAX_CHUNK_COMBINATIONS` chunk pairs however long the texts."""
    rows = max(1, MAX_CHUNK_COMBINATIONS // len(b))
    row_best = {name: np.empty(len(a)) for name in names}
    column_best = {name: np.full(len(b), -np.inf) for name in names}
    total = dict.fromkeys(names, 0.0)
    for start in range(0, len(a), rows):
        block = a[start:start + rows]
        scores = pair_scores(np.repeat(block, len(b), axis=0), np.tile(b, (len(block), 1)), names)
        for name in names:
            similarity = METRICS[name].as_similarity(scores[name]).reshape(len(block), len(b))
            row_best[name][start:start + len(block)] = similarity.max(axis=1)
            column_best[name] = np.maximum(column_best[name], similarity.max(axis=0))
            total[name] += float(similarity.sum())
    combined = {"max": lambda name: row_best[name].max(),
                "mean": lambda name: total[name] / (len(a) * len(b)),
                "match": lambda name: (row_best[name].mean() + column_best[name].mean()) / 2}[aggregate]
    return {name: float(METRICS[name].as_similarity(np.array([combined(name)]))[0]) for name in names}


def _best_matches(similarity: np.ndarray) -> float:
    """Mean of each row's and each column's best match, averaged over both directions; a 1 x 1
    matrix gives its one value unchanged."""
    if similarity.size == 1:
        return float(similarity[0, 0])
    return float((similarity.max(axis=1).mean() + similarity.max(axis=0).mean()) / 2)
