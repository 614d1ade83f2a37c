"""Qt-free engine of calibsim, grouped by concern; each package imports only those below it
(the contracts in pyproject.toml, checked by ``lint-imports``):

- `reports`, `doctor`: reports in every format; the installation check;
- `analysis`: scoring pairs and matrices, search, comparison, evaluation, thresholds, projects;
- `calibration`: calibrators, profiles and building them, sketches, human calibration;
- `embedding`: model folders, engines, encoding, the embedding cache, chunking, languages;
- `references`: the anchor ladder and the reference sentences;
- `geometry`: metrics, geometry fixes, background pairs, diagnostics;
- `io`: users' files in, atomic writes out, the memory budget;
- `errors`, `progress`, `provenance`, `resources`: shared by all.

Nothing here imports Qt; torch and sentence-transformers are imported inside functions.
"""
