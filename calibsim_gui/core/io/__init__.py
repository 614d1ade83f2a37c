"""Files in and out: reading users' text files, tables, pairs and document sets; atomic writes;
output tables; text cleaning; the memory budget a run is checked against.

May import: `calibsim_gui.core.errors` and the other shared modules of `calibsim_gui.core`
(errors, progress, provenance, resources) only.
"""
