"""How a raw score becomes a calibrated one: the calibrators (the reference scale, the anchor
ladder's map, the agreement band), the query scale, background sketches, reference profiles and
building them (locally or on a Ray cluster), and human calibration. `calibrators` holds the
score's formula; `profile_builder` measures what it needs on a model.

May import: `calibsim_gui.core.embedding` and every package below it.
"""
