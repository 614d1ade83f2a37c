"""Evaluate geometry fixes, human calibration and diagnostics on STS Benchmark (built-in model).

- Spearman x100 of STS-B test with raw cosine and with each geometry fix (fitted on the AG News
  background of the built-in profile, never on STS-B);
- isotonic human calibration fitted on STS-B train, checked on STS-B test: mean absolute error
  on the 0-1 scale next to raw cosine (clipped to [0, 1]), background percentile / 100 and the
  anchor ladder ("calibrated"); plus its cross-validated error on train, split by sentence;
- a "same meaning" threshold (human score >= 4) at 90 % precision, chosen on train, checked on test;
- space diagnostics (raw and each fix) of the STS-B test sentences and of AG News test texts
  (with their four topic labels for the cluster-structure diagnostics and the classifier check);
- Spearman x100 of STS-B test for every metric (cosine, the norm-aware SCALED_SIM, WRD and the
  radially weighted angle, and soft cosine with S = the AG News background's feature
  correlations in 64-factor form, fitted under the same fix), raw and under each fix; under the
  fix "soft" cosine is soft cosine with the profile's stored S;
- the geometry settings: cosine Spearman with all-but-the-top removing D directions, whitening
  keeping k dimensions and soft cosine's S with k factors, each fitted on all AG News background
  sentences.

Prints a summary and writes JSON (default benchmarks/results/stsb_eval.json). Embeddings are
cached, so reruns take seconds:

    CALIBSIM_CACHE_DIR=/tmp/calibsim-cache .venv/bin/python scripts/evaluate_stsb.py
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from build_builtin_profile import agnews_sentences, clean
from scipy.stats import spearmanr

from calibsim_gui.core.analysis.pairs import score_column, score_pairs
from calibsim_gui.core.io.atomic import write_text_atomic
from calibsim_gui.core.embedding.cache import EmbeddingCache
from calibsim_gui.core.geometry.diagnostics import diagnose_geometries
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.calibration.human import (
    HumanCalibrator, cross_validate_human, load_human_pairs, reliability_curve)
from calibsim_gui.core.geometry.transforms import (
    SoftCosineSpace, apply_geometry, fit_geometries, geometry_settings)
from calibsim_gui.core.geometry.metrics import METRICS, pair_scores
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.calibration.profile_builder import default_profile
from calibsim_gui.core.provenance import library_versions
from calibsim_gui.core.analysis.thresholds import find_threshold

ROOT = Path(__file__).resolve().parents[1]
SCALE = (0.0, 5.0)
SAME_MEANING = 4.0          # STS grade 4: "mostly equivalent"
AGNEWS_SAMPLE = 5000


def cosine_sim(scored, geometry: str, form: str, rows) -> np.ndarray:
    return scored.frame[score_column("cosine", form, geometry)].to_numpy(dtype=float)[rows]


ABTT_DIRECTIONS = (1, 2, 4, 8, 16, 32)
WHITEN_DIMS = (32, 64, 128, 256, None)
SOFT_FACTORS = (8, 32, 64, 128, 384)


def spearman_x100(scores, human, higher_is_similar=True) -> float:
    rho = float(spearmanr(scores, human).statistic)
    return round(rho * 100 * (1 if higher_is_similar else -1), 2)


def metric_spearman(profile, embed_a, embed_b, background, human) -> dict:
    """Spearman x100 of every metric and soft cosine, raw and under each of the profile's fixes.

    Soft cosine's S is fitted (64 factors) on the background under the same fix; under the fix
    "soft" itself, cosine is soft cosine and the row has no separate soft cosine."""
    out = {}
    for g in profile.geometry_names():
        transform = profile.transform(g)
        a, b = (apply_geometry(transform, x) for x in (embed_a, embed_b))
        scores = pair_scores(a, b)
        row = {name: spearman_x100(values, human, METRICS[name].higher_is_similar)
               for name, values in scores.items()}
        row["wrd_reversed"] = spearman_x100(pair_scores(b, a, ["wrd"])["wrd"], human, False)
        if g != "soft":
            space = SoftCosineSpace().fit(apply_geometry(transform, background))
            row["softcos"] = spearman_x100(pair_scores(space.transform(a), space.transform(b),
                                                       ["cosine"])["cosine"], human)
        out[g] = row
    return out


def settings_spearman(embed_a, embed_b, background, human) -> dict:
    """Cosine Spearman x100 with ABTT removing D directions and whitening keeping k dimensions,
    and soft cosine with S in k-factor form."""
    out = {"abtt_directions": {}, "whiten_dim": {}, "soft_factors": {}}
    for d in ABTT_DIRECTIONS:
        t = fit_geometries(background, ["abtt"], geometry_settings(abtt_directions=d))["abtt"]
        out["abtt_directions"][str(d)] = spearman_x100(
            pair_scores(t.transform(embed_a), t.transform(embed_b), ["cosine"])["cosine"], human)
    for k in WHITEN_DIMS:
        t = fit_geometries(background, ["whiten"], geometry_settings(whiten_dim=k))["whiten"]
        out["whiten_dim"][str(k or t.n_components_)] = spearman_x100(
            pair_scores(t.transform(embed_a), t.transform(embed_b), ["cosine"])["cosine"], human)
    for k in SOFT_FACTORS:
        t = fit_geometries(background, ["soft"], geometry_settings(soft_factors=k))["soft"]
        out["soft_factors"][str(k)] = spearman_x100(
            pair_scores(t.transform(embed_a), t.transform(embed_b), ["cosine"])["cosine"], human)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "stsb_eval.json")
    args = parser.parse_args()
    started = time.perf_counter()
    embedder = load_model(None, device="cpu")
    cache = EmbeddingCache()
    profile = default_profile(embedder, cache=cache)
    geometries = profile.geometry_names()
    train = load_human_pairs(args.data / "stsb" / "train.csv", scale=SCALE)
    test = load_human_pairs(args.data / "stsb" / "test.csv", scale=SCALE)
    scored = {name: score_pairs(pairs.table, embedder, profile, metrics=["cosine"],
                                geometry=geometries, cache=cache)
              for name, pairs in (("train", train), ("test", test))}
    truth = test.human / SCALE[1]

    spearman, human = {}, {}
    for g in geometries:
        raw = cosine_sim(scored["test"], g, "raw", test.rows)
        spearman[g] = round(float(spearmanr(raw, test.human).statistic) * 100, 2)
        fit_scores = cosine_sim(scored["train"], g, "raw", train.rows)
        calibrator = HumanCalibrator(scale=SCALE, geometry=g, model=embedder.fingerprint.id).fit(
            fit_scores, train.human)
        predicted = calibrator.transform(raw)
        check = cross_validate_human(fit_scores, train.human, train.texts_a, train.texts_b, scale=SCALE)
        human[g] = {
            "test_mae": {
                "isotonic_human": float(np.abs(predicted - truth).mean()),
                "raw_cosine_clipped": float(np.abs(np.clip(raw, 0, 1) - truth).mean()),
                "bg_percentile_over_100": float(np.abs(cosine_sim(scored["test"], g, "bg_percentile",
                                                                  test.rows) / 100 - truth).mean()),
                "anchor_ladder_calibrated": float(np.abs(cosine_sim(scored["test"], g, "calibrated",
                                                                    test.rows) - truth).mean()),
            },
            "test_spearman_x100_isotonic": round(float(spearmanr(predicted, test.human).statistic) * 100, 2),
            "train_cross_validated": check.to_dict(),
            "test_reliability": reliability_curve(predicted, truth),
            "thresholds": len(calibrator.x_),
        }

    raw_train = cosine_sim(scored["train"], "none", "raw", train.rows)
    found = find_threshold(raw_train, train.human >= SAME_MEANING, criterion="precision", target=0.9)
    raw_test = cosine_sim(scored["test"], "none", "raw", test.rows)
    called, same = raw_test >= found.threshold, test.human >= SAME_MEANING
    threshold = {"definition": f"same meaning = human score >= {SAME_MEANING:g}; cosine, no fix",
                 "train": found.to_dict(),
                 "test_precision": float(same[called].mean()), "test_recall": float(called[same].mean())}

    transforms = {g: profile.transform(g) for g in geometries}
    sts_sentences = list(dict.fromkeys(np.concatenate([test.texts_a, test.texts_b])))
    sts_emb = encode_texts(embedder, sts_sentences, cache=cache).embeddings
    agnews = pd.read_csv(args.data / "agnews" / "test.csv", dtype=str, keep_default_na=False)
    agnews = agnews.assign(text=agnews["description"].map(clean)).drop_duplicates("text")
    agnews = agnews.sample(n=min(AGNEWS_SAMPLE, len(agnews)), random_state=0)
    agnews_emb = encode_texts(embedder, list(agnews["text"]), cache=cache).embeddings
    reference = profile.query_reference          # IsoScore*'s C0, as in the Space tab
    diagnostics = {
        "stsb_test_sentences": diagnose_geometries(sts_emb, transforms, reference=reference),
        "agnews_test_descriptions": diagnose_geometries(agnews_emb, transforms, reference=reference,
                                                        labels=agnews["label"].to_numpy()),
    }

    embed_a = encode_texts(embedder, list(test.texts_a), cache=cache).embeddings
    embed_b = encode_texts(embedder, list(test.texts_b), cache=cache).embeddings
    background_texts, _ = agnews_sentences(args.data)
    background = encode_texts(embedder, background_texts, cache=cache).embeddings
    metrics_spearman = metric_spearman(profile, embed_a, embed_b, background, test.human)
    settings = settings_spearman(embed_a, embed_b, background, test.human)

    result = {
        "model": embedder.fingerprint.to_dict(),
        "profile": profile.provenance.get("name"),
        "geometries_fitted_on": profile.provenance.get("geometries", {}),
        "stsb": {"train_pairs": len(train.rows), "test_pairs": len(test.rows)},
        "spearman_x100_test_cosine": spearman,
        "spearman_x100_test_metrics": {
            "definition": "Spearman x100 of STS-B test vs human scores, sign flipped for distances; "
                          "wrd(a, b) with a = sentence1, wrd_reversed = wrd(b, a); radial = radially "
                          "weighted angle; softcos: S = feature correlations of the AG News background "
                          "in 64-factor form (under the same fix); under geometry soft, cosine is "
                          "soft cosine with the profile's S",
            "background_sentences": len(background),
            "by_geometry": metrics_spearman,
        },
        "spearman_x100_test_geometry_settings": settings,
        "human_calibration": human,
        "same_meaning_threshold": threshold,
        "diagnostics": diagnostics,
        "seconds": round(time.perf_counter() - started, 1),
        "versions": library_versions(),
        "command": "CALIBSIM_CACHE_DIR=/tmp/calibsim-cache .venv/bin/python scripts/evaluate_stsb.py",
    }
    write_text_atomic(args.out, json.dumps(result, indent=1))
    print(f"STS-B test, {len(test.rows)} pairs; fixes fitted on the AG News background\n")
    print(f"{'geometry':10}{'Spearman':>10}{'MAE iso':>10}{'MAE raw':>10}{'MAE pct':>10}{'MAE ladder':>12}"
          f"{'CV MAE':>9}")
    for g in geometries:
        mae = human[g]["test_mae"]
        print(f"{g:10}{spearman[g]:10.2f}{mae['isotonic_human']:10.3f}{mae['raw_cosine_clipped']:10.3f}"
              f"{mae['bg_percentile_over_100']:10.3f}{mae['anchor_ladder_calibrated']:12.3f}"
              f"{human[g]['train_cross_validated']['mae']:9.3f}")
    print(f"\nsame meaning at 90% precision (train): cosine >= {found.threshold:.3f} "
          f"[{found.interval[0]:.3f}, {found.interval[1]:.3f}]; test precision "
          f"{threshold['test_precision']:.3f}, recall {threshold['test_recall']:.3f}")
    for corpus, report in diagnostics.items():
        print(f"\n{corpus}:")
        print(f"  {'geometry':10}{'mean cos':>10}{'IsoScore':>10}{'IsoScore*':>10}{'eff rank':>10}"
              f"{'PC1':>8}{'hubness':>9}{'silhouette':>12}")
        for g, d in report.items():
            sil = "-" if d["silhouette"] is None else f"{d['silhouette']:.3f}"
            print(f"  {g:10}{d['mean_random_cosine']:10.3f}{d['isoscore']:10.3f}{d['isoscore_star']:10.3f}"
                  f"{d['effective_rank']:10.1f}{d['top_pc_share']:8.3f}{d['hubness']:9.2f}{sil:>12}")
    names = list(next(iter(metrics_spearman.values())))
    print("\nSpearman x100 by metric (rows) and geometry (columns)")
    print(f"  {'metric':14}" + "".join(f"{g:>9}" for g in metrics_spearman))
    for name in names:
        print(f"  {name:14}" + "".join(f"{metrics_spearman[g].get(name, float('nan')):9.2f}"
                                        for g in metrics_spearman))
    print(f"\ncosine Spearman, ABTT removing D directions: {settings['abtt_directions']}")
    print(f"cosine Spearman, whitening keeping k dimensions: {settings['whiten_dim']}")
    print(f"soft cosine Spearman, S with k factors: {settings['soft_factors']}")
    print(f"\nwrote {args.out} ({result['seconds']} s)")


if __name__ == "__main__":
    main()
