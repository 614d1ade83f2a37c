import json
from dataclasses import replace

import numpy as np
import pytest

from calibsim_gui.core.errors import InputError, ProfileError
from calibsim_gui.core.calibration.profile import ReferenceProfile, merge_profiles
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.io.inputs import document_set
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(scope="module")
def corpus():
    return random_sentences(4000, seed=1)


@pytest.fixture(scope="module")
def profile(corpus):
    return build_profile(FakeEmbedder(), corpus, ProfileSettings(n_pairs=2000, seed=3, name="test profile"))


def test_profile_holds_every_form_and_provenance(profile):
    assert profile.forms() == ("calibrated", "anchor_minmax", "bg_minmax", "bg_percentile",
                               "bg_zscore", "bg_surprise")
    assert profile.background_pairs == 2000
    assert profile.query_reference.shape == (1000, 48)
    bg = profile.provenance["background"]
    assert (bg["sentences"], bg["pairs"], bg["seed"]) == (4000, 2000, 3)
    assert profile.provenance["versions"]["calibsim"]
    # a bag-of-words model cannot tell paraphrases from near-paraphrases: the ladder says so
    assert all("anchor ladder not monotone" in w for w in profile.warnings())


def test_save_and_load_give_the_same_calibration(profile, tmp_path):
    path = profile.save(tmp_path / "p.calibsim-profile")
    loaded = ReferenceProfile.load(path)
    raw = np.linspace(-0.5, 1, 50)
    for form, values in profile.calibrate("cosine", raw).items():
        np.testing.assert_allclose(loaded.calibrate("cosine", raw)[form], values, err_msg=form)
    assert not any(s in path.read_text() for s in random_sentences(20, seed=1))   # no corpus text


def test_profile_is_refused_for_another_model(profile):
    with pytest.raises(ProfileError, match="other-model"):
        profile.check_model(FakeEmbedder(name="other-model").fingerprint)


@pytest.mark.parametrize("damage, message", [
    (lambda d: d.update(schema_version=99), "schema version 99"),
    (lambda d: d.pop("metrics"), "damaged"),
    (lambda d: d["query_reference"].update(shape=[1000, 7]), "cannot reshape|dimension"),
    (lambda d: d.update(format="something"), "not a calibsim profile"),
])
def test_damaged_profiles_are_refused_with_a_reason(profile, tmp_path, damage, message):
    data = profile.to_dict()
    damage(data)
    path = tmp_path / "bad.calibsim-profile"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match=message):
        ReferenceProfile.load(path)


def test_nan_in_a_profile_is_refused(profile, tmp_path):
    text = json.dumps(profile.to_dict()).replace('"mean": ', '"mean": NaN, "x": ', 1)
    path = tmp_path / "nan.calibsim-profile"
    path.write_text(text)
    with pytest.raises(InputError, match="NaN"):
        ReferenceProfile.load(path)


def test_small_background_warns(corpus):
    small = build_profile(FakeEmbedder(), corpus[:300], ProfileSettings(n_pairs=500))
    assert any("fewer" in w or "only 500" in w for w in small.warnings())



def test_a_build_encodes_every_text_once_before_scoring_its_background_pairs(corpus, monkeypatch):
    """On a GPU the pairs are the CPU's work: the anchors and reference sentences are encoded
    before it, not after, so the device does not wait between encodings; nothing twice."""
    from calibsim_gui.core.calibration import profile_builder
    from calibsim_gui.core.calibration.profile_builder import encode_references

    embedder, encoded_then = FakeEmbedder(), []
    scored = profile_builder.pair_sketches
    monkeypatch.setattr(profile_builder, "pair_sketches",
                        lambda *args: encoded_then.append(sum(map(len, embedder.batches))) or scored(*args))
    settings = ProfileSettings(n_pairs=300)
    built = build_profile(embedder, corpus[:500], settings)
    references = FakeEmbedder()
    encode_references(references, settings)
    others = sum(map(len, references.batches))
    assert encoded_then == [sum(map(len, embedder.batches))] == [500 + others]
    texts = [t for batch in embedder.batches for t in batch]
    assert len(set(texts)) == len(texts)
    assert texts[:others] == [t for batch in references.batches for t in batch]   # they came first
    assert built.background_pairs == 300


def test_merge_of_two_halves_is_exact_and_order_independent(corpus):
    emb = FakeEmbedder()
    a = build_profile(emb, corpus[:2000], ProfileSettings(n_pairs=1000, seed=1))
    b = build_profile(emb, corpus[2000:], ProfileSettings(n_pairs=1000, seed=2))
    ab, ba = merge_profiles(a, b), merge_profiles(b, a)
    assert ab.background_pairs == 2000
    for name in ab.metrics:
        x, y = ab.metrics[name].background, ba.metrics[name].background
        parts = [a.metrics[name].background, b.metrics[name].background]
        assert x.mean == pytest.approx(sum(p.mean * p.n for p in parts) / 2000)
        assert (x.min, x.max) == (min(p.min for p in parts), max(p.max for p in parts))
        assert x.mean == pytest.approx(y.mean) and x.m2 == pytest.approx(y.m2)
        for q in (0.1, 0.5, 0.9):
            assert abs(x.quantile(q) - y.quantile(q)) <= 1e-9 + 2 * x.rank_error() * x.std * 10


def test_merge_refuses_a_background_counted_twice(corpus, tmp_path):
    emb = FakeEmbedder()
    a = build_profile(emb, corpus[:1000], ProfileSettings(n_pairs=300, seed=1))
    with pytest.raises(ProfileError, match="same background pairs twice: .* the very same background"):
        merge_profiles(a, ReferenceProfile.from_dict(a.to_dict()))       # one profile given twice
    news, copy = tmp_path / "news.txt", tmp_path / "copy.txt"
    for path in (news, copy):
        path.write_text("the same news\n")
    b, c = (build_profile(emb, replace(document_set(corpus[start:start + 1000]), files=(path,)),
                          ProfileSettings(n_pairs=300, seed=seed))
            for start, path, seed in ((1000, news, 2), (2000, copy, 3)))
    with pytest.raises(ProfileError, match="same background file .sha256"):
        merge_profiles(b, c)
    with pytest.raises(ProfileError, match="same background file"):          # also through a merged part
        merge_profiles(merge_profiles(a, b), c)
    assert merge_profiles(a, b).background_pairs == 600


def test_merge_refuses_profiles_of_different_models(corpus):
    a = build_profile(FakeEmbedder(), corpus[:500], ProfileSettings(n_pairs=200))
    b = build_profile(FakeEmbedder(name="other"), corpus[500:1000], ProfileSettings(n_pairs=200))
    with pytest.raises(ProfileError, match="built with model"):
        merge_profiles(a, b)


def test_new_anchors_refit_the_ladder_and_keep_the_background(profile):
    from calibsim_gui.core.references.anchors import AnchorSet
    from calibsim_gui.core.calibration.profile_builder import with_anchors

    anchors = AnchorSet.from_dict({"name": "mine", "levels": [
        {"name": "low", "target": 0.0}, {"name": "high", "target": 1.0}], "pairs": [
        {"level": "low", "text_a": "w1 w2 w3", "text_b": "w7 w8 w9"},
        {"level": "high", "text_a": "w1 w2 w3", "text_b": "w1 w2 w3"}]})
    changed = with_anchors(profile, FakeEmbedder(), anchors)
    assert changed.anchors.name == "mine" and len(changed.metrics["cosine"].anchor_scores) == 2
    assert changed.metrics["cosine"].background is profile.metrics["cosine"].background
    raw = np.array([0.2, 0.6])
    np.testing.assert_allclose(changed.calibrate("cosine", raw)["bg_percentile"],
                               profile.calibrate("cosine", raw)["bg_percentile"])
    np.testing.assert_array_equal(changed.calibrate("cosine", raw)["calibrated"],    # the ladder checks
                                  profile.calibrate("cosine", raw)["calibrated"])   # the scale only
    assert not np.allclose(changed.calibrate("cosine", raw)["anchor_minmax"],
                           profile.calibrate("cosine", raw)["anchor_minmax"])


def test_geometry_fixes_are_fitted_on_the_background_and_calibrated_under_the_same_fix(profile):
    assert profile.geometry_names() == ("none", "center", "whiten", "abtt", "soft")
    assert profile.provenance["geometries"]["fitted_on_sentences"] == 4000
    whiten = profile.references("whiten")
    assert list(whiten) == ["cosine"]                  # fixes cover cosine by default
    background = whiten["cosine"].background
    assert background.n == 2000
    # the same background pairs, scored under the fix: centred cosines are no longer crowded above 0
    assert abs(background.mean) < 0.5 * profile.metrics["cosine"].background.mean
    median = background.quantile(0.5)
    assert profile.calibrate("cosine", [median], "whiten")["bg_percentile"][0] == pytest.approx(50, abs=1)
    assert profile.calibrate("cosine", [median], "none")["bg_percentile"][0] < 20


def test_geometry_references_survive_save_and_load(profile, tmp_path):
    loaded = ReferenceProfile.load(profile.save(tmp_path / "g.calibsim-profile"))
    assert loaded.geometry_names() == profile.geometry_names()
    emb = FakeEmbedder().encode_batch(["a cat sat", "stocks fell", "rain tomorrow"])
    for fix in ("center", "whiten", "abtt", "soft"):
        np.testing.assert_array_equal(loaded.transformed(emb, fix), profile.transformed(emb, fix))
        raw = np.linspace(-0.3, 1, 20)
        for form, values in profile.calibrate("cosine", raw, fix).items():
            np.testing.assert_allclose(loaded.calibrate("cosine", raw, fix)[form], values, err_msg=form)


def test_a_profile_without_geometry_fixes_still_loads_and_says_what_is_missing(profile, tmp_path):
    data = profile.to_dict()
    del data["geometries"]                              # as written before geometry fixes existed
    path = tmp_path / "old.calibsim-profile"
    path.write_text(json.dumps(data))
    old = ReferenceProfile.load(path)
    assert old.geometry_names() == ("none",)
    np.testing.assert_allclose(old.calibrate("cosine", [0.3])["calibrated"],
                               profile.calibrate("cosine", [0.3])["calibrated"])
    with pytest.raises(ProfileError, match="no references for geometry fix 'whiten'"):
        old.calibrate("cosine", [0.3], "whiten")
    with pytest.raises(ProfileError, match="no dot references under geometry 'whiten'"):
        profile.calibrate("dot", [0.3], "whiten")


def test_a_damaged_geometry_fix_is_refused(profile, tmp_path):
    data = profile.to_dict()
    data["geometries"]["whiten"]["transform"]["mean_"]["shape"] = [7]
    path = tmp_path / "bad.calibsim-profile"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="damaged|another dimension"):
        ReferenceProfile.load(path)


def test_merging_drops_geometry_fixes_and_says_so(corpus):
    emb = FakeEmbedder()
    a = build_profile(emb, corpus[:1000], ProfileSettings(n_pairs=500, seed=1))
    b = build_profile(emb, corpus[1000:2000], ProfileSettings(n_pairs=500, seed=2, geometries=()))
    merged = merge_profiles(a, b)
    assert merged.geometry_names() == ("none",)
    assert any("geometry fixes (abtt, center, soft, whiten) were dropped" in w for w in merged.warnings())


def test_new_anchors_refit_the_ladder_under_every_geometry_fix(profile):
    from calibsim_gui.core.references.anchors import builtin_anchors
    from calibsim_gui.core.calibration.profile_builder import with_anchors

    anchors = builtin_anchors()
    changed = with_anchors(profile, FakeEmbedder(), type(anchors)(
        "fewer", anchors.levels, anchors.pairs[::2]))
    for fix in ("whiten", "abtt"):
        old, new = profile.references(fix)["cosine"], changed.references(fix)["cosine"]
        assert new.background is old.background and len(new.anchor_scores) == len(old.anchor_scores[::2])
        np.testing.assert_allclose(new.anchor_scores, old.anchor_scores[::2], atol=1e-6)


def test_a_profile_records_its_precision_and_says_when_used_in_another(corpus, tmp_path):
    from calibsim_gui.core.analysis.pairs import score_pairs
    from calibsim_gui.core.io.inputs import load_pairs

    bf16 = FakeEmbedder()
    bf16.precision = "bfloat16"
    built = build_profile(bf16, corpus[:500], ProfileSettings(n_pairs=200))
    loaded = ReferenceProfile.load(built.save(tmp_path / "bf16.calibsim-profile"))
    assert loaded.precision == "bfloat16" and loaded.warnings(precision="bfloat16") == built.warnings()
    assert any("built in bfloat16 but these scores were computed in float32" in w
               for w in loaded.warnings(precision="float32"))
    f32 = build_profile(FakeEmbedder(), corpus[500:1000], ProfileSettings(n_pairs=200))
    with pytest.raises(ProfileError, match="different precisions"):
        merge_profiles(loaded, f32)
    (tmp_path / "pairs.csv").write_text("sentence1,sentence2\na cat,a dog\n")
    scored = score_pairs(load_pairs(tmp_path / "pairs.csv"), FakeEmbedder(), loaded)
    assert scored.provenance["model"]["precision"] == "float32"
    assert any("built in bfloat16" in note for note in scored.notes)


def _as_old_schema(profile, version: int) -> dict:
    """`profile` as calibsim 0.1 (no scale ends) or 0.2 (ends, an exponent fitted to the ladder,
    no per-language ends or human band) wrote it."""
    d = json.loads(json.dumps(profile.to_dict()))
    d["schema_version"] = version
    for metrics in [d["metrics"]] + [g["metrics"] for g in d["geometries"].values()]:
        for m in metrics.values():
            del m["unrelated_by_language"], m["band"]
            m["calibrators"]["calibrated"] = {"type": "ReferenceCurveCalibrator", "gamma_": 1.6}
            if version == 1:
                del m["unrelated"], m["identical"]
    return d


@pytest.mark.parametrize("version", [1, 2])
def test_an_old_profile_is_refused_with_the_upgrade_command_and_upgrades_keeping_its_background(
        profile, tmp_path, version):
    from calibsim_gui.core.calibration.profile_builder import upgrade_profile

    old = _as_old_schema(profile, version)
    (tmp_path / "old.calibsim-profile").write_text(json.dumps(old))
    with pytest.raises(ProfileError, match="calibsim profile upgrade"):
        ReferenceProfile.load(tmp_path / "old.calibsim-profile")
    upgraded = upgrade_profile(old, FakeEmbedder())
    assert upgraded.background_pairs == profile.background_pairs
    assert set(upgraded.geometries) == set(profile.geometries)
    s = np.linspace(-0.2, 1.0, 25)
    for name in profile.metrics:
        np.testing.assert_allclose(upgraded.calibrate(name, s)["calibrated"],
                                   profile.calibrate(name, s)["calibrated"], rtol=1e-9)
        np.testing.assert_allclose(upgraded.calibrate(name, s)["bg_percentile"],
                                   profile.calibrate(name, s)["bg_percentile"])
    assert upgraded.provenance["upgraded"]["from_schema"] == version
    assert upgraded.metrics["cosine"].unrelated_by_language.keys() == profile.metrics["cosine"].unrelated_by_language.keys()
    with pytest.raises(ProfileError, match="built with model"):
        upgrade_profile(old, FakeEmbedder(name="other"))


# --- issue 19: soft cosine (cosine in the soft-cosine space) and the radial metric, calibrated ---

SCORED = [("The cat sat on the mat.", "The cat sat on the mat."),
          ("Stocks fell sharply today.", "The recipe needs two eggs."),
          ("A man plays guitar.", "A man plays the piano."),
          ("Rain is expected tomorrow.", "Tomorrow, heavy rain is expected in the north.")]


def _scored(profile, tmp_path, **options):
    import pandas as pd

    from calibsim_gui.core.analysis.pairs import score_pairs
    from calibsim_gui.core.io.inputs import load_pairs

    path = tmp_path / "pairs.csv"
    pd.DataFrame(SCORED, columns=["sentence1", "sentence2"]).to_csv(path, index=False)
    return score_pairs(load_pairs(path), FakeEmbedder(), profile, **options).frame


def test_soft_cosine_is_stored_and_calibrated_with_identical_texts_on_top(profile, corpus, tmp_path):
    from calibsim_gui.core.geometry.transforms import feature_correlation
    from calibsim_gui.core.geometry.metrics import soft_cosine

    space = profile.transform("soft")
    assert space.factors_.shape == (48, 48)                  # min(64, dim) factors: S is R itself
    background = FakeEmbedder().encode_batch(list(dict.fromkeys(corpus))).astype(np.float64)
    np.testing.assert_allclose(space.similarity(), np.corrcoef(background, rowvar=False), atol=2e-5)
    frame = _scored(profile, tmp_path, geometry="soft")
    a, b = (FakeEmbedder().encode_batch([p[i] for p in SCORED]) for i in (0, 1))
    s = feature_correlation(np.cov(background, rowvar=False, bias=True))
    np.testing.assert_allclose(frame["cosine_raw@soft"], soft_cosine(a, b, s), atol=1e-5)
    percentile = frame["cosine_bg_percentile@soft"].to_numpy()
    assert percentile.min() >= 0 and percentile.max() <= 100
    for form in ("calibrated", "bg_percentile", "bg_zscore", "anchor_minmax", "bg_minmax"):
        values = frame[f"cosine_{form}@soft"].to_numpy()
        assert values[0] == values.max(), form
    assert frame["cosine_calibrated@soft"].iloc[0] == pytest.approx(1.0, abs=1e-3)


def test_soft_cosine_s_round_trips_and_a_tampered_s_is_refused(profile, tmp_path):
    import base64

    from calibsim_gui.core.calibration.profile import content_digest

    loaded = ReferenceProfile.load(profile.save(tmp_path / "s.calibsim-profile"))
    np.testing.assert_array_equal(loaded.transform("soft").similarity(), profile.transform("soft").similarity())
    data = json.loads((tmp_path / "s.calibsim-profile").read_text())
    stored = data["geometries"]["soft"]["transform"]
    factors = np.frombuffer(base64.b64decode(stored["factors_"]["data"]), "<f4").copy()
    factors[0] *= 1.5                                           # S changed, checksum stale
    stored["factors_"]["data"] = base64.b64encode(factors.tobytes()).decode()
    (tmp_path / "t.calibsim-profile").write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="modified or damaged"):
        ReferenceProfile.load(tmp_path / "t.calibsim-profile")
    data["content_sha256"] = content_digest(data)               # checksum recomputed: S itself is checked
    (tmp_path / "u.calibsim-profile").write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="unit diagonal"):
        ReferenceProfile.load(tmp_path / "u.calibsim-profile")
    stored["uniqueness_"]["shape"], stored["uniqueness_"]["data"] = [2], stored["uniqueness_"]["data"][:12]
    data["content_sha256"] = content_digest(data)
    (tmp_path / "v.calibsim-profile").write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="damaged or hand-edited"):
        ReferenceProfile.load(tmp_path / "v.calibsim-profile")


def test_a_profile_without_s_names_the_command_that_builds_it(profile, tmp_path):
    data = profile.to_dict()
    del data["geometries"]["soft"]
    path = tmp_path / "no-s.calibsim-profile"
    path.write_text(json.dumps(data))
    old = ReferenceProfile.load(path)
    with pytest.raises(ProfileError, match="no references for geometry fix 'soft'.*calibsim profile build"):
        _scored(old, tmp_path, geometry="soft")


def test_radial_metric_is_calibrated_with_identical_texts_on_top(profile, tmp_path):
    from calibsim_gui.core.geometry.metrics import METRICS

    frame = _scored(profile, tmp_path, metrics=["radial"])
    a, b = (FakeEmbedder().encode_batch([p[i] for p in SCORED]).astype(np.float64) for i in (0, 1))
    na, nb = np.sqrt((a * a).sum(1)), np.sqrt((b * b).sum(1))
    theta = np.arccos(np.clip((a * b).sum(1) / na / nb, -1, 1))
    np.testing.assert_allclose(frame["radial_raw"], np.sqrt((na - nb) ** 2 + na * nb * theta ** 2), atol=1e-5)
    assert METRICS["radial"].orientation == "lower = more similar"
    percentile = frame["radial_bg_percentile"].to_numpy()
    assert percentile.min() >= 0 and percentile.max() <= 100
    for form in ("calibrated", "bg_percentile", "bg_zscore", "anchor_minmax", "bg_minmax"):
        values = frame[f"radial_{form}"].to_numpy()
        assert values[0] == values.max(), form
