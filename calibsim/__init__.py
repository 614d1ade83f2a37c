"""calibsim's Python API: calibrated, globally interpretable similarity of text embeddings.

    import calibsim
    session = calibsim.Session()                 # the built-in model and reference, loaded once
    scores = session.score(pairs)                # a DataFrame of pairs in, scored pairs out

See docs/api.md; everything here is `calibsim_gui.api`.
"""

from calibsim_gui import __version__
from calibsim_gui.api import (
    Session,
    build_profile,
    evaluate,
    fit_human,
    neighbours,
    score,
    search,
    session,
    texts_to_embed,
    threshold,
)
from calibsim_gui.core.analysis.run_setup import open_model
from calibsim_gui.core.calibration.human import HumanFit
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.errors import CalibsimError, InputError, ModelError, ProfileError
from calibsim_gui.core.references.anchors import load_anchors

__all__ = ["Session", "session", "score", "search", "neighbours", "build_profile", "evaluate", "fit_human", "threshold",
           "texts_to_embed", "open_model", "load_anchors", "ReferenceProfile", "HumanFit", "CalibsimError", "InputError",
           "ModelError", "ProfileError", "__version__"]
