"""What a run does with texts: score pairs and document matrices, search, compare models,
evaluate against human scores, thresholds, distributions, matrix order, fitting a human
calibration, and the project file that saves a session's set-up.

May import: `calibsim_gui.core.calibration` and every package below it.
"""
