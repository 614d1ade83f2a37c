"""Neighbours on a local Ray instance, block against block, equal the neighbours on one machine."""

import numpy as np
import pytest

from calibsim_gui.core.geometry.knn import top_hits


@pytest.mark.parametrize(("metric", "stripes"), [("cosine", 2), ("euclidean", 1)])
def test_neighbours_on_ray_equal_the_local_neighbours(ray_instance, metric, stripes):
    from calibsim_gui.core.analysis.neighbours_ray import ray_neighbours

    vectors = np.random.default_rng(2).standard_normal((700, 12)).astype(np.float32)
    vectors[5] = vectors[4]                            # a tie: the lower row comes first, on Ray too
    seen = []
    hits, raw = ray_neighbours(vectors, metric, 6, block_rows=256, stripes=stripes,
                               progress=lambda done, total, message: seen.append((done, total)))
    local, local_raw, _, _ = top_hits(vectors, vectors, metric, 6, exclude=np.arange(700))
    np.testing.assert_array_equal(hits, local)
    np.testing.assert_array_equal(raw, local_raw)
    assert seen[-1] == (3, 3) and hits[4, 0] == 5 and hits[5, 0] == 4
