"""The embedding space: similarity metrics, geometry fixes (centering, whitening, removing
dominant directions), random background pairs, hubness, isotropy diagnostics and the space summary.

May import: `calibsim_gui.core.io` and the shared modules of `calibsim_gui.core`.
"""
