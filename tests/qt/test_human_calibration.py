"""Fitting a human calibration in the app: a worker fits it, results gain <metric>_human."""


from calibsim_gui.core.calibration.human import HumanFit


def test_fit_then_scores_gain_expected_human_similarity(window, qtbot, labelled_pairs, pairs_csv, tmp_path,
                                                        monkeypatch):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.human.fit(str(labelled_pairs), "0,5")
    assert "Cross-validated error" in window._last_error.text()
    human = window.state.results.frame["cosine_human"]
    assert human.between(0, 1).all()
    saved = tmp_path / "mine.calibsim-human"
    monkeypatch.setattr("calibsim_gui.qt.flows.human_flow.QFileDialog.getSaveFileName",
                        lambda *a, **k: (str(saved), ""))
    window.human.save()
    assert HumanFit.load(saved).calibrator.model == window.state.embedder.fingerprint.id


def test_a_bad_scale_is_explained(window, labelled_pairs, monkeypatch):
    shown = []
    monkeypatch.setattr(window.human, "show_error", lambda title, text: shown.append(text))
    window.human.fit(str(labelled_pairs), "five")
    assert "low,high" in shown[0]


def test_a_fitted_human_calibration_is_shown_and_can_be_compared_with_people(window, qtbot, labelled_pairs,
                                                                            pairs_csv):
    import numpy as np

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    agreement, table = window.agreement, window.results
    assert not agreement.form_combo.model().item(1).isEnabled()            # nothing fitted yet
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.human.fit(str(labelled_pairs), "0,5")
    names = table.model.column_names
    assert not table.table.isColumnHidden(names.index("cosine_human"))      # in the default columns
    assert "+ human" in table.columns_combo.currentText()
    assert agreement.form_combo.model().item(1).isEnabled()
    calibrated = agreement.result.calibrated.copy()
    agreement.form_combo.setCurrentIndex(1)                                  # compare with the human map
    assert window.state.compared_form == "human"
    frame = window.state.results.frame
    np.testing.assert_allclose(agreement.result.calibrated, frame["cosine_human"].to_numpy(dtype=float))
    assert not np.allclose(agreement.result.calibrated, calibrated, equal_nan=True)
    assert "cosine_human" in agreement.plot.getAxis("left").labelText
    np.testing.assert_allclose(table.model.frame["disagreement"], agreement.result.disagreement)  # follows


def test_the_scale_is_picked_from_presets_the_guessed_one_first(window, qtbot, labelled_pairs, pairs_csv,
                                                                monkeypatch):
    from PySide6.QtWidgets import QFileDialog, QInputDialog

    offered = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(labelled_pairs), ""))
    monkeypatch.setattr(QInputDialog, "getItem",
                        lambda parent, title, text, items, current, editable: offered.append(items) or ("", False))
    window.human.choose_pairs()
    assert offered[0][:4] == ["0–5", "1–5", "0–1", "0–100"]                 # nothing in view: STS first
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])                                      # scores 0..5 in view
    window.human.choose_pairs()
    assert offered[1][0] == "0–5" and len(set(offered[1])) == len(offered[1])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.human.fit(str(labelled_pairs), "0–5")                         # a preset as offered
    assert "cosine_human" in window.state.results.frame
