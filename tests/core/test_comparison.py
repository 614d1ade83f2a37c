import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.analysis.comparison import compare_models
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.calibration.profile_builder import build_profile
from tests.fakes import FakeEmbedder, random_sentences


class CrowdedEmbedder(FakeEmbedder):
    """The fake model with one direction added to every vector: its raw cosines crowd upwards."""

    def __init__(self):
        super().__init__(name="fake-crowded")
        self.offset = 1.5 * self._word("<crowd>") / np.linalg.norm(self._word("<crowd>"))

    def encode_batch(self, texts):
        out = super().encode_batch(texts) + self.offset
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    corpus = random_sentences(2000, seed=7)
    rng = np.random.default_rng(0)
    texts = random_sentences(200, seed=8)
    pairs = [(a, a if i % 5 == 0 else " ".join(a.split()[:3] + texts[(i * 7) % 200].split()[3:]))
             for i, a in enumerate(texts)]
    path = tmp_path_factory.mktemp("pairs") / "pairs.csv"
    pd.DataFrame(pairs, columns=["sentence1", "sentence2"]).assign(
        id=rng.permutation(200)).to_csv(path, index=False)
    table = load_pairs(path)
    out = {}
    for embedder in (FakeEmbedder(), CrowdedEmbedder()):
        profile = build_profile(embedder, corpus, n_pairs=1000, metrics=["cosine"])
        out[embedder.fingerprint.name] = score_pairs(table, embedder, profile, metrics=["cosine"])
    return out


def test_raw_scores_disagree_and_background_calibrations_agree(scored):
    comparison = compare_models(scored)
    diffs = comparison.differences
    a, b = (scored[m].frame for m in comparison.models)
    assert diffs["raw"]["mean_abs_diff"] == pytest.approx(np.abs(a["cosine_raw"] - b["cosine_raw"]).mean())
    assert diffs["bg_percentile"]["unit"] == "percentile / 100"
    assert diffs["bg_percentile"]["mean_abs_diff"] == pytest.approx(
        np.abs(a["cosine_bg_percentile"] - b["cosine_bg_percentile"]).mean() / 100)
    assert diffs["raw"]["mean_abs_diff"] > 0.2
    for form in ("calibrated", "bg_percentile", "bg_minmax"):
        assert diffs[form]["mean_abs_diff"] < diffs["raw"]["mean_abs_diff"] / 2, form
    assert list(diffs["raw"]["by_pair"]) == ["fake-bow vs fake-crowded"]


def test_side_by_side_frame_keeps_inputs_then_each_model(scored):
    frame = compare_models(scored, metric="cosine").frame
    assert list(frame.columns[:3]) == ["sentence1", "sentence2", "id"]
    assert {"cosine_raw [fake-bow]", "cosine_raw [fake-crowded]",
            "cosine_calibrated [fake-crowded]"} <= set(frame.columns)
    assert len(frame) == 200


def test_comparison_refuses_different_pairs_or_a_single_model(scored):
    first, second = scored.values()
    with pytest.raises(InputError, match="at least two models"):
        compare_models({"one": first})
    shuffled = type(second)(second.frame.sample(frac=1, random_state=0).reset_index(drop=True),
                            second.provenance)
    with pytest.raises(InputError, match="different pairs"):
        compare_models({"a": first, "b": shuffled})
    with pytest.raises(InputError, match="no dot scores"):
        compare_models(scored, metric="dot")
