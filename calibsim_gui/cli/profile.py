"""`calibsim profile`: build, merge, show or upgrade reference profiles."""

from __future__ import annotations

from pathlib import Path

from calibsim_gui.cli import common, options, profile_build
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.files import NUMBER_LIMIT, number_out_of_range, read_user_json


def add_parser(sub) -> None:
    p = sub.add_parser("profile", help="build, merge or show reference profiles")
    psub = p.add_subparsers(dest="profile_command", metavar="ACTION", required=True)
    profile_build.add_parser(psub)
    m = psub.add_parser("merge", help="merge profiles built with one model from parts of a corpus")
    m.add_argument("profiles", nargs="+", metavar="PROFILE")
    m.add_argument("--out", required=True)
    m.add_argument("--force", action="store_true")
    s = psub.add_parser("show", help="summarise a profile")
    s.add_argument("profile")
    u = psub.add_parser("upgrade", help="make a calibsim 0.1 or 0.2 profile current (backgrounds kept; the "
                                        "calibrated scale is measured again with its model)")
    u.add_argument("profile")
    u.add_argument("--out", required=True, help="upgraded profile to write")
    u.add_argument("--force", action="store_true")
    options.add_model_options(u)


def run(args) -> int:
    if args.profile_command == "show":
        return _show(args)
    out = Path(args.out)
    if out.suffix == "":
        out = out.with_suffix(".calibsim-profile")
    inputs = {"merge": lambda: args.profiles, "upgrade": lambda: [args.profile],
              "build": lambda: [*args.background, args.anchors, args.band_pairs]}[args.profile_command]()
    common.check_output(args, out, [p for p in inputs if p], formats=None)
    if args.profile_command == "merge":
        return _merge(args, out)
    if args.profile_command == "upgrade":
        return _upgrade(args, out)
    return profile_build.build(args, out)


def _show(args) -> int:
    from calibsim_gui.core.calibration.profile import ReferenceProfile
    from calibsim_gui.core.embedding.languages import describe, profile_languages

    profile = ReferenceProfile.load(args.profile)
    print(f"model: {profile.fingerprint.id}  dimension {profile.dimension}  precision {profile.precision}")
    print(f"prompt: {profile.prompt!r}" if profile.prompt else "prompt: none")
    print(f"anchors: {profile.anchors.name} ({len(profile.anchors.pairs)} pairs)")
    print(f"background pairs: {profile.background_pairs} "
          "(statistics below in the 'higher = more similar' view: distances negated)")
    if profile.has_background:
        print(f"background languages: {describe(profile_languages(profile.provenance))}")
    scale = next(iter(profile.metrics.values())).calibrators["calibrated"]
    print(f"calibrated scale: the line from a typical unrelated pair to identical text, less "
          f"{scale.shift:.3f}; unrelated end measured in en"
          + "".join(f", {code}" for code in profile.provenance.get("scale", {}).get("languages", {})))
    band = next((ref.band for ref in profile.metrics.values() if ref.band is not None), None)
    if band is not None:
        files = ", ".join(f["name"] for f in band.source_.get("files", [])) or "labelled pairs"
        print(f"human agreement band: {', '.join(f'{r:.0%}' for r in band.rates)} of people's scores, "
              f"measured on {band.n_pairs_:,} labelled pairs ({files}) with {band.model_}")
    else:
        print("human agreement band: none (measure one with `calibsim profile build --band-pairs FILE`)")
    for name, ref in profile.metrics.items():
        bg = ref.background
        extra = f"  background mean {bg.mean:.4f} sd {bg.std:.4f} p99 {bg.quantile(0.99):.4f}" if bg else ""
        print(f"  {name}: forms {', '.join(ref.calibrators)}{extra}")
    for warning in profile.warnings():
        print(f"warning: {warning}")
    return 0


def _merge(args, out: Path) -> int:
    from calibsim_gui.core.calibration.profile import ReferenceProfile, merge_profiles

    profiles = [ReferenceProfile.load(p) for p in args.profiles]
    merged = profiles[0]
    for other in profiles[1:]:
        merged = merge_profiles(merged, other)
    merged.provenance["name"] = out.name
    merged.save(out)
    print(f"wrote {out} ({merged.background_pairs} background pairs)")
    return 0


def _upgrade(args, out: Path) -> int:
    from calibsim_gui.core.calibration.profile_builder import upgrade_profile

    fix = "give the calibsim 0.1 or 0.2 profile file to upgrade."
    old = read_user_json(args.profile, what="profile", fix=fix)
    huge = number_out_of_range(old)
    if huge:
        raise InputError(f"the profile is damaged or hand-edited: a number is beyond ±{NUMBER_LIMIT:g}, "
                         f"out of any sane range, at {huge}.", path=args.profile, fix=fix)
    embedder = common.load_model(args)
    profile = upgrade_profile(old, embedder, cache=common.embedding_cache(args), batch_size=args.batch_size)
    profile.save(out)
    print(f"wrote {out} ({profile.background_pairs} background pairs kept; calibrated scale measured "
          f"with {embedder.fingerprint.id} in {profile.precision})")
    return 0
