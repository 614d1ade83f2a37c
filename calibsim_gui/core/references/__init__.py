"""The texts calibsim measures against: the anchor ladder (its file format and the built-in
ladder) and the reference sentences in English and 12 other languages whose unrelated pairs end the calibrated scale.

May import: `calibsim_gui.core.geometry`, `calibsim_gui.core.io` and the shared modules.
"""
