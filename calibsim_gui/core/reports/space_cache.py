"""The background diagnostics a report shows, computed once per profile content in a process.

`profile_space` of the built-in profile takes seconds; writing several reports of one run (or of
runs with the same profile, as the Python API and the tests do) reuses the first result.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict

import numpy as np

from calibsim_gui.core.geometry.space import SpaceReport, profile_space

KEPT = 4                    # profiles whose diagnostics stay in memory (each ~1 MB)
_SPACES: OrderedDict[str, SpaceReport] = OrderedDict()
_LOCK = threading.Lock()           # reports may be written from several worker threads at once


def _content_key(profile) -> str:
    """sha256 of what `profile_space` reads: the background sample and every geometry fix."""
    digest = hashlib.sha256(np.ascontiguousarray(profile.query_reference).tobytes())
    for name in profile.geometry_names():
        transform = profile.transform(name)
        state = None if transform is None else transform.to_dict()
        digest.update(json.dumps([name, state], sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def cached_profile_space(profile) -> SpaceReport:
    """`profile_space(profile)`, shared by every profile with the same content (read only)."""
    key = _content_key(profile)
    with _LOCK:
        if key in _SPACES:
            _SPACES.move_to_end(key)
            return _SPACES[key]
    space = profile_space(profile)              # outside the lock: seconds of work
    with _LOCK:
        _SPACES[key] = space
        while len(_SPACES) > KEPT:
            _SPACES.popitem(last=False)
    return space
