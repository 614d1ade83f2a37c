"""Qt-free engine of calibsim: models, encoding, metrics, calibration, profiles, inputs.

Nothing here imports Qt; torch and sentence-transformers are imported inside functions.
"""
