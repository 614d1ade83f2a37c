import numpy as np
import pytest

from calibsim_gui.core.geometry.background import (
    key_pairs, pair_key_limit, query_key_limit, query_keys, query_sample, random_pairs, text_keys)
from tests.fakes import random_sentences


def test_pairs_are_disjoint_within_a_round_and_reproducible():
    first, second = random_pairs(1000, 400, seed=7)
    assert len(first) == 400
    assert len(set(first) | set(second)) == 800          # no text used twice
    again = random_pairs(1000, 400, seed=7)
    np.testing.assert_array_equal(first, again[0])
    assert not np.array_equal(first, random_pairs(1000, 400, seed=8)[0])


def test_small_corpus_gives_distinct_pairs_of_distinct_texts():
    first, second = random_pairs(30, 200, seed=0)
    assert len(first) == 200
    assert (first != second).all()
    assert len({(min(a, b), max(a, b)) for a, b in zip(first, second)}) == 200


def test_tiny_corpus_gives_every_possible_pair_and_no_more():
    first, second = random_pairs(4, 100)
    assert len(first) == 6
    assert len(key_pairs(text_keys(["a", "b", "c", "d"]), 100)[0]) == 6


def test_one_text_is_refused():
    with pytest.raises(ValueError):
        random_pairs(1, 10)
    with pytest.raises(ValueError):
        key_pairs(text_keys(["alone"]), 10)


def _text_pairs(texts, n_pairs, seed):
    first, second = key_pairs(text_keys(texts, seed), n_pairs)
    return {frozenset((texts[i], texts[j])) for i, j in zip(first, second)}


def test_keyed_pairs_depend_on_the_texts_and_seed_not_on_their_order():
    texts = random_sentences(3000, seed=4)
    shuffled = [texts[i] for i in np.random.default_rng(0).permutation(len(texts))]
    pairs = _text_pairs(texts, 1000, seed=5)
    assert len(pairs) == 1000
    assert pairs == _text_pairs(shuffled, 1000, seed=5)
    assert len({t for pair in pairs for t in pair}) == 2000        # disjoint: one round
    assert pairs != _text_pairs(texts, 1000, seed=6)


def test_any_part_holding_the_smallest_keys_gives_the_same_pairs():
    # what lets each cluster block keep only its texts below the limit
    keys = text_keys(random_sentences(5000, seed=1), seed=2)
    limit = pair_key_limit(keys, 800)
    kept = keys[keys <= limit]
    assert len(kept) == 1600
    first, second = key_pairs(keys, 800)
    sub_first, sub_second = key_pairs(kept, 800)
    np.testing.assert_array_equal(kept[sub_first], keys[first])
    np.testing.assert_array_equal(kept[sub_second], keys[second])


def test_keyed_pairs_of_a_small_corpus_take_several_rounds_without_repeats():
    keys = text_keys(random_sentences(40, seed=3))
    first, second = key_pairs(keys, 300)
    assert len(first) == 300 and (first != second).all()
    assert len({(min(a, b), max(a, b)) for a, b in zip(first, second)}) == 300


def test_equal_texts_get_equal_keys_and_the_seed_changes_them():
    keys = text_keys(["same", "other", "same"], seed=1)
    assert keys.dtype == np.uint64 and keys[0] == keys[2] != keys[1]
    assert text_keys(["same"], seed=2)[0] != keys[0]


def test_query_sample_is_the_same_texts_whatever_their_order():
    texts = random_sentences(2500, seed=8)
    keys = text_keys(texts, seed=0)
    chosen = [texts[i] for i in query_sample(keys, 300)]
    order = np.random.default_rng(1).permutation(len(texts))
    assert chosen == [texts[order[i]] for i in query_sample(keys[order], 300)]
    limit = query_key_limit(keys, 300)
    assert (query_keys(keys) <= limit).sum() == 300
    assert len(query_sample(keys[:50], 300)) == 50
