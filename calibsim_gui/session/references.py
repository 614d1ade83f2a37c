"""Which references a session uses, once for the app, the command line and the Python API.

The rule that a profile fits a model (`check_fits`), and the references a session can make —
the built-in ones, a profile file, a profile with an edited anchor ladder, a background built
from files — as `References`: a task each face runs where it likes (the app in a worker, the
command line and the API at once), then hands to `SessionModel.set_references`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import (
    build_profile,
    default_profile,
    keep_agreement_bands,
    with_anchors,
)
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.embedding.prompts import embedder_prompt
from calibsim_gui.core.errors import InputError, ProfileError
from calibsim_gui.core.references.anchors import AnchorSet, load_anchors

BUILTIN = "built-in"
"""The label of the built-in references."""


@dataclass(frozen=True)
class References:
    """References to make: ``make(progress, should_stop)`` returns the `ReferenceProfile`.

    `label` says where they come from, for people ("built-in", a file name, "built from 3
    file(s)"); `path` (a profile file) and `built_from` (the files, pairs, seed and options of a
    background built here) become the session's once the references arrive.
    """

    make: Callable
    label: str
    path: str | None = None
    built_from: dict | None = None

    def __call__(self, progress=None, should_stop=None) -> ReferenceProfile:
        return self.make(progress, should_stop)


def check_fits(profile: ReferenceProfile, embedder, source: str | None = None) -> None:
    """Raise `ProfileError` (naming `source`) when `profile` was measured with another model or prompt."""
    profile.check_model(embedder.fingerprint, source=source, prompt=embedder_prompt(embedder))


def kept(profile: ReferenceProfile, label: str, path: str | None, built_from: dict | None) -> References:
    """References in use, kept as they are (they fit the model now loaded)."""
    return References(lambda progress, should_stop: profile, label, path, built_from)


def builtin(embedder, *, cache=None, batch_size: int | None = None) -> References:
    """The built-in references of `embedder` (`default_profile`)."""
    return References(lambda progress, should_stop: default_profile(embedder, cache=cache, batch_size=batch_size,
                                                                    should_stop=should_stop), BUILTIN)


def profile_file(path, embedder=None) -> References:
    """A saved profile, refused when it does not fit `embedder` (None: any)."""
    def make(progress, should_stop):
        profile = ReferenceProfile.load(path)
        if embedder is not None:
            check_fits(profile, embedder, source=str(path))
        return profile

    return References(make, Path(path).name, path=str(path))


def anchored(profile: ReferenceProfile, label: str, embedder, anchors: AnchorSet, *, cache=None,
             batch_size: int | None = None, path: str | None = None, built_from: dict | None = None) -> References:
    """`profile` refitted on an edited anchor ladder; its source (file, background) stays."""
    return References(lambda progress, should_stop: with_anchors(profile, embedder, anchors, cache=cache,
                                                                 batch_size=batch_size, should_stop=should_stop),
                      label.split(" + ")[0] + " + edited anchors", path, built_from)


def background(embedder, documents, settings: ProfileSettings, *, built_from: dict,
               previous: ReferenceProfile | None, cache=None, memory_budget: int | None = None) -> References:
    """A profile measured with `settings` on the background `documents` (a `DocumentSet`), keeping
    `previous`'s human bands where the calibrated scale is the same (it does not depend on the
    background)."""
    def make(progress, should_stop):
        profile = build_profile(embedder, documents, settings, cache=cache, progress=progress,
                                should_stop=should_stop, memory_budget=memory_budget)
        return keep_agreement_bands(profile, previous)

    return References(make, f"built from {len(documents.files)} file(s)", built_from=built_from)


def chosen(embedder, profile=None, *, anchors=None, cache=None, batch_size: int | None = None) -> ReferenceProfile:
    """The references a command or API call runs with: `profile` (a path or a `ReferenceProfile`;
    default: the built-in ones for `embedder`), refitted on `anchors` (a path or an `AnchorSet`).

    Raises
    ------
    ProfileError
        When the profile was built with another model or prompt.
    InputError
        When the anchors file cannot be read or its ladder cannot calibrate (naming the file).
    """
    if isinstance(profile, ReferenceProfile):
        check_fits(profile, embedder)
    elif profile is not None:
        profile = profile_file(profile, embedder)()
    else:
        profile = builtin(embedder, cache=cache, batch_size=batch_size)()
    if anchors is None:
        return profile
    ladder = anchors if isinstance(anchors, AnchorSet) else load_anchors(anchors)
    try:
        return anchored(profile, "", embedder, ladder, cache=cache, batch_size=batch_size)()
    except ProfileError as exc:              # the ladder cannot calibrate: name its file
        raise InputError(str(exc), path=anchors) if not isinstance(anchors, AnchorSet) else exc from None
