import json

import pytest

from calibsim_gui.core.anchors import builtin_anchors
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.project import Project, ProjectInput


def test_round_trip_with_relative_paths_survives_moving_the_folder(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "pairs.csv").write_text("a,b\nx,y\n")
    (folder / "bg.txt").write_text("one\ntwo\n")
    project = Project(anchors=builtin_anchors(), background_files=[str(folder / "bg.txt")],
                      inputs=[ProjectInput(str(folder / "pairs.csv"), "pairs", {"text_a": "a"})],
                      settings={"metric": "cosine"}, background_seed=7)
    path = project.save(folder / "study.calibsim")
    data = json.loads(path.read_text())
    assert data["inputs"][0]["path"] == "pairs.csv" and data["schema_version"] == 1
    moved = tmp_path / "moved"
    folder.rename(moved)
    loaded = Project.load(moved / "study.calibsim")
    assert loaded.inputs[0].path == str(moved / "pairs.csv")
    assert loaded.inputs[0].options == {"text_a": "a"}
    assert loaded.anchors == project.anchors
    assert (loaded.background_seed, loaded.settings) == (7, {"metric": "cosine"})
    assert loaded.missing_files() == []


def test_moved_files_are_reported_and_can_be_relocated(tmp_path):
    project = Project(inputs=[ProjectInput(str(tmp_path / "gone.csv"))])
    project.save(tmp_path / "p.calibsim")
    loaded = Project.load(tmp_path / "p.calibsim")
    assert loaded.missing_files() == [str(tmp_path / "gone.csv")]
    (tmp_path / "found.csv").write_text("a,b\n")
    loaded.relocate(str(tmp_path / "gone.csv"), str(tmp_path / "found.csv"))
    assert loaded.missing_files() == []


@pytest.mark.parametrize("content, message", [
    ('{"format": "calibsim-project", "schema_version": 9}', "schema version 9"),
    ('{"format": "other"}', "not a calibsim project"),
    ('{"format": "calibsim-project", "schema_version": 1, "inputs": [{"nopath": 1}]}', "damaged"),
    ("not json", "not a readable project"),
])
def test_bad_project_files_are_refused_with_a_reason(tmp_path, content, message):
    path = tmp_path / "bad.calibsim"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        Project.load(path)
