"""Evaluate geometry fixes, human calibration and diagnostics on STS Benchmark (built-in model).

- Spearman x100 of STS-B test with raw cosine and with each geometry fix (fitted on the AG News
  background of the built-in profile, never on STS-B);
- isotonic human calibration fitted on STS-B train, checked on STS-B test: mean absolute error
  on the 0-1 scale next to raw cosine (clipped to [0, 1]), background percentile / 100 and the
  anchor ladder ("calibrated"); plus its cross-validated error on train, split by sentence;
- a "same meaning" threshold (human score >= 4) at 90 % precision, chosen on train, checked on test;
- space diagnostics (raw and each fix) of the STS-B test sentences and of AG News test texts
  (with their four topic labels for the silhouette score).

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
from build_builtin_profile import clean
from scipy.stats import spearmanr

from calibsim_gui.core.analysis import score_column, score_pairs
from calibsim_gui.core.atomic import write_text_atomic
from calibsim_gui.core.cache import EmbeddingCache
from calibsim_gui.core.diagnostics import diagnose_geometries
from calibsim_gui.core.encoding import encode_texts
from calibsim_gui.core.human import (
    HumanCalibrator,
    cross_validate_human,
    load_human_pairs,
    reliability_curve,
    threshold_at_precision,
)
from calibsim_gui.core.models import load_model
from calibsim_gui.core.profile_builder import default_profile
from calibsim_gui.core.provenance import library_versions

ROOT = Path(__file__).resolve().parents[1]
SCALE = (0.0, 5.0)
SAME_MEANING = 4.0          # STS grade 4: "mostly equivalent"
AGNEWS_SAMPLE = 5000


def cosine_sim(scored, geometry: str, form: str, rows) -> np.ndarray:
    return scored.frame[score_column("cosine", form, geometry)].to_numpy(dtype=float)[rows]


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
    found = threshold_at_precision(raw_train, train.human >= SAME_MEANING, precision=0.9)
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
    diagnostics = {
        "stsb_test_sentences": diagnose_geometries(sts_emb, transforms),
        "agnews_test_descriptions": diagnose_geometries(agnews_emb, transforms, labels=agnews["label"].to_numpy()),
    }

    result = {
        "model": embedder.fingerprint.to_dict(),
        "profile": profile.provenance.get("name"),
        "geometries_fitted_on": profile.provenance.get("geometries", {}),
        "stsb": {"train_pairs": len(train.rows), "test_pairs": len(test.rows)},
        "spearman_x100_test_cosine": spearman,
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
        print(f"  {'geometry':10}{'mean cos':>10}{'IsoScore':>10}{'eff rank':>10}{'PC1':>8}{'hubness':>9}"
              f"{'silhouette':>12}")
        for g, d in report.items():
            sil = "-" if d["silhouette"] is None else f"{d['silhouette']:.3f}"
            print(f"  {g:10}{d['mean_random_cosine']:10.3f}{d['isoscore']:10.3f}{d['effective_rank']:10.1f}"
                  f"{d['top_pc_share']:8.3f}{d['hubness']:9.2f}{sil:>12}")
    print(f"\nwrote {args.out} ({result['seconds']} s)")


if __name__ == "__main__":
    main()
