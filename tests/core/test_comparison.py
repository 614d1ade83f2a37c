import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis.comparison import (
    ModelComparison,
    compare_models,
    reference_scale,
    short_model_names,
)
from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.inputs import load_pairs
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
def scored_and_profiles(tmp_path_factory):
    """Each fake model's scores of the same 200 pairs, and the profile it was scored with."""
    corpus = random_sentences(2000, seed=7)
    rng = np.random.default_rng(0)
    texts = random_sentences(200, seed=8)
    pairs = [(a, a if i % 5 == 0 else " ".join(a.split()[:3] + texts[(i * 7) % 200].split()[3:]))
             for i, a in enumerate(texts)]
    path = tmp_path_factory.mktemp("pairs") / "pairs.csv"
    pd.DataFrame(pairs, columns=["sentence1", "sentence2"]).assign(
        id=rng.permutation(200)).to_csv(path, index=False)
    table = load_pairs(path)
    out, profiles = {}, {}
    for embedder in (FakeEmbedder(), CrowdedEmbedder()):
        profile = build_profile(embedder, corpus, ProfileSettings(n_pairs=1000, metrics=["cosine"]))
        out[embedder.fingerprint.name] = score_pairs(table, embedder, profile, metrics=["cosine"])
        profiles[embedder.fingerprint.name] = profile
    return out, profiles


@pytest.fixture(scope="module")
def scored(scored_and_profiles):
    return scored_and_profiles[0]


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


def test_short_model_names_are_the_words_that_tell_models_apart():
    assert short_model_names(["all-MiniLM-L6-v2@c4aa0e", "sentence-transformers/all-mpnet-base-v2@91ff"]) == {
        "all-MiniLM-L6-v2@c4aa0e": "MiniLM", "sentence-transformers/all-mpnet-base-v2@91ff": "mpnet"}
    assert list(short_model_names(["/models/multilingual-e5-small@1", "bge-small-en-v1.5@2"]).values()) == [
        "e5", "bge"]
    assert list(short_model_names(["all-MiniLM-L6-v2@1", "paraphrase-multilingual-MiniLM-L12-v2@2"]).values()) \
        == ["MiniLM-L6", "MiniLM-L12"]
    assert list(short_model_names(["fake-bow@aa1234567", "fake-bow@bb1234567"]).values()) == [
        "fake-bow@aa1234", "fake-bow@bb1234"]


def test_reference_scales_hold_each_levels_median_and_the_background_percentiles(scored_and_profiles):
    profile = scored_and_profiles[1]["fake-bow"]
    scale = reference_scale(profile, "cosine")
    targets = [lv["target"] for lv in scale["levels"]]
    assert targets == sorted(lv.target for lv in profile.anchors.levels)
    lowest = min(profile.anchors.levels, key=lambda lv: lv.target)
    scores = profile.metrics["cosine"].anchor_scores[[p.level == lowest.name for p in profile.anchors.pairs]]
    assert scale["levels"][0]["median"] == pytest.approx(np.median(scores))
    assert list(scale["background"]) == ["p5", "p25", "p50", "p75", "p95"]
    assert np.all(np.diff(list(scale["background"].values())) > 0)
    cosine_only = build_profile(FakeEmbedder(), None, ProfileSettings(metrics=["cosine"]))
    assert reference_scale(cosine_only, "cosine")["background"] is None


def test_a_comparison_survives_json_and_says_when_calibrated_differs_more(scored_and_profiles):
    import json

    scored, profiles = scored_and_profiles
    comparison = compare_models(scored, scales={m: reference_scale(p, "cosine") for m, p in profiles.items()})
    comparison.frame.loc[3, "cosine_raw [fake-bow]"] = np.nan            # an unscored pair stays unscored
    back = ModelComparison.from_dict(json.loads(json.dumps(comparison.to_dict(), allow_nan=False)))
    assert back.models == comparison.models and back.labels == {"fake-bow": "fake-bow", "fake-crowded": "fake-crowded"}
    assert back.differences == comparison.differences and back.scales == comparison.scales
    assert back.notes == comparison.notes and list(back.frame.columns) == list(comparison.frame.columns)
    pd.testing.assert_frame_equal(back.frame, comparison.frame, check_dtype=False)
    assert not back.calibrated_exceeds_raw                   # the crowded model's raw scores differ most
    back.differences["calibrated"]["mean_abs_diff"] = back.differences["raw"]["mean_abs_diff"] + 0.01
    assert back.calibrated_exceeds_raw


def _damage(d, how):
    columns = d["columns"]
    if how == "lengths":
        columns[0]["values"].pop()
    elif how == "infinite":
        columns[-1]["values"][0] = float("inf")
    elif how == "text number":
        columns[-1]["values"][0] = "0.5"
    elif how == "missing scores":
        d["columns"] = [c for c in columns if c["name"] != "cosine_raw [fake-crowded]"]
    elif how == "one model":
        d["models"] = d["models"][:1]
    elif how == "no metric":
        del d["metric"]
    elif how == "scale":
        d["scales"] = {"fake-bow": {"levels": [{"level": "x", "target": 0.5, "median": None}]}}
    elif how == "not a dict":
        return ["columns"]
    return d


@pytest.mark.parametrize("how, says", [
    ("lengths", "different lengths"), ("infinite", "not a finite number"), ("text number", "not a finite number"),
    ("missing scores", "cosine_raw [fake-crowded] scores are missing"), ("one model", "two or more"),
    ("no metric", "no 'metric'"), ("scale", "median is None"), ("not a dict", "not a comparison")])
def test_a_damaged_saved_comparison_is_refused_with_a_message(scored, how, says):
    d = _damage(compare_models(scored).to_dict(), how)
    with pytest.raises(InputError, match="saved model comparison is damaged") as refused:
        ModelComparison.from_dict(d)
    assert says in str(refused.value) and "run the comparison again" in str(refused.value)
