import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis import ScoredPairs, score_pairs
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.evaluation import evaluate, top_ties, unit_scores
from calibsim_gui.core.inputs import load_pairs
from calibsim_gui.core.profile_builder import build_profile
from calibsim_gui.core.reports import build_report
from calibsim_gui.core.reports.html import render_html
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(scope="module")
def profile():
    return build_profile(FakeEmbedder(), random_sentences(3000, seed=5), n_pairs=1500)


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
