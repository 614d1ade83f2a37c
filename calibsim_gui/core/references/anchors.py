"""Anchor ladders: reference pairs grouped into levels with target values."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.files import NUMBER_LIMIT, check_file_size, number_out_of_range, parse_json
from calibsim_gui.core.io.tables import read_table, read_text_file
from calibsim_gui.core.resources import resource_path

FORMAT = "calibsim-anchors"
MAX_ANCHOR_BYTES = 2 * 1024**2
MAX_ANCHOR_PAIRS = 5000
"""Largest anchor ladder file and most pairs `load_anchors` reads (the built-in ladder: 22 KB,
112 pairs). Every anchor pair is encoded by every run: an 18 MB ladder ran past 600 s."""
_LADDER_FIX = "an anchor ladder needs a few pairs per level; keep the most typical ones"


@dataclass(frozen=True)
class AnchorLevel:
    name: str
    label: str
    target: float       # position on the 0-1 calibrated scale


@dataclass(frozen=True)
class AnchorPair:
    level: str
    text_a: str
    text_b: str


@dataclass(frozen=True)
class AnchorSet:
    """A named ladder: levels ordered by target, and the pairs that stand for each level."""

    name: str
    levels: tuple[AnchorLevel, ...]
    pairs: tuple[AnchorPair, ...]

    @property
    def targets(self) -> dict[str, float]:
        return {level.name: level.target for level in self.levels}

    def to_dict(self) -> dict:
        return {"format": FORMAT, "schema_version": 1, "name": self.name,
                "levels": [vars(level) for level in self.levels],
                "pairs": [vars(pair) for pair in self.pairs]}

    @classmethod
    def from_dict(cls, d: dict, *, path=None) -> "AnchorSet":
        """Validate a parsed anchors document; errors name `path` and the fix."""
        if not isinstance(d, dict):
            raise InputError(f"anchors must be a JSON object, not a {type(d).__name__}.", path=path,
                             fix='use {"levels": [{"name", "target"}...], "pairs": '
                                 '[{"level", "text_a", "text_b"}...]}')
        huge = number_out_of_range(d)
        if huge:
            raise InputError(f"a number is beyond ±{NUMBER_LIMIT:g}, out of any sane range, at {huge}.",
                             path=path, fix="give each level a target between 0 and 1")
        try:
            levels = tuple(sorted((AnchorLevel(str(lv["name"]), str(lv.get("label", lv["name"])),
                                               float(lv["target"])) for lv in d["levels"]),
                                  key=lambda lv: lv.target))
            pairs = tuple(AnchorPair(str(p["level"]), str(p["text_a"]), str(p["text_b"]))
                          for p in d["pairs"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"anchors are malformed ({_plain(exc)}).", path=path,
                             fix='use {"levels": [{"name", "target"}...], "pairs": '
                                 '[{"level", "text_a", "text_b"}...]}') from None
        return cls(str(d.get("name", Path(path).stem if path else "anchors")), levels,
                   pairs)._validated(path)

    def _validated(self, path) -> "AnchorSet":
        names = [level.name for level in self.levels]
        if len(set(names)) != len(names):
            raise InputError("two levels share a name.", path=path, fix="give each level its own name")
        bad_targets = [lv.name for lv in self.levels if not 0.0 <= lv.target <= 1.0]
        if bad_targets:
            plural = len(bad_targets) > 1
            raise InputError(f"the target{'s' if plural else ''} of {_names(bad_targets, 'level')} "
                             f"{'are' if plural else 'is'} outside 0..1.", path=path,
                             fix="give each level a target between 0 and 1")
        unknown = sorted({p.level for p in self.pairs} - set(names))
        if unknown:
            raise InputError(f"pairs use {_names(unknown, 'undeclared level')}.", path=path,
                             fix=f"declare them or use one of {', '.join(names)}")
        used = {p.level for p in self.pairs}
        if len(used) < 2:
            raise InputError("anchors need pairs on at least two levels.", path=path)
        empty = [i + 1 for i, p in enumerate(self.pairs) if not p.text_a.strip() or not p.text_b.strip()]
        if empty:
            more = f" and {len(empty) - 10} more" if len(empty) > 10 else ""
            shown = ", ".join(map(str, empty[:10])) + more
            raise InputError(f"anchor pair{'s' if len(empty) > 1 else ''} {shown} "
                             f"{'have' if len(empty) > 1 else 'has'} an empty text.", path=path,
                             fix="type both texts of every pair, or delete the pair")
        return self


def _names(names, what: str) -> str:
    """'level “a”' / 'levels “a”, “b”': names quoted for people, not as Python lists."""
    quoted = ", ".join(f"“{name}”" for name in names)
    return f"{what}{'s' if len(names) > 1 else ''} {quoted}"


def _plain(exc: Exception) -> str:
    """What a malformed anchors document lacks, in plain words."""
    if isinstance(exc, KeyError):
        return f"a level or pair has no “{exc.args[0]}” field"
    if isinstance(exc, ValueError):
        return "a level's target is not a number"
    return "levels and pairs must be lists of objects"


def load_anchors(path) -> AnchorSet:
    """Read anchors from a calibsim JSON file or a CSV with columns level,text_a,text_b[,target]."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".csv", ".tsv"):
        raise InputError("anchors must be a .json or .csv file.", path=path)
    check_file_size(path, limit=MAX_ANCHOR_BYTES, what="anchor ladder", fix=_LADDER_FIX)
    anchors = _read_anchors(path, suffix)
    if len(anchors.pairs) > MAX_ANCHOR_PAIRS:
        raise InputError(f"has {len(anchors.pairs):,} anchor pairs; ladders of up to {MAX_ANCHOR_PAIRS:,} "
                         "are accepted (each is encoded by every run).", path=path, fix=_LADDER_FIX)
    return anchors


def _read_anchors(path: Path, suffix: str) -> AnchorSet:
    if suffix == ".json":
        text = read_text_file(path)
        try:
            return AnchorSet.from_dict(parse_json(text), path=path)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg}).", path=path, line=exc.lineno) from None
        except (ValueError, RecursionError) as exc:     # NaN, 1e999, 10^5 nested arrays
            raise InputError(f"not usable JSON ({exc}).", path=path) from None
    frame, _ = read_table(path)
    missing = {"level", "text_a", "text_b"} - set(frame.columns)
    if missing:
        raise InputError(f"missing the column{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(sorted(missing))}.", path=path,
                         fix="use the header level,text_a,text_b,target")
    if "target" not in frame.columns:
        raise InputError("a CSV ladder needs a target column (0..1 per level).", path=path)
    levels = frame.groupby("level", sort=False)["target"].first()
    return AnchorSet.from_dict({"name": path.stem,
                                "levels": [{"name": k, "target": v} for k, v in levels.items()],
                                "pairs": frame[["level", "text_a", "text_b"]].to_dict("records")},
                               path=path)


def builtin_anchors() -> AnchorSet:
    """calibsim's built-in ladder: the six STS guideline grades plus identical."""
    path = resource_path("anchors", "builtin-ladder.json")     # ours: no need for the file checks
    return AnchorSet.from_dict(json.loads(path.read_text(encoding="utf-8")), path=path)  # (and pandas)
