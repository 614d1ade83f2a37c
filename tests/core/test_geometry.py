import json

import numpy as np
import pytest

from calibsim_gui.core.errors import InputError, NotFittedError
from calibsim_gui.core.geometry.transforms import (
    GEOMETRIES, AllButTheTop, GeometryTransform, MeanCentering, SoftCosineSpace, Whitening, embedding_moments, fit_geometries, get_geometries)


@pytest.fixture(scope="module")
def gaussian():
    """20,000 draws of a correlated 6-d Gaussian with a large common offset."""
    rng = np.random.default_rng(0)
    mixing = rng.normal(size=(6, 6))
    return rng.normal(size=(20_000, 6)) @ mixing + 5.0


def test_centering_removes_the_background_mean(gaussian):
    centred = MeanCentering().fit(gaussian).transform(gaussian)
    np.testing.assert_allclose(centred.mean(axis=0), 0, atol=1e-4)
    np.testing.assert_allclose(centred[:3], gaussian[:3] - gaussian.mean(axis=0), rtol=1e-5)


def test_whitening_a_known_gaussian_gives_identity_covariance(gaussian):
    whitening = Whitening().fit(gaussian)
    assert whitening.matrix_.shape == (6, 6) and whitening.warning_ is None
    # before the final L2 normalisation the background has exactly identity covariance
    white = (gaussian - whitening.mean_) @ whitening.matrix_
    np.testing.assert_allclose(np.cov(white.T, bias=True), np.eye(6), atol=1e-4)
    out = whitening.transform(gaussian)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1, atol=1e-5)
    # so new draws from the same Gaussian come out isotropic: equal variance in every direction
    fresh = np.random.default_rng(1).normal(size=(20_000, 6)) @ np.linalg.cholesky(
        np.cov(gaussian.T)).T + gaussian.mean(axis=0)
    variances = np.linalg.eigvalsh(np.cov(whitening.transform(fresh).T))
    assert variances.max() / variances.min() < 1.1


def test_whitening_can_keep_only_the_top_directions(gaussian):
    whitening = Whitening(n_components=2).fit(gaussian)
    assert whitening.transform(gaussian[:5]).shape == (5, 2)
    # W's columns are u_i / sqrt(lambda_i): the kept ones belong to the two largest variances
    kept = np.linalg.norm(whitening.matrix_, axis=0) ** -2
    np.testing.assert_allclose(kept, np.linalg.eigvalsh(np.cov(gaussian.T, bias=True))[::-1][:2], rtol=1e-4)


def test_whitening_a_background_smaller_than_the_dimension_drops_empty_directions():
    rng = np.random.default_rng(2)
    small = rng.normal(size=(10, 40))             # 10 texts span at most 9 centred directions
    whitening = Whitening().fit(small)
    assert whitening.n_components_ == 9
    assert "only 10 texts for 40 dimensions" in whitening.warning_
    out = whitening.transform(rng.normal(size=(100, 40)))
    assert np.isfinite(out).all() and np.abs(out).max() <= 1 + 1e-6


def test_all_but_the_top_removes_a_planted_dominant_direction():
    rng = np.random.default_rng(3)
    direction = rng.normal(size=50)
    direction /= np.linalg.norm(direction)
    background = rng.normal(size=(5000, 50)) + rng.normal(scale=20, size=(5000, 1)) * direction + 3.0
    abtt = AllButTheTop(n_directions=1).fit(background)
    assert abs(abtt.components_[0] @ direction) > 0.999
    out = abtt.transform(background)
    assert np.abs(out @ direction).max() < 0.1 * np.abs((background - background.mean(0)) @ direction).max()
    # the centred vector is projected, not the raw one: the output has mean 0
    np.testing.assert_allclose(out.mean(axis=0), 0, atol=1e-3)


def test_all_but_the_top_defaults_to_a_hundredth_of_the_dimension():
    x = np.random.default_rng(4).normal(size=(500, 384))
    assert AllButTheTop().fit(x).components_.shape == (4, 384)
    assert AllButTheTop().fit(x[:, :48]).components_.shape == (1, 48)


@pytest.mark.parametrize("kind", [MeanCentering, Whitening, AllButTheTop, SoftCosineSpace])
def test_transforms_round_trip_through_json_and_refuse_use_before_fit(kind, gaussian):
    with pytest.raises(NotFittedError, match="fit"):
        kind().transform(gaussian[:2])
    fitted = kind().fit(gaussian)
    loaded = GeometryTransform.from_dict(json.loads(json.dumps(fitted.to_dict())))
    assert type(loaded) is kind
    np.testing.assert_array_equal(loaded.transform(gaussian[:50]), fitted.transform(gaussian[:50]))
    with pytest.raises(ValueError, match="fitted on 6-d"):
        fitted.transform(np.zeros((1, 5)))


def test_registry_names_every_fix_and_refuses_unknown_ones(gaussian):
    assert list(GEOMETRIES) == ["none", "center", "whiten", "abtt", "soft"]
    assert all(g.description and g.label for g in GEOMETRIES.values())
    fitted = fit_geometries(gaussian, ["none", "whiten"])
    assert fitted["none"] is None and isinstance(fitted["whiten"], Whitening)
    with pytest.raises(InputError, match="unknown geometry"):
        get_geometries(["sphere"])


@pytest.mark.parametrize("kind", [MeanCentering, Whitening, AllButTheTop, SoftCosineSpace])
def test_fits_from_moments_summed_over_parts_equal_the_fit_on_all_rows(kind, gaussian):
    # what a cluster does: each block sends its moments, the driver adds them and fits once
    parts = np.array_split(gaussian[np.random.default_rng(5).permutation(len(gaussian))], 7)
    moments = [embedding_moments(part) for part in parts]
    n = sum(m[0] for m in moments)
    total = sum(m[1] for m in moments)
    cross = sum(m[2] for m in moments)
    whole = kind().fit(gaussian)
    merged = kind().fit_moments(n, total, cross)
    probe = np.random.default_rng(6).normal(size=(200, 6)) * 3 + 5
    a, b = merged.transform(probe), whole.transform(probe)
    # eigenvectors are defined up to sign: compare what scores see, the inner products
    np.testing.assert_allclose(a @ a.T, b @ b.T, rtol=1e-5, atol=1e-5)


def test_moments_refuse_too_few_or_broken_embeddings():
    with pytest.raises(ValueError, match="at least two"):
        Whitening().fit(np.ones((1, 4)))
    with pytest.raises(ValueError, match="NaN"):
        MeanCentering().fit(np.array([[0.0, np.nan], [1.0, 2.0]]))
    with pytest.raises(ValueError, match="do not fit together"):
        MeanCentering().fit_moments(10, np.zeros(3), np.zeros((4, 4)))


# --- issue 19: choosable geometry settings ---

def test_geometry_settings_choose_abtt_directions_and_whitening_dimension():
    from calibsim_gui.core.geometry.transforms import fit_geometries, geometry_settings

    rng = np.random.default_rng(7)
    background = rng.normal(size=(500, 12)) * np.linspace(3, 0.5, 12)
    fitted = fit_geometries(background, ["abtt", "whiten"],
                            geometry_settings(abtt_directions=3, whiten_dim=5))
    assert fitted["abtt"].components_.shape == (3, 12)
    assert fitted["whiten"].transform(background).shape == (500, 5)
    # independent: the removed directions are the top 3 principal axes (numpy SVD)
    _, _, vt = np.linalg.svd(background - background.mean(axis=0), full_matrices=False)
    np.testing.assert_allclose(np.abs(fitted["abtt"].components_ @ vt[:3].T), np.eye(3), atol=1e-4)
    defaults = fit_geometries(background, ["abtt", "whiten"])
    assert defaults["abtt"].components_.shape == (1, 12) and defaults["whiten"].n_components_ == 12
    assert geometry_settings() == {}
    with pytest.raises(InputError, match="n_directions"):
        fit_geometries(background, ["abtt"], geometry_settings(abtt_directions=12))
    with pytest.raises(InputError):
        fit_geometries(background, ["abtt"], {"wobble": {}})


def test_soft_cosine_space_settings_and_a_stored_s_that_is_no_correlation_is_refused(gaussian):
    from calibsim_gui.core.geometry.transforms import geometry_settings

    fitted = fit_geometries(gaussian, ["soft"], geometry_settings(soft_factors=3))["soft"]
    assert fitted.factors_.shape == (3, 6) and fitted.transform(gaussian[:4]).shape == (4, 9)
    assert fit_geometries(gaussian, ["soft"])["soft"].factors_.shape == (6, 6)   # min(64, dim)
    with pytest.raises(InputError, match="n_factors"):
        fit_geometries(gaussian, ["soft"], geometry_settings(soft_factors=7))
    stored = fitted.to_dict()
    broken = dict(stored, factors_=SoftCosineSpace().fit(gaussian * [1, 1, 1, 1, 1, 0]).to_dict()["factors_"])
    with pytest.raises(ValueError, match="do not fit together|unit diagonal"):
        GeometryTransform.from_dict(broken)
    scaled = fitted.to_dict()
    scaled["uniqueness_"] = type(fitted)().fit(gaussian).to_dict()["uniqueness_"]   # k = 6: u = 0
    with pytest.raises(ValueError, match="unit diagonal"):
        GeometryTransform.from_dict(scaled)
