"""Memory: scoring many pairs needs a fixed amount of working memory beyond its inputs and outputs."""

import tracemalloc

import numpy as np

from calibsim_gui.core.metrics import PAIR_BLOCK, pair_scores


def working_memory(n_pairs: int, dim: int = 48) -> int:
    """Peak bytes `pair_scores` allocates beyond the score arrays it returns."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n_pairs, dim)).astype(np.float32) for _ in range(2))
    tracemalloc.start()
    try:
        out = pair_scores(a, b)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - sum(v.nbytes for v in out.values())


def test_working_memory_of_pair_scores_does_not_grow_with_the_number_of_pairs():
    small, large = working_memory(2 * PAIR_BLOCK), working_memory(25 * PAIR_BLOCK)
    assert large <= small * 1.1 + 1_000_000
    assert large < 8 * PAIR_BLOCK * 48 * 8            # a few float64 blocks, not the 25x larger inputs
