"""Shared files are untrusted: tampered sketches never reach native code, hand-edited profiles and
human calibrations are checked for meaning, not only syntax (issue 16)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from calibsim_gui.core.analysis.pairs import _check_human
from calibsim_gui.core.errors import InputError, ProfileError
from calibsim_gui.core.calibration.human import HumanCalibrator, HumanFit
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.calibration.profile import DIGEST_KEY, ReferenceProfile, content_digest
from calibsim_gui.core.calibration.profile_builder import build_profile, builtin_profile_path
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.calibration.sketch import ScoreSketch, read_kll_layout
from tests.fakes import FakeEmbedder, random_sentences

BOUNDS = {"calibrated": (0, 1), "bg_percentile": (0, 100), "bg_surprise": (0, np.inf)}


def assert_sane(profile: ReferenceProfile) -> None:
    """Every form of every metric: finite, ordered like the scores, inside its declared range."""
    for geometry in profile.geometry_names():
        for metric, ref in profile.references(geometry).items():
            values = np.concatenate([ref.anchor_scores, ref.unrelated, [ref.identical]])
            sim = np.linspace(values.min() - 1, values.max() + 1, 101)
            raw = METRICS[metric].as_similarity(sim)          # its own inverse
            for form, out in profile.calibrate(metric, raw, geometry).items():
                low, high = BOUNDS.get(form, (-np.inf, np.inf))
                assert np.isfinite(out).all() and np.all(np.diff(out) >= 0), (metric, form)
                assert low <= out.min() and out.max() <= high, (metric, form)


# --------------------------------------------------------------------------- sketch bytes


@pytest.mark.parametrize("n", [0, 1, 7, 2000, 2001, 60_000])
def test_real_sketch_bytes_pass_the_layout_check(n):
    from datasketches import kll_doubles_sketch

    kll = kll_doubles_sketch(2000)
    if n:
        kll.update(np.random.default_rng(n).normal(size=n))
    layout = read_kll_layout(kll.serialize())
    assert (layout.n, len(layout.items)) == (n, kll.num_retained)
    if n:
        assert (layout.min, layout.max) == (kll.get_min_value(), kll.get_max_value())


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[:7], "too short"),
    (lambda b: b[:-8], "bytes; its header implies"),
    (lambda b: b + b"\0" * 8, "bytes; its header implies"),
    (lambda b: b[:2] + b"\x07" + b[3:], "header is not a KLL"),           # family
    (lambda b: b[:6] + b"\x02" + b[7:], "header is not a KLL"),           # m
    (lambda b: b[:4] + b"\x00\x00" + b[6:], "header is not a KLL"),       # k = 0
    (lambda b: b[:18] + b"\xff" + b[19:], "levels or min k"),             # 255 levels
    (lambda b: b[:8] + (10**9).to_bytes(8, "little") + b[16:], "do not add up"),
    (lambda b: b[:-8] + np.array([np.nan]).tobytes(), "not finite"),
    (lambda b: b[:-8] + np.array([1e300]).tobytes(), "outside its own range"),
])
def test_damaged_sketch_bytes_are_refused_before_the_library_reads_them(damage, message):
    sketch = ScoreSketch.of(np.random.default_rng(0).normal(size=5000))
    data = sketch.kll.serialize()
    with pytest.raises(ValueError, match=message):
        read_kll_layout(damage(data))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(n=d["n"] + 1), "summary says"),
    (lambda d: d.update(n=float(d["n"])), "summary says"),
    (lambda d: d.update(max=d["max"] + 1), "range differs"),
    (lambda d: d.update(m2=-1.0), "spread"),
    (lambda d: d.update(mean=d["max"] + 5), "mean"),
    (lambda d: d.update(top=d["top"][::-1]), "top background values"),
    (lambda d: d.update(top=d["top"][1:]), "top background values"),
    (lambda d: d.update(kll="%%%"), "not base64"),
    (lambda d: d.update(kll_k=200), "k = 2000"),
])
def test_summaries_inconsistent_with_their_sketch_are_refused(edit, message):
    d = ScoreSketch.of(np.random.default_rng(1).normal(size=5000)).to_dict()
    edit(d)
    with pytest.raises(ValueError, match=message):
        ScoreSketch.from_dict(d)


FLIP_SCRIPT = textwrap.dedent(r'''
    import base64, json, random, sys
    from calibsim_gui.core.errors import CalibsimError
    from calibsim_gui.core.calibration.profile import DIGEST_KEY, ReferenceProfile, content_digest
    from tests.core.test_profile_integrity import assert_sane

    document = json.loads(open(sys.argv[1], encoding="utf-8").read())
    backgrounds = [m["background"] for m in document["metrics"].values()]
    rng, outcome = random.Random(16), {}
    for recompute in (False, True):
        for i in range(200):
            where = rng.choice(backgrounds)
            original, digest = where["kll"], document[DIGEST_KEY]
            data = bytearray(base64.b64decode(original))
            data[rng.randrange(80) if i % 2 else rng.randrange(len(data))] ^= rng.randrange(1, 256)
            where["kll"] = base64.b64encode(bytes(data)).decode()
            if recompute:
                document[DIGEST_KEY] = content_digest(document)
            try:
                assert_sane(ReferenceProfile.from_dict(document, path="copy.calibsim-profile"))
                kind = "loaded"
            except CalibsimError as error:
                assert str(error), "an error without a message"
                kind = "checksum" if "checksum" in str(error) else "refused"
            where["kll"], document[DIGEST_KEY] = original, digest
            key = f"{'recomputed' if recompute else 'stale'} {kind}"
            outcome[key] = outcome.get(key, 0) + 1
    print(json.dumps(outcome))
    print(json.dumps(outcome), file=sys.stderr)
''')


def test_200_byte_flips_in_sketches_never_crash_the_process(tmp_path):
    """One subprocess for all loads: a segmentation fault shows as a negative return code."""
    document = json.loads(builtin_profile_path("all-MiniLM-L6-v2").read_text(encoding="utf-8"))
    # the sketches of a similarity and a distance, without the geometry fixes: loaded faster
    document.update(geometries={}, query_reference=None,
                    metrics={m: document["metrics"][m] for m in ("cosine", "euclidean")})
    document[DIGEST_KEY] = content_digest(document)
    path = tmp_path / "copy.calibsim-profile"
    path.write_text(json.dumps(document))
    done = subprocess.run([sys.executable, "-c", FLIP_SCRIPT, str(path)], capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["stale checksum"] == 200                     # the checksum stops every flip
    assert outcome.get("recomputed refused", 0) + outcome.get("recomputed loaded", 0) == 200
    assert outcome.get("recomputed refused", 0) >= 150          # the checks of meaning stop most


# --------------------------------------------------------------------------- profiles


@pytest.fixture(scope="module")
def document():
    profile = build_profile(FakeEmbedder(), random_sentences(1500, seed=2),
                            ProfileSettings(n_pairs=1500, seed=1, geometries=("whiten",)))
    return profile.to_dict()


def _cal(d, form, metric="cosine"):
    return d["metrics"][metric]["calibrators"][form]


def _all_equal_one(d):
    """Hand-moved scale ends, consistent with each other: nearly every score reads 1.0."""
    m = d["metrics"]["cosine"]
    m["unrelated"] = [-5.0] * len(m["unrelated"])
    m["identical"] = -4.999
    m["unrelated_by_language"] = {code: [-5.0] * len(v) for code, v in m["unrelated_by_language"].items()}
    _cal(d, "calibrated").update(unrelated_=-5.0, identical_=-4.999, unrelated_resampled_=m["unrelated"][1:],
                                 unrelated_by_language_=m["unrelated_by_language"])


def _scaled_percentiles(d):
    cal = _cal(d, "bg_percentile")
    cal.update(cum_=[2 * c for c in cal["cum_"]], n_=cal["n_"])


@pytest.mark.parametrize("edit, message", [
    (_all_equal_one, "a text with itself scores -4.999, not 1"),
    (_scaled_percentiles, "percentile table"),
    (lambda d: _cal(d, "bg_percentile").update(items_=[], cum_=[0.0], n_=0.0), "percentile table"),
    (lambda d: _cal(d, "bg_zscore").update(std_=-_cal(d, "bg_zscore")["std_"]), "positive standard deviation"),
    (lambda d: _cal(d, "bg_zscore").update(std_=2 * _cal(d, "bg_zscore")["std_"]), "bg_zscore form was not fitted"),
    (lambda d: _cal(d, "bg_minmax").update(low_=1.0, high_=0.5), "high one above the low one"),
    (lambda d: _cal(d, "calibrated").update(shift=_cal(d, "calibrated")["shift"] * 1.5),
     "calibrated form was not fitted"),
    (lambda d: _cal(d, "calibrated").update(unrelated_by_language_={"fr": [0.0] * 51}),
     "calibrated form was not fitted"),
    (lambda d: _cal(d, "bg_surprise").update(sigma_=-1.0), "tail fit"),
    (lambda d: _cal(d, "bg_surprise").update(scale_=7.0), "bg_surprise form was not fitted"),
    (lambda d: d["metrics"]["cosine"]["calibrators"].pop("bg_zscore"), "calibrated forms are not"),
    (lambda d: d["metrics"]["cosine"]["calibrators"].update(calibrated=_cal(d, "bg_zscore")),
     "calibrated forms are not"),
    (lambda d: d["metrics"]["dot"].update(identical=-1e6), "identical texts do not score above"),
    (lambda d: d["metrics"]["cosine"].update(identical=-2.0), "a text with itself scores -2, not 1"),
    (lambda d: d["metrics"]["cosine"]["anchor_scores"].pop(), "one per anchor pair"),
    (lambda d: d["geometries"]["whiten"]["metrics"]["cosine"]["calibrators"]["anchor_minmax"].update(
        high_=9.0), "cosine under geometry whiten: the anchor_minmax form"),
    (lambda d: d["model"].update(dimension=-3), "dimension"),
    (lambda d: d["model"].update(name=None), "name, digest or dimension"),
    (lambda d: d.update(provenance=["x"]), "provenance"),
    (lambda d: d["provenance"].update(geometries_dropped=5), "provenance"),
])
def test_hand_edited_profiles_are_refused_with_what_is_wrong(document, tmp_path, edit, message):
    d = json.loads(json.dumps(document))
    edit(d)
    path = tmp_path / "edited.calibsim-profile"
    path.write_text(json.dumps(d))
    with pytest.raises(ProfileError, match=message) as caught:
        ReferenceProfile.load(path)
    assert str(path) in str(caught.value) and "Fix: rebuild it" in str(caught.value)


def test_the_unedited_document_and_the_built_in_profile_load_and_are_sane(document, tmp_path):
    path = tmp_path / "ok.calibsim-profile"
    path.write_text(json.dumps(document))                    # no checksum: accepted, checked
    assert_sane(ReferenceProfile.load(path))
    assert_sane(ReferenceProfile.load(builtin_profile_path("all-MiniLM-L6-v2")))


def test_a_saved_profile_carries_a_checksum_and_any_change_is_refused(document, tmp_path):
    path = ReferenceProfile.from_dict(document).save(tmp_path / "saved.calibsim-profile")
    saved = json.loads(path.read_text())
    assert saved[DIGEST_KEY] == content_digest(saved)
    saved["provenance"]["name"] = "renamed by hand"
    path.write_text(json.dumps(saved, indent=1))
    with pytest.raises(ProfileError, match="modified or damaged .* Fix: rebuild it with `calibsim profile build`"):
        ReferenceProfile.load(path)


def test_numbers_that_overflow_are_refused(document, tmp_path):
    text = json.dumps(document).replace('"identical": ', '"identical": 1e999, "x": ', 1)
    path = tmp_path / "huge.calibsim-profile"
    path.write_text(text)
    with pytest.raises(InputError, match="1e999 is too large"):
        ReferenceProfile.load(path)


# --------------------------------------------------------------------------- human calibrations


@pytest.fixture(scope="module")
def human_document(tmp_path_factory):
    rng = np.random.default_rng(0)
    scores = rng.uniform(-0.2, 1, 400)
    human = np.clip(5 * scores + rng.normal(0, 0.5, 400), 0, 5)
    calibrator = HumanCalibrator(model=FakeEmbedder().fingerprint.id).fit(scores, human)
    path = HumanFit(calibrator, {"mae": 0.1}, {"pairs": 400}).save(
        tmp_path_factory.mktemp("human") / "fit.calibsim-human")
    return json.loads(path.read_text())


@pytest.mark.parametrize("edit, message", [
    (lambda c: c.update(model=None), "names no model"),
    (lambda c: c.pop("model"), "'model'"),
    (lambda c: c.update(model=""), "names no model"),
    (lambda c: c.update(y_=[1.0] * (len(c["y_"]) - 1) + [1.5]), "into 0-1"),
    (lambda c: c.update(y_=c["y_"][::-1]), "increasing"),
    (lambda c: c.update(x_=c["x_"][::-1]), "increasing"),
    (lambda c: c.update(x_=[], y_=[]), "increasing"),
    (lambda c: c.update(scale=[5, 0]), "not a range"),
    (lambda c: c.update(metric="cosinus"), "unknown metric"),
    (lambda c: c.update(n_pairs_=3), "at least 100 pairs"),
])
def test_hand_edited_human_calibrations_are_refused(human_document, tmp_path, edit, message):
    d = json.loads(json.dumps(human_document))
    edit(d["calibrator"])
    path = tmp_path / "edited.calibsim-human"
    path.write_text(json.dumps(d))
    with pytest.raises(InputError, match=message) as caught:
        HumanFit.load(path)
    assert str(path) in str(caught.value) and "calibsim human fit" in str(caught.value)


def test_overflowing_human_calibration_is_refused(human_document, tmp_path):
    path = tmp_path / "huge.calibsim-human"
    path.write_text(json.dumps(human_document).replace('"n_pairs_": 400', '"n_pairs_": 1e999'))
    with pytest.raises(InputError, match="too large"):
        HumanFit.load(path)


def test_a_human_calibration_naming_no_model_is_not_applied():
    with pytest.raises(ProfileError, match="names no model"):
        _check_human([HumanCalibrator(model=None)], {"none": ["cosine"]}, FakeEmbedder())


def test_loaded_human_calibration_maps_into_0_1(human_document, tmp_path):
    path = tmp_path / "ok.calibsim-human"
    path.write_text(json.dumps(human_document))
    out = HumanFit.load(path).calibrator.transform(np.linspace(-5, 5, 101))
    assert np.all((out >= 0) & (out <= 1)) and np.all(np.diff(out) >= 0)
