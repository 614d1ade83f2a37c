"""The calibrated score on two labelled sources with different annotators (STS-B test and
SICK-R test, neither used to fit anything), with the real built-in model (slow)."""

import numpy as np
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.analysis.evaluation import evaluate
from calibsim_gui.core.calibration.human import load_human_pairs
from calibsim_gui.core.calibration.profile_builder import default_profile
from tests.conftest import DATA

pytestmark = pytest.mark.slow
SOURCES = {"stsb": (0.0, 5.0), "sick": (1.0, 5.0)}


@pytest.fixture(scope="module", params=list(SOURCES))
def evaluation(request, real_embedder, stsb_cache_dir):
    from calibsim_gui.core.embedding.cache import EmbeddingCache

    cache = EmbeddingCache(stsb_cache_dir / "embeddings.sqlite")        # STS-B test: encoded once a session
    pairs = load_human_pairs(DATA / request.param / "test.csv", scale=SOURCES[request.param])
    scored = score_pairs(pairs.table, real_embedder, default_profile(real_embedder, cache=cache),
                         metrics=["cosine"], interval=True, cache=cache)
    result = evaluate({"built-in": scored}, scale=pairs.scale)
    return request.param, result.forms["built-in"], result.coverage["built-in"]["cosine_calibrated"]


def test_the_calibrated_score_is_unbiased_keeps_the_ranking_and_leaves_no_hole(evaluation):
    source, forms, _ = evaluation
    calibrated, raw = forms.loc["cosine_calibrated"], forms.loc["cosine_raw"]
    assert abs(calibrated["bias"]) <= 0.04
    assert calibrated["spearman_x100"] == pytest.approx(raw["spearman_x100"], abs=0.01)
    assert calibrated["worst_tenth_ratio"] >= 1 / 3
    # STS-B's annotators rate the same pairs ~0.08 lower than SICK's: the scale takes the middle,
    # so it beats raw cosine on STS-B and stays within 0.005 of it on SICK (README)
    assert calibrated["mae"] <= raw["mae"] + (0.005 if source == "sick" else 0.0)


def test_the_human_band_holds_its_stated_share_of_peoples_scores(evaluation):
    _, _, coverage = evaluation
    assert 0.75 <= coverage["human_band_80"]["coverage"] <= 0.85
    assert 0.90 <= coverage["human_band_95"]["coverage"] <= 0.97
    assert coverage["reference_uncertainty_95"]["coverage"] < 0.05     # not a band for people's scores
    assert np.isfinite(coverage["human_band_80"]["mean_width"])
