"""The Space tab: diagnostics of the background sample, raw and under each geometry fix."""

from calibsim_gui.core.geometry.transforms import GEOMETRIES
from tests.qt.conftest import REFERENCES_MS, build_background, shown_error


def test_space_tab_explains_the_crowding_and_scores_under_a_chosen_fix(window, qtbot, tmp_path, pairs_csv):
    window.tabs.setCurrentWidget(window.space)
    assert "no background sample" in window.space.summary.text()
    build_background(window, qtbot, tmp_path, sentences=1500, pairs=1000, seed=3)
    qtbot.waitUntil(lambda: window.space.space is not None, timeout=120_000)
    rows = window.space.shown_rows()
    raw, whitened = GEOMETRIES["none"].label, GEOMETRIES["whiten"].label
    cosine = rows["mean cosine of random pairs"]
    assert set(cosine) == {g.label for g in GEOMETRIES.values()}
    assert abs(float(cosine[whitened])) < float(cosine[raw]), "whitening spreads random pairs apart"
    assert "IsoScore (0-1, 1 = isotropic)" in rows
    star = rows["IsoScore* (shrunk to background)"]                   # the background sample is C0
    assert star == rows["IsoScore (0-1, 1 = isotropic)"]
    assert "Random pairs average a raw cosine of" in window.space.summary.text()

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.space.geometry_combo.setCurrentIndex(window.space.geometry_combo.findData("whiten"))
    columns = set(window.state.results.frame.columns)
    assert {"cosine_raw", "cosine_raw@whiten", "cosine_calibrated@whiten"} <= columns
    assert window.current_project().settings["geometry"] == "whiten"


def test_space_tab_diagnoses_labelled_files_with_cluster_structure(window, qtbot, tmp_path):
    from tests.fakes import random_sentences

    build_background(window, qtbot, tmp_path, sentences=1500, pairs=1000, seed=3)
    window.tabs.setCurrentWidget(window.space)
    qtbot.waitUntil(lambda: window.space.space is not None, timeout=120_000)
    files = []
    for i, vocabulary in enumerate((None, 50)):
        path = tmp_path / f"group{i}.txt"
        options = {} if vocabulary is None else {"vocabulary": vocabulary}
        path.write_text("\n".join(random_sentences(40, seed=20 + i, **options)))
        files.append(path)
    window.space.space = None
    window.space.diagnose_files(files)
    qtbot.waitUntil(lambda: window.space.space is not None, timeout=120_000)
    rows = window.space.shown_rows()
    for row in ("IsoScore (0-1, 1 = isotropic)", "silhouette of labels (euclidean)",
                "Calinski-Harabasz (higher = apart)", "Davies-Bouldin (lower = apart)",
                "Dunn index (higher = apart)", "classifier accuracy (5-fold)"):
        assert set(rows[row]) == {g.label for g in GEOMETRIES.values()}, row
    assert "documents of 2 files" in window.space.summary.text()
    window.space.grab().save(str(tmp_path / "space_labelled.png"))


def test_a_fix_the_references_cannot_apply_is_greyed_out_and_dropped_saying_so(window, qtbot, tmp_path, pairs_csv):
    combo = window.space.geometry_combo
    whiten = combo.findData("whiten")
    assert not combo.model().item(whiten).isEnabled() and "needs a background" in combo.itemText(whiten)
    build_background(window, qtbot, tmp_path, sentences=300, pairs=200, seed=3)
    assert combo.model().item(whiten).isEnabled() and combo.itemText(whiten) == GEOMETRIES["whiten"].label
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        combo.setCurrentIndex(whiten)
        assert window.results.hint.text() == "Scoring pairs.csv under the geometry fix whiten…"
    with qtbot.waitSignal(window.results_shown, timeout=REFERENCES_MS):
        window.use_builtin_reference()                      # anchors only: no fix to fit
    assert "cannot apply the geometry fix 'whiten'" in shown_error(window, qtbot)
    assert window._last_error.windowTitle() == "Geometry fix not applied"
    assert "Background tab" in window._last_error.text()
    assert combo.currentData() == "none" and not combo.model().item(whiten).isEnabled()
    assert "cosine_raw@whiten" not in window.state.results.frame.columns
    assert window.current_project().settings["geometry"] == "none"
