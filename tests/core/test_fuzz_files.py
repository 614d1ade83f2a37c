"""Fuzzing the files people share (hypothesis): valid profiles, projects, anchor ladders and human
calibrations with random values swapped in, keys dropped, numbers perturbed and sketch bytes
flipped. Loading raises only calibsim's own errors, or gives an object whose outputs are sane."""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibsim_gui.core.references.anchors import builtin_anchors, load_anchors
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.calibration.human import HumanCalibrator, HumanFit
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.analysis.project import Project, ProjectInput
from tests.core.test_profile_integrity import assert_sane
from tests.fakes import FakeEmbedder, random_sentences

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6)


def _paths(node, prefix=()) -> list[tuple]:
    """Paths to every dict entry and the first, second and last items of every list."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index in sorted({0, 1, len(node) - 1} & set(range(len(node)))):
            out += _paths(node[index], prefix + (index,))
    return out


@st.composite
def mutated(draw, kind: str):
    """A deep copy of the valid document of `kind` with one to three random edits."""
    document = DOCUMENTS[kind]
    paths = _paths(document)
    d = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        parent = d
        try:
            for key in path[:-1]:
                parent = parent[key]
            value = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        op = draw(st.sampled_from(["replace", "drop", "perturb", "flip"]))
        if op == "drop":
            del parent[path[-1]]
        elif op == "perturb" and isinstance(value, (int, float)) and not isinstance(value, bool):
            factor = draw(st.sampled_from([-1, 0, 0.5, 1 + 1e-12, 2, 1e6, 1e300]))
            parent[path[-1]] = value * factor + draw(st.sampled_from([0, 1e-9, -1, 3]))
        elif op == "flip" and path[-1] in ("kll", "data"):          # base64 sketch or array
            data = bytearray(base64.b64decode(value))
            data[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
            parent[path[-1]] = base64.b64encode(bytes(data)).decode()
        else:
            parent[path[-1]] = draw(json_values)
    return d


def _write(path, d) -> None:
    path.write_text(json.dumps(d))          # NaN and Infinity included: the readers refuse them


def _load(call):
    try:
        return call()
    except CalibsimError as error:
        assert str(error), "an error without a message"
        return None


# --------------------------------------------------------------------------- profiles

PROFILE = build_profile(FakeEmbedder(), random_sentences(1200, seed=4),
                        ProfileSettings(n_pairs=1200, seed=2, metrics=["cosine", "euclidean"],
                                        geometries=("center",))).to_dict()


@FUZZ
@given(d=mutated("profile"))
def test_mutated_profiles_are_refused_or_sane(tmp_path, d):
    path = tmp_path / "fuzzed.calibsim-profile"
    _write(path, d)
    profile = _load(lambda: ReferenceProfile.load(path))
    if profile is not None:
        assert_sane(profile)
        profile.warnings()
        assert profile.dimension > 0 and isinstance(profile.fingerprint.id, str)


# --------------------------------------------------------------------------- projects

PROJECT = Project(model="fake-model", anchors=builtin_anchors(), profile="/data/my.calibsim-profile",
                  background_files=["/data/news.txt"], inputs=[
                      ProjectInput("/data/pairs.csv", "pairs", {"text_a": "q", "label": None}),
                      ProjectInput("/data/docs", "documents", {"per_file": True})],
                  settings={"metric": "dot", "form": "bg_percentile"}).to_dict()


@FUZZ
@given(d=mutated("project"))
def test_mutated_projects_are_refused_or_sane(tmp_path, d):
    path = tmp_path / "fuzzed.calibsim"
    _write(path, d)
    project = _load(lambda: Project.load(path))
    if project is not None:
        assert project.model is None or isinstance(project.model, str)
        assert isinstance(project.device, str) and isinstance(project.settings, dict)
        assert all(isinstance(f, str) for f in project.files())
        assert 1 <= project.background_pairs < 2**31 and 0 <= project.background_seed < 2**31
        assert all(i.kind in ("pairs", "documents") for i in project.inputs)
        project.missing_files()


# --------------------------------------------------------------------------- anchors

ANCHORS = builtin_anchors().to_dict()
ANCHORS["pairs"] = ANCHORS["pairs"][:12] + ANCHORS["pairs"][-12:]


@FUZZ
@given(d=mutated("anchors"))
def test_mutated_anchor_ladders_are_refused_or_sane(tmp_path, d):
    path = tmp_path / "fuzzed.json"
    _write(path, d)
    anchors = _load(lambda: load_anchors(path))
    if anchors is not None:
        targets = anchors.targets
        assert all(math.isfinite(t) and 0 <= t <= 1 for t in targets.values())
        assert len({p.level for p in anchors.pairs}) >= 2
        assert all(p.level in targets and p.text_a.strip() and p.text_b.strip() for p in anchors.pairs)


# --------------------------------------------------------------------------- human calibrations


def _human_document() -> dict:
    rng = np.random.default_rng(3)
    scores = rng.uniform(-0.2, 1, 300)
    calibrator = HumanCalibrator(model=FakeEmbedder().fingerprint.id).fit(
        scores, np.clip(5 * scores + rng.normal(0, 0.6, 300), 0, 5))
    return {"format": "calibsim-human-calibration", "schema_version": 1,
            "calibrator": calibrator.to_dict(), "validation": {"mae": 0.1}, "source": {"pairs": 300}}


HUMAN = _human_document()
DOCUMENTS = {"profile": PROFILE, "project": PROJECT, "anchors": ANCHORS, "human": HUMAN}
READERS = {"profile": ("p.calibsim-profile", ReferenceProfile.load), "project": ("p.calibsim", Project.load),
           "anchors": ("a.json", load_anchors), "human": ("h.calibsim-human", HumanFit.load)}


@FUZZ
@given(d=mutated("human"))
def test_mutated_human_calibrations_are_refused_or_sane(tmp_path, d):
    path = tmp_path / "fuzzed.calibsim-human"
    _write(path, d)
    fit = _load(lambda: HumanFit.load(path))
    if fit is not None:
        calibrator = fit.calibrator
        assert isinstance(calibrator.model, str) and calibrator.model
        out = calibrator.transform(np.linspace(-10, 10, 201))
        assert np.isfinite(out).all() and np.all(np.diff(out) >= 0)
        assert out.min() >= 0 and out.max() <= 1
        low, high = calibrator.scale
        assert math.isfinite(low) and math.isfinite(high) and high > low


@pytest.mark.parametrize("kind", list(READERS))
def test_the_unmutated_documents_load(tmp_path, kind):
    """The fuzz starts from valid files (otherwise every mutation would be refused trivially)."""
    name, reader = READERS[kind]
    _write(tmp_path / name, DOCUMENTS[kind])
    assert reader(tmp_path / name) is not None
