import numpy as np
import pytest

from calibsim_gui.core.embedding.cache import EmbeddingCache
from calibsim_gui.core.embedding.encoding import encode_texts, iter_encode
from calibsim_gui.core.errors import Cancelled, InputError


def test_rows_follow_inputs_and_each_distinct_text_is_encoded_once(fake_embedder):
    texts = ["a cat", "a dog", "a cat", "", "a dog", "a bird"]
    result = encode_texts(fake_embedder, texts, batch_size=2)
    assert result.embeddings.shape == (6, fake_embedder.dimension)
    assert result.embeddings.dtype == np.float32
    np.testing.assert_array_equal(result.embeddings[0], result.embeddings[2])
    assert result.n_unique == 4 and result.n_cached == 0
    assert fake_embedder.calls == 2                      # 4 distinct texts, batches of 2
    np.testing.assert_allclose(result.embeddings[5], fake_embedder.encode_batch(["a bird"])[0])


def test_cache_spares_the_model_on_a_second_run(fake_embedder, tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    first = encode_texts(fake_embedder, ["x y", "z"], cache=cache)
    calls = fake_embedder.calls
    second = encode_texts(fake_embedder, ["z", "x y", "new text"], cache=cache)
    assert second.n_cached == 2
    assert fake_embedder.calls == calls + 1              # only "new text" was encoded
    np.testing.assert_array_equal(second.embeddings[1], first.embeddings[0])


def test_progress_reports_every_batch_and_cancel_stops_between_batches(fake_embedder):
    seen = []
    encode_texts(fake_embedder, [f"text {i}" for i in range(10)], batch_size=4,
                 progress=lambda done, total, msg: seen.append((done, total)))
    assert seen == [(0, 10), (4, 10), (8, 10), (10, 10)]
    with pytest.raises(Cancelled):
        encode_texts(fake_embedder, [f"text {i}" for i in range(10)], batch_size=4,
                     should_stop=lambda: fake_embedder.calls >= 1)


def test_truncated_texts_are_counted(fake_embedder):
    long = " ".join(["word"] * 100)
    result = encode_texts(fake_embedder, ["short", long, long + " more"])
    assert result.n_truncated == 2


def test_float32_and_bfloat16_vectors_never_share_cache_entries(fake_embedder, tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    encode_texts(fake_embedder, ["x y", "z"], cache=cache)
    fake_embedder.precision = "bfloat16"
    again = encode_texts(fake_embedder, ["x y", "z"], cache=cache)
    assert again.n_cached == 0 and cache.count() == 4
    fake_embedder.precision = "float32"
    assert encode_texts(fake_embedder, ["x y", "z"], cache=cache).n_cached == 2


def test_each_text_to_encode_is_tokenized_once_and_short_cached_texts_not_at_all(fake_embedder, tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    short, long = "a short text", " ".join(["word"] * 100)
    accented = " ".join(["é"] * 50)          # 99 characters, not ASCII: must be tokenized to know
    encode_texts(fake_embedder, [short, long], cache=cache)
    asked = []
    count = fake_embedder.token_counts
    fake_embedder.token_counts = lambda texts: (asked.extend(texts), count(texts))[1]
    result = encode_texts(fake_embedder, [short, long, accented, "new", accented], cache=cache)
    assert result.n_truncated == 2 and list(result.truncated) == [False, True, True, False, True]
    # the texts to encode once each (their order and flags); of the cached, only the long one
    assert sorted(asked) == sorted([accented, "new", long])


def test_batches_are_formed_in_token_count_order_not_character_order(fake_embedder):
    rng = np.random.default_rng(4)
    # character length and token count disagree: one long word vs many short ones
    texts = [" ".join(["x"] * int(n)) if i % 2 else "y" * int(5 * n) for i, n in
             enumerate(rng.integers(1, 30, size=50))]
    texts = list(dict.fromkeys(texts))
    result = encode_texts(fake_embedder, texts, batch_size=8)
    counts = [list(fake_embedder.token_counts(batch)) for batch in fake_embedder.batches]
    assert [len(c) for c in counts[:-1]] == [8] * (len(counts) - 1)
    flat = [n for c in counts for n in c]
    assert flat == sorted(fake_embedder.token_counts(texts))           # fewest tokens first
    by_characters = sorted(texts, key=len)
    padded_by_characters = sum(len(b) * max(fake_embedder.token_counts(b))
                               for b in (by_characters[i:i + 8] for i in range(0, len(texts), 8)))
    assert sum(len(c) * max(c) for c in counts) < padded_by_characters     # less padding
    alone = np.concatenate([fake_embedder.encode_batch([t]) for t in texts])
    np.testing.assert_allclose(result.embeddings, alone, atol=1e-6)    # same vectors as one by one


def test_iter_encode_says_up_front_when_each_text_is_ready(fake_embedder, tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    encode_texts(fake_embedder, ["b b b"], cache=cache)
    texts = ["c c c c", "a", "b b b", "a", "d d"]
    steps = iter_encode(fake_embedder, texts, batch_size=2, cache=cache)
    seen = []
    while True:
        try:
            step = next(steps)
        except StopIteration as end:
            result = end.value
            break
        seen.append((step.done, step.total, step.batch))
        ready = step.ready_after[step.rows] <= step.batch
        assert list(ready) == [step.batch >= 2, step.batch >= 1, True, step.batch >= 1, step.batch >= 1]
        np.testing.assert_array_equal(step.table[step.rows[ready]],
                                      fake_embedder.encode_batch([texts[i] for i in np.flatnonzero(ready)]))
    assert seen == [(0, 3, 0), (2, 3, 1), (3, 3, 2)]
    assert result.n_unique == 4 and result.n_cached == 1


def test_cancel_keeps_the_batches_already_encoded_in_the_cache(fake_embedder, tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    texts = [f"text number {i}" for i in range(10)]
    with pytest.raises(Cancelled, match="after 8 of 10"):
        encode_texts(fake_embedder, texts, batch_size=4, cache=cache,
                     should_stop=lambda: fake_embedder.calls >= 2)
    assert cache.count() == 8
    assert encode_texts(fake_embedder, texts, batch_size=4, cache=cache).n_cached == 8


@pytest.mark.parametrize("batch_size", [0, -5, 2.5, True, "64", 10**9])
def test_a_batch_size_outside_1_to_4096_is_refused_before_any_text_is_encoded(fake_embedder, batch_size):
    """No numbers from an invalid setting: 0 never ends a range(), -5 would give empty batches."""
    with pytest.raises(InputError, match=f"batch size {batch_size!r} is not a whole number from 1 to 4096"):
        encode_texts(fake_embedder, ["a cat", "a dog"], batch_size=batch_size)
    assert fake_embedder.calls == 0


def test_without_a_batch_size_a_gpu_model_gets_batches_four_times_larger_than_a_cpu_model(fake_embedder):
    """On a GPU a batch's fixed cost (tokenising, copies) is spread over 256 texts, not 64."""
    texts = [f"text {i}" for i in range(600)]
    sizes = {}
    for device in ("cpu", "cuda:0"):
        fake_embedder.device = device
        seen = []
        encode_texts(fake_embedder, texts, progress=lambda done, total, msg, seen=seen: seen.append(done))
        sizes[device] = np.diff(seen).max()
    assert sizes == {"cpu": 64, "cuda:0": 256}
