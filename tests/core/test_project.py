import json

import pytest

from calibsim_gui.core.analysis.project import Project, ProjectInput
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.references.anchors import builtin_anchors


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


HEAD = '{"format": "calibsim-project", "schema_version": 1, '


@pytest.mark.parametrize("content, message", [
    ('{"format": "calibsim-project", "schema_version": 9}', "schema version 9"),
    ('{"format": "other"}', "not a calibsim project"),
    ('[1, 2]', "not a calibsim project"),
    (HEAD + '"inputs": [{"nopath": 1}]}', "damaged"),
    ("not json", "not a readable project"),
    ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "not a readable project"),
    (HEAD + '"background": {"pairs": Infinity}}', "Infinity is not allowed"),
    (HEAD + '"background": {"pairs": 2.5}}', "background pairs must be a whole number"),
    (HEAD + '"background": {"seed": -1}}', "background seed must be a whole number from 0"),
    (HEAD + '"background": {"seed": 4294967296}}', "background seed must be a whole number"),
    (HEAD + '"settings": {"metric": "cosinus"}}', "unknown metric 'cosinus'"),
    (HEAD + '"settings": {"form": ["calibrated"]}}', "is not a name"),
    (HEAD + '"inputs": [{"path": "a.csv", "kind": "images"}]}', "input kind 'images'"),
    (HEAD + '"inputs": [{"path": "a.csv", "options": {"sep": ";"}}]}', "unknown option 'sep'"),
    (HEAD + '"inputs": [{"path": "a.csv", "options": {"text_a": 3}}]}', "option 'text_a' .* wrong type"),
    (HEAD + '"inputs": [{"path": "a.txt", "kind": "documents", "options": {"per_file": "yes"}}]}',
     "option 'per_file' .* wrong type"),
    (HEAD + '"anchors": ["a", "b"]}', "anchors must be a JSON object"),
    (HEAD + '"anchors": {"levels": [{"name": "x", "target": NaN}], "pairs": []}}', "NaN is not allowed"),
    (HEAD + '"background": {"files": "corpus.txt"}}', "inputs lists"),
    (HEAD + '"model": 5}', "damaged"),
], ids=lambda v: v if len(v) < 40 else None)
def test_bad_project_files_are_refused_with_a_reason(tmp_path, content, message):
    path = tmp_path / "bad.calibsim"
    path.write_text(content)
    with pytest.raises(InputError, match=message) as caught:
        Project.load(path)
    assert str(path) in str(caught.value)


def test_what_the_app_saves_passes_the_checks(tmp_path):
    project = Project(background_pairs=2_000_000, background_seed=2**31 - 1,
                      inputs=[ProjectInput(str(tmp_path / "a.csv"), "pairs",
                                           {"text_a": "q", "text_b": "d", "label": None}),
                              ProjectInput(str(tmp_path / "b.txt"), "documents", {"per_file": True})],
                      settings={"metric": "manhattan", "form": "bg_surprise", "saved_as": None})
    loaded = Project.load(project.save(tmp_path / "ok.calibsim"))
    assert (loaded.inputs, loaded.settings) == (project.inputs, project.settings)


def test_a_save_that_fails_midway_keeps_the_previous_project_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = Project(settings={"metric": "dot"}).save(tmp_path / "study.calibsim")
    before = path.read_bytes()

    def half_then_disk_full(self, text, encoding=None):
        with open(self, "w", encoding=encoding) as f:
            f.write(text[: len(text) // 2])
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch, pytest.raises(OSError):
        patch.setattr(type(path), "write_text", half_then_disk_full)
        Project(settings={"metric": "euclidean"}).save(path)
    assert path.read_bytes() == before and Project.load(path).settings == {"metric": "dot"}
    assert [p.name for p in tmp_path.iterdir()] == ["study.calibsim"]


def _human_dict():
    import numpy as np

    from calibsim_gui.core.calibration.human import HumanCalibrator

    rng = np.random.default_rng(0)
    scores = rng.uniform(-0.2, 1.0, 150)
    human = np.clip(5 * scores + rng.normal(0, 0.5, 150), 0, 5)
    calibrator = HumanCalibrator(model="fake-bow@1", scale=(0, 5)).fit(scores, human)
    data = calibrator.to_dict()
    data = json.loads(json.dumps(data, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))
    return {"calibrator": data, "validation": {"mae": 0.1}, "source": {"file": "h.csv", "pairs": 150}}


def test_a_project_keeps_the_human_calibration_and_the_label_choice(tmp_path):
    from calibsim_gui.core.analysis.project import human_fit_from_dict

    human = _human_dict()
    project = Project(human=human, settings={"metric": "cosine", "label_column": "score",
                                             "label_scale": [0.0, 5.0]})
    loaded = Project.load(project.save(tmp_path / "study.calibsim"))
    assert loaded.human == human and loaded.settings["label_column"] == "score"
    fit = human_fit_from_dict(loaded.human)
    assert fit.calibrator.model == "fake-bow@1" and fit.source["pairs"] == 150
    assert Project.load(Project().save(tmp_path / "none.calibsim")).human is None   # older projects too


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(human={"calibrator": {"type": "Nope"}}), "not a human calibration"),
    (lambda d: d.update(human=[1, 2]), "not a JSON object"),
    (lambda d: d["settings"].update(label_scale=[5, 0]), "label scale"),
    (lambda d: d["settings"].update(label_column=3), "label column"),
])
def test_a_damaged_human_calibration_or_label_choice_is_refused_with_the_file(tmp_path, change, message):
    data = Project(human=_human_dict(), settings={"label_column": "score"}).to_dict()
    change(data)
    path = tmp_path / "bad.calibsim"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=message) as caught:
        Project.load(path)
    assert str(path) in str(caught.value)


def test_a_project_keeps_the_tabs_view_choices_and_layout(tmp_path):
    views = {"results": {"sort": ["cosine_calibrated", "desc"], "filters": {"score": [1.5, 4]}},
             "agreement": {"compared": "human"}}
    layout = {"current": "distributions", "beside": ["map"], "sizes": [700, 300]}
    loaded = Project.load(Project(views=views, layout=layout).save(tmp_path / "study.calibsim"))
    assert (loaded.views, loaded.layout, loaded.notes) == (views, layout, [])
    older = Project.load(Project().save(tmp_path / "older.calibsim"))        # written before views
    assert (older.views, older.layout, older.notes) == ({}, {}, [])
    assert "views" not in json.loads((tmp_path / "older.calibsim").read_text())


@pytest.mark.parametrize("views, layout, kept_views, kept_layout, note", [
    ([1, 2], {}, {}, {}, "view choices (not a JSON object)"),
    ({"map": "zoomed", "agreement": {"compared": "human"}}, {}, {"agreement": {"compared": "human"}}, {},
     "view choices of the 'map' tab"),
    ({}, "two panes", {}, {}, "layout of the tabs"),
    ({}, {"current": 3, "beside": ["map"], "sizes": [1, True]}, {}, {"beside": ["map"]}, "'current' (3"),
    ({}, {"beside": "map", "sizes": [-5, 10]}, {}, {}, "'beside' ('map'"),
])
def test_wrong_view_choices_or_layout_are_left_out_with_a_note(tmp_path, views, layout, kept_views,
                                                               kept_layout, note):
    data = Project(inputs=[ProjectInput(str(tmp_path / "a.csv"))]).to_dict()
    path = tmp_path / "edited.calibsim"
    path.write_text(json.dumps({**data, "views": views, "layout": layout}))
    loaded = Project.load(path)                     # opens: the rest of the project is kept
    assert (loaded.views, loaded.layout) == (kept_views, kept_layout)
    assert loaded.inputs[0].path == str(tmp_path / "a.csv")
    assert any(note in n for n in loaded.notes), loaded.notes


def test_only_plain_json_counts_as_a_view_state():
    from calibsim_gui.core.analysis.project import json_safe

    assert json_safe({"a": [1, 2.5, "x", None, True, {"b": []}]})
    assert not json_safe({"a": float("nan")}) and not json_safe({1: "x"}) and not json_safe({"a": (1, 2)})
    assert not json_safe({"a": object()})


def test_a_project_keeps_engine_precision_background_reading_long_texts_and_bands(tmp_path):
    from calibsim_gui.core.calibration.calibrators import AgreementBand

    band = AgreementBand().fit([0.1, 0.4, 0.6, 0.9] * 30, [0.2, 0.3, 0.7, 0.8] * 30, source={"name": "p"},
                               model="m@1")
    project = Project(engine="onnx", precision="int8",
                      background_options={"encoding": "cp1252", "column": "description", "clean_html": True},
                      settings={"long_texts": {"long_texts": "chunk", "chunk_aggregate": "max", "chunk_overlap": 16}},
                      bands={"metrics": {"cosine": band.to_dict()}, "provenance": {"name": "p"}})
    loaded = Project.load(project.save(tmp_path / "p.calibsim"))
    assert (loaded.engine, loaded.precision) == ("onnx", "int8")
    assert loaded.background_options == project.background_options
    assert loaded.settings["long_texts"]["chunk_aggregate"] == "max"
    assert loaded.bands["metrics"]["cosine"]["model_"] == "m@1"


@pytest.mark.parametrize("content, message", [
    (HEAD + '"engine": "tpu"}', "unknown engine"),
    (HEAD + '"background": {"options": {"clean_html": "yes"}}}', "background option"),
    (HEAD + '"settings": {"long_texts": {"long_texts": "split"}}}', "long texts"),
    (HEAD + '"bands": {"metrics": {"cosine": {"type": "minmax", "low_": 0, "high_": 1}}}}', "band"),
])
def test_damaged_engine_background_reading_long_texts_or_bands_are_refused(tmp_path, content, message):
    path = tmp_path / "p.calibsim"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        Project.load(path)
