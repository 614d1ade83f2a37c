import numpy as np
import pytest

from calibsim_gui.core.cache import EmbeddingCache
from calibsim_gui.core.encoding import encode_texts
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


def test_only_texts_that_may_be_too_long_are_tokenized(fake_embedder):
    asked = []
    count = fake_embedder.token_counts
    fake_embedder.token_counts = lambda texts: (asked.extend(texts), count(texts))[1]
    short, long = "a short text", " ".join(["word"] * 100)
    accented = " ".join(["é"] * 50)          # 99 characters, not ASCII: must be tokenized to know
    result = encode_texts(fake_embedder, [short, long, accented])
    assert result.n_truncated == 2
    assert sorted(asked) == sorted([long, accented])


@pytest.mark.parametrize("batch_size", [0, -5, 2.5, True, "64", 10**9])
def test_a_batch_size_outside_1_to_4096_is_refused_before_any_text_is_encoded(fake_embedder, batch_size):
    """No numbers from an invalid setting: 0 never ends a range(), -5 would give empty batches."""
    with pytest.raises(InputError, match=f"batch size {batch_size!r} is not a whole number from 1 to 4096"):
        encode_texts(fake_embedder, ["a cat", "a dog"], batch_size=batch_size)
    assert fake_embedder.calls == 0
