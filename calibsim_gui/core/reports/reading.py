"""How to read a report's numbers: the paragraph that says what each score form means."""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS


def _interval_width(provenance: dict, metric: str) -> str:
    """The typical width of the calibrated scores' reference uncertainty, as a sentence ("" if unknown)."""
    width = provenance.get("calibrated_interval", {}).get("per_metric", {}).get(metric, {})
    if width.get("median_width") is None:
        return ""
    median, p90 = (f"{w:.3f}" if w >= 0.0005 else "below 0.001" for w in (width["median_width"],
                                                                          width["p90_width"]))
    return (f" Its reference uncertainty (95 %, the reference sentences resampled) is typically {median} "
            f"wide (90 % of the pairs: {p90} or less); it says how well the scale's ends are measured, "
            "not how people would rate the pair.")


def _agreement_band(profile, metric: str) -> str:
    """Where people's scores fall around a calibrated score, as a sentence ("" without a band)."""
    band = profile.metrics[metric].band if metric in profile.metrics else None
    if band is None:
        return (" No human agreement band: this reference was not checked against labelled pairs "
                "(`calibsim profile build --band-pairs FILE` measures one).")
    rate = band.rates[0]
    examples = "; ".join(f"at {c:.2f}, between {lo[0]:.2f} and {hi[0]:.2f}"
                         for c in (0.25, 0.5, 0.75) for lo, hi in [band.band([c], rate)])
    return (f" Human agreement band: people would rate such a pair within a range holding {rate:.0%} of "
            f"their scores ({examples}), measured on {band.n_pairs_:,} labelled pairs: "
            f"{band.measured_on()}, with {band.model_}.").replace("%", " %")


SEARCH_READINGS = {
    "query_zscore": "How many standard deviations this document's score lies above the query's mean "
                    "score against the reference's background texts (query side only). It says how "
                    "unusual the hit is for this query, whatever the model's global scale, and is "
                    "comparable between queries.",
    "local_minmax": "0 = this query's least similar document in this corpus, 1 = its most similar. "
                    "Caveat: it is local to one query and one corpus; the top hit always reads 1, even "
                    "when nothing in the corpus is related, so it is NOT comparable across queries or "
                    "corpora. Use calibrated or query_zscore to judge whether a hit is good.",
}


MATRIX_LOCAL_READING = (
    "LOCAL min-max, per document: 0 = this document's least similar other document in this set, "
    "1 = its most similar (the document itself is left out of both ends). Caveat: it is local to one "
    "document and one set: the best match always reads 1, even when nothing in the set is related, "
    "so it is NOT comparable across documents, sets or reports, and the matrix is not symmetric "
    "(in the top-pairs table it is document_a's scale). Use calibrated or bg_percentile to judge "
    "whether a pair is similar.")


def how_to_read(form: str, profile, provenance: dict, metric: str, kind: str = "pairs") -> str:
    """Plain-language reading of one form, with its caveats and this report's numbers."""
    if kind == "search" and form in SEARCH_READINGS:
        return SEARCH_READINGS[form]
    if kind == "matrix" and form == "local_minmax":
        return MATRIX_LOCAL_READING
    n_bg = profile.background_pairs
    levels = len(profile.anchors.levels)
    text = {
        "raw": f"The model's own {metric} score. Its scale belongs to this model: the same pair can "
               "score 0.9 with one model and 0.3 with another, so a raw number alone does not say "
               "whether a pair is similar. Read it against the anchor levels and the background in this report.",
        "calibrated": "Similarity on people's 0-1 scale: where the pair lies on the straight line from a "
                      "typical pair of unrelated sentences (measured on the model, in the pair's language "
                      "where calibsim has reference sentences in it) to identical text, less the "
                      f"{profile.metrics[metric].calibrators['calibrated'].shift:.3f} by which people rate "
                      "below that line, fading out so that identical text stays 1 (see the calibrated map; the anchor ladder's "
                      f"{levels} levels check it)."
                      f"{_interval_width(provenance, metric)}{_agreement_band(profile, metric)} Caveat: "
                      "annotators differ (STS-B's rate the same pairs lower than SICK-R's), so read it "
                      "as the typical person's score, within its band.",
        "anchor_minmax": "0 at the median score of the lowest anchor level, 1 at the highest; values "
                         "outside 0-1 lie beyond the anchors. Caveat: only two anchor levels set the scale.",
        "bg_minmax": f"0 at the least similar of the {n_bg:,} random background pairs, 1 at the most "
                     "similar. Caveat: the extremes of a random sample move when the background changes.",
        "bg_zscore": "How many standard deviations a score lies above the mean random background pair. "
                     "Caveat: background scores are not normally distributed, so a z-score of 3 is not "
                     "a 0.1 % tail probability; use the percentile or surprise for that.",
        "bg_surprise": "-log10 of the probability that a random background pair scores at least this "
                       "high: 2 means 1 in 100, 3 means 1 in 1,000. Beyond the sample the upper tail is "
                       "fitted (generalised Pareto), so very high scores keep their order. Caveat: values "
                       f"above log10({n_bg:,}) = {np.log10(max(n_bg, 1)):.1f} come from the fitted tail.",
        "query_zscore": "A local scale: the pair's score compared with each text's own scores against "
                        "1,000 background texts (mean of the two z-scores). It says how unusual the "
                        "second text is for the first, whatever the model's global scale.",
        "human": "Expected human similarity on a 0-1 scale: a monotone (isotonic) map fitted to pairs "
                 "that people scored. Caveat: it carries the judges' scale and the kind of text they "
                 "judged; its cross-validated error is in the provenance.",
        "csls": "Cosine corrected for hubness (CSLS): twice the cosine minus each text's mean cosine to "
                "its 10 nearest background texts, so texts that are close to everything ('hubs') do "
                "not look similar to everything.",
    }.get(form)
    if form == "bg_percentile":
        sat = provenance.get("background_saturation", {}).get(metric, {})
        halfwidth = sat.get("percentile_halfwidth",
                            getattr(profile.metrics[metric].calibrators.get("bg_percentile"),
                                    "halfwidth_", float("nan")))
        text = (f"The percent of the {n_bg:,} random background pairs that score lower (ties count "
                f"half). Caveat: its resolution is limited by the background size: every percentile is "
                f"uncertain by ±{halfwidth:.2f} points (95 %), and above the 99th percentile it cannot "
                "separate pairs well.")
        if "share_beyond_p99" in sat:
            text += (f" Here {sat['share_beyond_p99']:.1%} of the pairs score above the background's "
                     "99th percentile; rank those with calibrated or bg_surprise.")
    return text or FORM_DESCRIPTIONS.get(form, form)
