"""What a reference profile is built with, besides its model and background: one object, checked
at once, that the local build (`profile_builder.build_profile`) and the Ray build
(`cluster.build_profile_on_ray`) both read, so that they cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.background import DEFAULT_PAIRS
from calibsim_gui.core.geometry.metrics import get_metrics
from calibsim_gui.core.geometry.transforms import FIXES, get_geometries
from calibsim_gui.core.references.anchors import AnchorSet

GEOMETRY_METRICS = ("cosine",)
"""Metrics that get references under each geometry fix: cosine, the similarity the fixes were
designed for (angular, and dot/euclidean of whitened unit vectors, only re-express it)."""


@dataclass(frozen=True)
class ProfileSettings:
    """The settings of a profile build, scikit-learn style: given here and checked at once; the
    build functions run them. Run plumbing (cache, batch size, progress, memory budget) is not here.

    Attributes
    ----------
    anchors : AnchorSet or None
        The anchor ladder (None: the built-in STS ladder).
    n_pairs : int
        Background pairs to draw (`background.key_pairs`; fewer if the corpus is small), at least 1.
    seed : int
        Seed that draws the background pairs.
    metrics : sequence of str or None
        Metrics to build references for (None: every metric); kept as a tuple of their names.
    geometries : sequence of str
        Geometry fixes to fit on the background ("center", "whiten", "abtt", ...); for each,
        `geometry_metrics` (those of `metrics`) get references computed on transformed embeddings
        with the same background pairs.
    geometry_settings : dict or None
        Settings of the fixes' transforms, e.g. ``{"abtt": {"n_directions": 3}}``
        (`geometry.geometry_settings`); recorded in the provenance.
    languages : sequence of str
        Codes of `REFERENCE_LANGUAGES` whose unrelated end is measured now (any other is measured
        when a run first meets pairs in it, see `with_language_ends`).
    clean_html : bool
        The texts had their HTML leftovers cleaned (`text_cleaning.clean_documents`) before the
        build; recorded, so that ``calibsim profile build --clean-html`` builds it again.
    name : str or None
        The profile's name in its provenance (None: "anchors only").

    Raises
    ------
    InputError
        Fewer than one pair, or an unknown metric or geometry fix.
    """

    anchors: AnchorSet | None = None
    n_pairs: int = DEFAULT_PAIRS
    seed: int = 0
    metrics: tuple[str, ...] | None = None
    geometries: tuple[str, ...] = FIXES
    geometry_metrics: tuple[str, ...] = GEOMETRY_METRICS
    geometry_settings: dict | None = None
    languages: tuple[str, ...] = ()
    clean_html: bool = False
    name: str | None = None

    def __post_init__(self):
        if self.n_pairs < 1:
            raise InputError(f"{self.n_pairs:,} background pairs cannot be drawn.",
                             fix="ask for at least one pair (the default is 20,000)")
        set_ = object.__setattr__            # frozen: normalised once, here
        set_(self, "metrics", tuple(m.name for m in get_metrics(self.metrics)))
        set_(self, "geometries", tuple(g.name for g in get_geometries(self.geometries)))
        set_(self, "geometry_metrics", tuple(self.geometry_metrics))
        set_(self, "languages", tuple(self.languages))

    @property
    def fixed_metrics(self) -> list[str]:
        """The metrics scored under the geometry fixes."""
        return [m for m in self.metrics if m in self.geometry_metrics]

    @property
    def fixes(self) -> list[str]:
        """The geometry fixes to fit: none when no metric is scored under them."""
        return [g for g in self.geometries if g != "none"] if self.fixed_metrics else []
