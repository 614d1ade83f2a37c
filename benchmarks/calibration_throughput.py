"""Calibration throughput: the built-in background profile applied to 1,000,000 precomputed scores.

For each of the five metrics, 1,000,000 raw scores drawn around its background distribution
are turned into a percentile, a z-score and a min-max position (the target: all of it < 1 s),
and, for reference, into every form the profile has (ladder and tail surprise included).

    .venv/bin/python benchmarks/calibration_throughput.py [--quick]
"""

from __future__ import annotations

import common

TARGET_S = 1.0
BACKGROUND_FORMS = ("bg_percentile", "bg_zscore", "bg_minmax")


def main() -> None:
    args = common.arguments(__doc__, quick_help="10,000 scores per metric")
    n = 10_000 if args.quick else 1_000_000
    import numpy as np

    from calibsim_gui.core.geometry.metrics import METRICS

    profile = common.builtin_profile()
    rng = np.random.default_rng(0)
    raw = {}
    for name, ref in profile.metrics.items():
        bg = ref.background
        sim = rng.normal(bg.mean, 1.5 * bg.std, n)         # reaches past both ends of the background
        raw[name] = METRICS[name].as_similarity(sim)          # back to the metric's own orientation

    def background_forms():
        return {name: {form: profile.metrics[name].calibrators[form].transform(
                    METRICS[name].as_similarity(scores)) for form in BACKGROUND_FORMS}
                for name, scores in raw.items()}

    def every_form():
        return {name: profile.calibrate(name, scores) for name, scores in raw.items()}

    def binary_search_percentiles():     # the percentile transform before its grid search (for comparison)
        out = {}
        for name, scores in raw.items():
            cal, sim = profile.metrics[name].calibrators["bg_percentile"], METRICS[name].as_similarity(scores)
            below = cal.cum_[np.searchsorted(cal.items_, sim, side="left")]
            upto = cal.cum_[np.searchsorted(cal.items_, sim, side="right")]
            out[name] = np.where(np.isnan(sim), np.nan, 100 * (below + upto) / (2 * cal.n_))
        return out

    timing = common.interleaved({"percentile + z-score + min-max": background_forms,
                                 "every form": every_form,
                                 "percentile only": lambda: {name: profile.metrics[name].calibrators[
                                     "bg_percentile"].transform(METRICS[name].as_similarity(scores))
                                     for name, scores in raw.items()},
                                 "percentile only, binary search (before)": binary_search_percentiles},
                                1 if args.quick else 5)
    same = all(np.array_equal(timing["percentile only"]["result"][m],
                              timing["percentile only, binary search (before)"]["result"][m]) for m in raw)
    per_form = {}
    for form in profile.forms():
        seconds, _ = common.timed(lambda: [profile.metrics[m].calibrators[form].transform(
            METRICS[m].as_similarity(s)) for m, s in raw.items()])
        per_form[form] = round(seconds, 4)
    rows = []
    for label, t in timing.items():
        t.pop("result")
        forms = {"percentile + z-score + min-max": len(BACKGROUND_FORMS),
                 "every form": len(profile.forms())}.get(label, 1)
        t["scores_per_s"] = round(n * len(raw) * forms / t["best_s"])
        rows.append({"what": label, "metrics": len(raw), "scores each": n, "best s": t["best_s"],
                     "median s": t["median_s"], "calibrated values/s": t["scores_per_s"]})
    common.print_table(rows)
    print("seconds per form, all five metrics:", per_form)
    print(f"grid-search percentiles equal the binary-search ones: {same}")
    best = timing["percentile + z-score + min-max"]["best_s"]
    print(f"target < {TARGET_S} s for {n:,} scores x 5 metrics: {'met' if best < TARGET_S else 'NOT met'}"
          + (" (quick run: sizes are tiny)" if args.quick else ""))
    common.save("calibration_throughput", args, {
        "scores_per_metric": n, "metrics": list(raw), "background_forms": list(BACKGROUND_FORMS),
        "timing": timing, "seconds_per_form_all_metrics": per_form, "target_s": TARGET_S,
        "target_met": best < TARGET_S, "percentiles_equal_binary_search": same,
    })


if __name__ == "__main__":
    main()
