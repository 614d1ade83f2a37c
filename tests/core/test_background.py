import numpy as np
import pytest

from calibsim_gui.core.background import random_pairs


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


def test_one_text_is_refused():
    with pytest.raises(ValueError):
        random_pairs(1, 10)
