import re

import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis.pairs import ScoredPairs, score_pairs
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.analysis.evaluation import evaluate, tenth_shares, top_ties, unit_scores
from calibsim_gui.core.reports.evaluation_page import evaluation_html, readable_forms
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.reports import build_report
from calibsim_gui.core.reports.html import render_html
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(scope="module")
def profile():
    return build_profile(FakeEmbedder(), random_sentences(3000, seed=5), ProfileSettings(n_pairs=1500))


@pytest.fixture
def scored(labelled_pairs, profile):
    return score_pairs(load_pairs(labelled_pairs), FakeEmbedder(), profile, metrics=["cosine", "euclidean"])


def with_column(scored, column, values) -> ScoredPairs:
    frame = scored.frame.copy()
    frame[column] = values
    return ScoredPairs(frame, scored.provenance, scored.notes)


def test_bounded_forms_go_on_0_1_and_unbounded_forms_have_no_such_scale():
    values = np.array([-0.2, 0.5, 1.3])
    assert unit_scores("cosine_raw", values).tolist() == [0.0, 0.5, 1.0]
    assert unit_scores("cosine_bg_minmax@whiten", values).tolist() == [0.0, 0.5, 1.0]
    assert unit_scores("cosine_bg_percentile", np.array([0.0, 50.0, 100.0])).tolist() == [0.0, 0.5, 1.0]
    assert unit_scores("cosine_calibrated", values).tolist() == values.tolist()
    for column in ("euclidean_raw", "cosine_bg_zscore", "cosine_bg_surprise", "cosine_query_zscore"):
        assert unit_scores(column, values) is None


def test_ties_at_the_top_are_counted_in_the_more_similar_direction():
    assert top_ties("cosine_calibrated", np.array([1.0, 1.0, 0.5, 1.0])) == 0.75
    assert top_ties("cosine_calibrated", np.array([1.0, 0.9, 0.5])) == 0.0
    assert top_ties("euclidean_raw", np.array([0.0, 0.0, 2.0, 3.0])) == 0.5   # a distance: 0 is the top


def test_ties_are_counted_on_the_scores_as_shown():
    # identical texts score 1 up to float noise: as shown (clipped, 3 decimals) they tie at 1.000
    identical = np.array([1.0000001, 0.9999999, 0.99999994, 0.42, 0.1])
    assert top_ties("cosine_raw", identical) == pytest.approx(0.6)
    assert top_ties("cosine_bg_zscore", np.array([3.0001, 3.0002, 1.0])) == pytest.approx(2 / 3)


def test_identical_texts_tie_at_the_top_of_raw_cosine(scored):
    same = (scored.frame["sentence1"] == scored.frame["sentence2"]).to_numpy()
    jitter = np.linspace(-1e-6, 1e-6, len(same)) * same          # float noise, as real models give
    noisy = with_column(scored, "cosine_raw", scored.frame["cosine_raw"] + jitter)
    ties = evaluate({"fake": noisy}).forms["fake"].loc["cosine_raw", "top_ties"]
    assert same.any() and ties == pytest.approx(same.mean())


def test_tenths_of_the_scale_sum_to_one_for_every_0_1_form_and_for_the_labels(scored):
    evaluation = evaluate({"fake": scored}, scale=(0, 5))
    assert evaluation.label_tenths.sum() == pytest.approx(1)
    assert np.allclose(evaluation.label_tenths, tenth_shares(scored.frame["score"].astype(float) / 5))
    tenths = evaluation.tenths["fake"]
    assert set(tenths) == {c for c, row in evaluation.forms["fake"].iterrows() if np.isfinite(row["mae"])}
    for column, frame in tenths.items():
        assert frame["share"].sum() == pytest.approx(1), column
    assert tenth_shares(np.array([0.0, 0.3, 0.6, 0.999, 1.0])).tolist() == [0.2, 0, 0, 0.2, 0, 0, 0.2, 0, 0, 0.4]


def test_band_coverage_is_the_share_of_human_scores_within_the_band():
    rng = np.random.default_rng(3)
    human = rng.uniform(0, 5, 200)
    calibrated = np.clip(human / 5 + rng.normal(0, 0.15, 200), 0, 1)
    frame = pd.DataFrame({"score": human, "cosine_raw": calibrated, "cosine_calibrated": calibrated,
                          "cosine_calibrated_lo": calibrated - 0.02, "cosine_calibrated_hi": calibrated + 0.02,
                          "cosine_calibrated_band80_lo": calibrated - 0.2,
                          "cosine_calibrated_band80_hi": calibrated + 0.2,
                          "cosine_calibrated@whiten": calibrated,
                          "cosine_calibrated_lo@whiten": calibrated - 0.1,
                          "cosine_calibrated_hi@whiten": calibrated + 0.1})
    agreement = {"label": "score", "spearman_x100": {"cosine_raw": 90.0, "cosine_calibrated": 90.0}}
    evaluation = evaluate({"hand": ScoredPairs(frame, {"agreement": agreement})}, scale=(0, 5))
    target = human / 5

    def within(width):
        return np.mean((calibrated - width <= target) & (target <= calibrated + width))

    coverage = evaluation.coverage["hand"]
    assert set(coverage["cosine_calibrated"]) == {"reference_uncertainty_95", "human_band_80"}  # no band95 here
    assert coverage["cosine_calibrated"]["reference_uncertainty_95"]["coverage"] == pytest.approx(within(0.02))
    assert coverage["cosine_calibrated"]["human_band_80"]["coverage"] == pytest.approx(within(0.2))
    assert coverage["cosine_calibrated"]["human_band_80"]["mean_width"] == pytest.approx(0.4)
    assert coverage["cosine_calibrated@whiten"]["reference_uncertainty_95"]["coverage"] == pytest.approx(within(0.1))
    # the ends of a band are not forms of their own
    assert set(evaluation.forms["hand"].index) == {"cosine_raw", "cosine_calibrated", "cosine_calibrated@whiten"}
    assert evaluation.to_dict()["coverage"]["hand"]["cosine_calibrated"]["human_band_80"]["pairs"] == 200


def test_the_html_page_embeds_a_reliability_diagram_and_reaches_no_network(scored):
    page = evaluation_html([("labelled.csv", evaluate({"fake": scored}, scale=(0, 5)))])
    assert '<img alt="reliability diagram of labelled.csv" src="data:image/png;base64,' in page
    assert "cosine_calibrated" in page and "labelled.csv" in page
    assert not re.search(r"https?:", re.sub(r"base64,[A-Za-z0-9+/=]+", "", page))


def test_a_form_equal_to_the_rescaled_labels_has_no_error_and_no_bias(scored):
    labels = scored.frame["score"].astype(float)
    evaluation = evaluate({"fake": with_column(scored, "cosine_calibrated", labels / 5)}, scale=(0, 5))
    row = evaluation.forms["fake"].loc["cosine_calibrated"]
    assert row["mae"] == 0 and row["bias"] == 0
    assert row["top_ties"] == pytest.approx(0.5)           # half the pairs are labelled 5
    assert evaluation.label == "score" and evaluation.n_pairs == 150
    assert evaluation.label_mean == pytest.approx(labels.mean() / 5)
    # unbounded forms get a Spearman and a mean in their own units, but no error
    zscore = evaluation.forms["fake"].loc["cosine_bg_zscore"]
    assert np.isnan(zscore["mae"]) and np.isnan(zscore["bias"]) and np.isfinite(zscore["mean"])


def test_spearman_is_the_scores_agreement_and_scale_defaults_to_the_labels_range(scored):
    evaluation = evaluate({"fake": scored})
    assert evaluation.scale == (0.0, 5.0)
    frame = evaluation.forms["fake"]
    assert frame["spearman_x100"].to_dict() == pytest.approx(scored.provenance["agreement"]["spearman_x100"])
    assert frame.loc["cosine_raw", "mae"] == pytest.approx(
        np.abs(np.clip(scored.frame["cosine_raw"], 0, 1) - scored.frame["score"].astype(float) / 5).mean())


def test_two_models_differ_by_their_mean_absolute_difference_on_0_1_forms(scored, labelled_pairs):
    other = FakeEmbedder(dimension=32, name="fake-small")
    other_scored = score_pairs(load_pairs(labelled_pairs), other, build_profile(other, None),
                               metrics=["cosine"])
    shifted = with_column(scored, "cosine_calibrated", scored.frame["cosine_calibrated"] - 0.1)
    evaluation = evaluate({"fake": scored, "shifted": shifted, "small": other_scored}, scale=(0, 5))
    differences = evaluation.differences
    assert set(differences) == {"cosine_raw", "cosine_calibrated", "cosine_anchor_minmax"}  # common 0-1 forms
    assert differences["cosine_calibrated"]["by_pair"]["fake vs shifted"] == pytest.approx(0.1)
    assert differences["cosine_raw"]["by_pair"]["fake vs shifted"] == 0
    assert differences["cosine_raw"]["by_pair"]["fake vs small"] > 0
    assert differences["cosine_raw"]["mean_abs_diff"] == pytest.approx(
        np.mean(list(differences["cosine_raw"]["by_pair"].values())))
    assert set(evaluation.forms["small"].index) == {"cosine_raw", "cosine_calibrated", "cosine_anchor_minmax"}
    assert "cosine_bg_percentile" in evaluation.forms["fake"].index      # each model keeps all its forms


def test_evaluation_refuses_unlabelled_or_different_pairs(scored, tmp_path, profile):
    path = tmp_path / "unlabelled.csv"
    pd.DataFrame({"a": ["one text", "two"], "b": ["another", "three"]}).to_csv(path, index=False)
    unlabelled = score_pairs(load_pairs(path), FakeEmbedder(), profile)
    with pytest.raises(InputError, match="no human scores"):
        evaluate({"fake": unlabelled})
    relabelled = with_column(scored, "score", scored.frame["score"].astype(float)[::-1].to_numpy())
    with pytest.raises(InputError, match="different labelled pairs"):
        evaluate({"a": scored, "b": relabelled})


def test_reports_show_the_evaluation_of_labelled_pairs(scored, profile):
    report = build_report(scored, profile, metric="cosine")
    table, note = report.evaluation_table()
    assert table["column"].tolist() == report.featured_columns()
    assert "0-5" in note
    html = render_html(report)
    assert "Evaluation against the human scores" in html and "top ties" in html


def test_a_hole_reads_as_a_hole_however_close_to_the_rule():
    frame = pd.DataFrame({"mae": [0.1, 0.1], "bias": [0.0, 0.0], "top_ties": [0.0, 0.0],
                          "spearman_x100": [80.0, 80.0], "mean": [0.5, 0.5], "worst_tenth": [0.9, 0.0],
                          "worst_tenth_ratio": [0.331, 0.335]}, index=["cosine_calibrated", "cosine_raw"])
    shown = readable_forms(frame)["worst tenth"]
    assert shown["cosine_calibrated"] == "0.331x, a hole, in 0.9-1.0"      # not "0.33x" under "< 1/3"
    assert shown["cosine_raw"] == "0.335x in 0.0-0.1"
