"""The session model's rules as a user notices them, without Qt: which references survive a new
model, what makes the scores stale, what a project restores before the first score, and that the
command line and the Python API choose the same references for a model."""

import os
import subprocess
import sys
import types

import pandas as pd
import pytest

from calibsim_gui.core.analysis.project import Project
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.errors import InputError, ProfileError
from calibsim_gui.core.io.inputs import pair_table
from calibsim_gui.core.references.anchors import AnchorSet, builtin_anchors
from calibsim_gui.session import references
from calibsim_gui.session.model import SessionModel
from tests.fakes import FakeEmbedder, random_sentences


def heard(event) -> list:
    """What `event` says from now on (each emit's arguments)."""
    said = []
    event.connect(lambda *args: said.append(args))
    return said


def edited(ladder: AnchorSet) -> AnchorSet:
    """The ladder with every other pair dropped, as a user edits it in the Anchors tab."""
    return AnchorSet(ladder.name + " (edited)", ladder.levels, ladder.pairs[::2])


def pairs():
    frame = pd.DataFrame({"sentence1": ["a cat sat", "dogs run"], "sentence2": ["a cat sits", "stocks fell"],
                          "score": ["4.5", "0.2"]})
    return pair_table(frame, "<DataFrame>")


@pytest.fixture(scope="module")
def fake_profile():
    return build_profile(FakeEmbedder(), None)


@pytest.fixture(autouse=True)
def builtin_made_once(monkeypatch, fake_profile):
    """The fake's built-in references (anchors only) measured once for the module, not per call."""
    monkeypatch.setattr(references, "default_profile", lambda embedder, **options: fake_profile)


@pytest.fixture(scope="module")
def background_profile():
    """The fake model's references with a background, on which the geometry fixes are fitted."""
    return build_profile(FakeEmbedder(), random_sentences(300), ProfileSettings(n_pairs=200))


@pytest.fixture(scope="module")
def other_profile():
    return build_profile(FakeEmbedder(name="another-model"), None)


@pytest.fixture
def opened(tmp_path, fake_profile):
    """A session on the fake model with a profile file of it in use."""
    path = tmp_path / "study.calibsim-profile"
    fake_profile.save(path)
    session = SessionModel()
    session.set_model(FakeEmbedder())
    made = references.profile_file(path, session.embedder)
    session.set_references(made(), made)
    return session, str(path)


def test_a_new_model_drops_a_profile_built_for_another_model_and_says_why(opened):
    session, path = opened
    said = heard(session.references_replaced)
    assert session.set_model(FakeEmbedder(name="another-model")) is None      # the built-in ones come
    assert session.profile is None and session.profile_path is None
    (message, details), = said
    assert "study.calibsim-profile" in message and "does not fit the model now loaded" in message
    assert "another-model" in details or "fake-bow" in details


def test_another_engine_of_the_same_model_keeps_the_opened_profile(opened, fake_profile):
    session, path = opened
    said = heard(session.references_replaced)
    kept = session.set_model(FakeEmbedder())               # the same model, loaded again
    assert kept is not None and not said
    session.set_references(kept(), kept)
    assert session.profile_label == "study.calibsim-profile" and session.profile_path == path


def test_the_built_in_references_are_made_again_for_each_model(fake_profile):
    session = SessionModel()
    session.set_model(FakeEmbedder())
    session.use_references()
    assert session.profile_label == "built-in"
    said = heard(session.references_replaced)
    assert session.set_model(FakeEmbedder()) is None and not said     # made again, nothing to say


def test_a_profile_file_of_another_model_is_refused_naming_the_file(tmp_path, other_profile):
    path = tmp_path / "theirs.calibsim-profile"
    other_profile.save(path)
    with pytest.raises(ProfileError, match="theirs.calibsim-profile"):
        references.profile_file(path, FakeEmbedder())()


def test_edited_anchors_make_the_scores_stale_and_keep_the_profile_file(opened):
    session, path = opened
    session.accept_input(pairs(), {"paths": ["<DataFrame>"], "kind": "pairs", "options": {}})
    session.set_results("scores")
    stale = heard(session.scores_stale)
    made = references.anchored(session.profile, session.profile_label, session.embedder,
                               edited(session.profile.anchors), path=session.profile_path,
                               built_from=session.built_from)
    session.set_references(made(), made)
    assert session.results is None and stale == [("references study.calibsim-profile + edited anchors",)]
    assert session.profile_path == path and "edited" in session.profile.anchors.name


@pytest.mark.parametrize("change, reason", [
    (lambda s: s.set_human(None), "no human calibration"),
    (lambda s: s.set_input(pairs()), "a new input"),
    (lambda s: s.set_model(FakeEmbedder()), "another model"),
])
def test_what_makes_the_scores_stale_says_so(opened, change, reason):
    session, _ = opened
    session.set_results("scores")
    stale = heard(session.scores_stale)
    change(session)
    assert session.results is None and stale == [(reason,)]


def test_choosing_a_label_column_or_a_row_keeps_the_scores(opened):
    session, _ = opened
    session.accept_input(pairs(), {"paths": ["<DataFrame>"], "kind": "pairs", "options": {}})
    session.set_results("scores")
    stale = heard(session.scores_stale)
    session.set_labels("score", (0, 5))
    session.select_row(1)
    assert session.results == "scores" and not stale and session.selected_row == 1


def test_a_projects_saved_anchors_apply_before_the_first_score(fake_profile):
    ladder = edited(builtin_anchors())
    session = SessionModel()
    session.set_model(FakeEmbedder())
    step = session.start_project(Project(anchors=ladder, settings={"label_column": "score",
                                                                   "label_scale": [0, 5]}))
    assert step == "anchors"
    session.accept_input(pairs(), {"paths": ["pairs.csv"], "kind": "pairs", "options": {}})
    assert session.label_column == "score" and session.label_scale == (0, 5)   # the project's labels
    builtin = references.builtin(session.embedder)
    session.set_references(builtin(), builtin)
    assert not session.ready_to_score()                 # the built-in ladder is no score of the project's
    made = references.anchored(session.profile, session.profile_label, session.embedder, ladder)
    session.set_references(made(), made)
    assert session.settle() is None and session.ready_to_score()
    assert session.profile.anchors == ladder and session.profile_label == "built-in + edited anchors"


def test_a_project_with_a_profile_file_opens_it_and_a_built_background_is_built_again():
    session = SessionModel()
    assert session.start_project(Project(profile="study.calibsim-profile")) == "profile"
    assert session.start_project(Project(background_files=["news.txt"])) == "rebuild"
    assert session.start_project(Project()) == "builtin"


def test_failed_references_fall_back_to_the_built_in_ones_only_for_a_new_model(tmp_path):
    session = SessionModel()
    session.set_model(FakeEmbedder())
    broken = references.profile_file(tmp_path / "missing.calibsim-profile", session.embedder)
    assert session.falls_back(broken)                       # none in use: the built-in ones, then go on
    assert not session.falls_back(references.builtin(session.embedder))   # never round and round
    session.use_references()
    assert not session.falls_back(broken)                   # those in use stay


def test_a_geometry_fix_the_references_cannot_apply_is_refused_naming_it_and_the_fix(opened):
    """An anchors-only profile has no fixes (they are fitted on a background): choosing one is
    refused, and nothing changes."""
    session, _ = opened
    session.set_results("scores")
    assert session.geometry_fixes() == {"none": True, "center": False, "whiten": False, "abtt": False,
                                        "soft": False}
    refusal = "“study.calibsim-profile” cannot apply the geometry fix 'whiten'"
    with pytest.raises(InputError, match=refusal) as refused:
        session.set_geometry("whiten")
    assert "--background" in refused.value.fix and "Background tab" in refused.value.fix
    assert session.geometry == "none" and session.results == "scores"


def test_references_that_cannot_apply_the_chosen_fix_drop_it_and_say_so(background_profile, fake_profile):
    session = SessionModel()
    session.set_model(FakeEmbedder())
    session.set_profile(background_profile, "built here")
    stale = heard(session.scores_stale)
    session.set_geometry("whiten")
    assert stale == [("geometry fix whiten",)] and session.pair_scoring() == (("none", "whiten"), [])
    said, changed = heard(session.left_out), heard(session.geometry_changed)
    session.set_profile(fake_profile, "built-in")                  # anchors only: no fix to apply
    (title, message), = said
    assert title == "Geometry fix not applied" and "'whiten'" in message and "--background" in message
    assert session.geometry == "none" and changed == [()] and session.pair_scoring() == (("none",), [])


def test_the_command_line_and_the_api_refuse_a_fix_the_references_cannot_apply():
    from calibsim_gui.api import Session
    from calibsim_gui.cli.common import reference_profile

    fake = FakeEmbedder()
    args = types.SimpleNamespace(profile=None, anchors=None, command="score", batch_size=64, geometry=["whiten"])
    with pytest.raises(InputError, match="cannot apply the geometry fix 'whiten'") as by_cli:
        reference_profile(args, fake, None)
    with pytest.raises(InputError, match="cannot apply the geometry fix 'whiten'") as by_api:
        Session(fake, cache=False, progress=False).score(pairs().frame, geometry="whiten")
    assert str(by_cli.value) == str(by_api.value) and "--background" in str(by_api.value)


def test_the_command_line_and_the_api_choose_the_same_references(tmp_path, other_profile):
    from calibsim_gui.api import Session
    from calibsim_gui.cli.common import reference_profile

    fake = FakeEmbedder()
    args = types.SimpleNamespace(profile=None, anchors=None, command="score", batch_size=64)
    assert reference_profile(args, fake, None).to_dict() == Session(fake, cache=False).profile.to_dict()
    other = tmp_path / "other.calibsim-profile"
    other_profile.save(other)
    args.profile = str(other)
    with pytest.raises(ProfileError, match="other.calibsim-profile") as by_cli:
        reference_profile(args, fake, None)
    with pytest.raises(ProfileError, match="other.calibsim-profile") as by_api:
        Session(fake, profile=str(other), cache=False).profile      # noqa: B018 (opened on first use)
    assert str(by_cli.value) == str(by_api.value)


def test_the_session_model_works_with_qt_hidden_and_imports_no_face(tmp_path):
    """As on a machine without PySide6: importing Qt fails, and the model works all the same."""
    code = """
import sys
for hidden in ("PySide6", "shiboken6", "pyqtgraph"):
    sys.modules[hidden] = None                      # import fails, as if not installed
from calibsim_gui.session import references
from calibsim_gui.session.model import SessionModel
from tests.fakes import FakeEmbedder
session = SessionModel()
session.set_model(FakeEmbedder())
session.use_references()
session.set_geometry("none")
loaded = sorted(m for m in ("calibsim_gui.qt", "calibsim_gui.cli", "calibsim_gui.api") if m in sys.modules)
print("loaded", loaded, session.profile_label, session.pair_scoring())
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "CALIBSIM_CACHE_DIR": str(tmp_path / "cache")})
    assert result.stdout.strip().splitlines()[-1] == "loaded [] built-in (('none',), [])"
