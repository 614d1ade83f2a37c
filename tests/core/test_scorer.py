"""`Scorer`: settings checked when it is made, and a run that never changes the profile it was given."""

import pandas as pd
import pytest

from calibsim_gui.core.analysis.pairs import Scorer
from calibsim_gui.core.calibration.profile import content_digest
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.references.reference_scale import reference_sentences
from tests.core.test_reference_languages import _pairs
from tests.fakes import FakeEmbedder


@pytest.fixture(scope="module")
def french(tmp_path_factory):
    """French pairs scored with a profile that has no French end yet."""
    embedder = FakeEmbedder()
    profile = build_profile(embedder, None)
    table = _pairs(tmp_path_factory.mktemp("fr"), reference_sentences("fr")[:60], "fr.csv")
    before = content_digest(profile.to_dict())
    scorer = Scorer(embedder, profile, metrics=["cosine"], interval=True)
    return embedder, profile, before, scorer, table, scorer.score(table)


def test_scoring_pairs_in_a_new_language_leaves_the_given_profile_unchanged(french):
    _, profile, before, scorer, table, scored = french
    assert scored.provenance["reference_languages"] == {"en": 0, "fr": len(table.frame)}
    assert content_digest(profile.to_dict()) == before          # not one number of it changed
    assert "fr" not in profile.provenance["scale"]["languages"]
    assert scorer.profile_ is not profile
    assert "fr" in scorer.profile_.provenance["scale"]["languages"]
    assert "fr" in scorer.profile_.metrics["cosine"].unrelated_by_language
    assert scored.provenance["references"]["profile_provenance"] is scorer.profile_.provenance


def test_the_profile_a_run_measured_scores_the_same_and_measures_nothing_more(french):
    embedder, _, _, scorer, table, scored = french
    kept = scorer.profile_
    digest = content_digest(kept.to_dict())
    again = Scorer(embedder, kept, metrics=["cosine"], interval=True)
    pd.testing.assert_frame_equal(again.score(table).frame, scored.frame)
    assert again.profile_ is kept and content_digest(kept.to_dict()) == digest


def test_an_english_run_returns_the_profile_it_was_given(tmp_path):
    embedder = FakeEmbedder()
    profile = build_profile(embedder, None)
    scorer = Scorer(embedder, profile, metrics=["cosine"])
    scorer.score(_pairs(tmp_path, reference_sentences()[:20], "en.csv"))
    assert scorer.profile_ is profile


@pytest.mark.parametrize("settings, error", [
    ({"geometry": "sphere"}, InputError), ({"long_texts": "wrap"}, InputError),
    ({"chunk_aggregate": "median"}, InputError), ({"chunk_pairs": 0}, ValueError),
])
def test_settings_are_refused_when_the_scorer_is_made_before_any_table(settings, error):
    embedder = FakeEmbedder()
    with pytest.raises(error):
        Scorer(embedder, build_profile(embedder, None), **settings)


def test_the_plan_names_the_metrics_scored_under_each_geometry():
    embedder = FakeEmbedder()
    scorer = Scorer(embedder, build_profile(embedder, None), metrics=["cosine", "euclidean"])
    assert scorer.plan_ == {"none": ["cosine", "euclidean"]}
