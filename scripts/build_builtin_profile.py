"""Rebuild resources/profiles/all-MiniLM-L6-v2.calibsim-profile, calibsim's built-in reference.

Background: the AG News sentences in ../shared/data/agnews (train + test, titles and
descriptions, cleaned of the corpus's backslash line breaks and HTML-entity remnants);
20,000 background pairs drawn by the seeded text-key scheme of calibsim_gui.core.geometry.background
(seed 0; the same pairs `calibsim profile build --engine ray` draws from the same sentences).
Anchors: resources/anchors/builtin-ladder.json.
References for every metric of calibsim_gui.core.geometry.metrics (radial included). Geometry fixes
(mean-centering, whitening, all-but-the-top, and the soft-cosine space whose 64-factor feature
similarity S makes cosine soft cosine) are fitted on all background sentences, with cosine
references under each. The profile stores statistics only (sketches,
moments, calibrators, fitted transforms, 1,000 embeddings), never corpus text.

Human agreement band: split-conformal residuals of people's scores around the calibrated score,
measured on STS-B train + dev and on SICK-R train + dev, each source on its own, keeping per
quarter of the scale the wider of the two (never on a test split: `calibsim evaluate` checks its
coverage on both test splits).

    .venv/bin/python scripts/build_builtin_profile.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import html
import re
from pathlib import Path

import pandas as pd

from calibsim_gui.core.embedding.cache import EmbeddingCache
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.calibration.human import load_human_pairs
from calibsim_gui.core.calibration.profile_builder import (
    build_profile, builtin_profile_path, fit_agreement_bands)
from calibsim_gui.core.provenance import file_digest
from calibsim_gui.core.references.reference_scale import REFERENCE_LANGUAGES

BAND_SOURCES = {"stsb": (0.0, 5.0), "sick": (1.0, 5.0)}
_ENTITY = re.compile(r"(?<![&\w])#(\d+);")


def clean(text: str) -> str:
    """Undo AG News quirks: '\\' line breaks, '#36;'-style entities, runs of spaces."""
    text = _ENTITY.sub(r"&#\1;", text.replace("\\", " "))
    text = html.unescape(html.unescape(text.replace("quot;", '"')))
    return " ".join(text.split())


def agnews_sentences(data: Path) -> tuple[list[str], list[Path]]:
    files = [data / "agnews" / "train.csv", data / "agnews" / "test.csv"]
    texts = []
    for f in files:
        frame = pd.read_csv(f, dtype=str, keep_default_na=False)
        texts += [clean(t) for t in frame["title"]] + [clean(t) for t in frame["description"]]
    return list(dict.fromkeys(t for t in texts if len(t.split()) >= 3)), files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "data")
    args = parser.parse_args()
    texts, files = agnews_sentences(args.data)
    embedder = load_model(None, device="auto")
    out = builtin_profile_path(embedder.fingerprint.name)

    def progress(done, total, message):
        if done % 2048 == 0 or done == total:
            print(message, flush=True)

    profile = build_profile(embedder, texts, n_pairs=20_000, seed=0, sources=files, languages=REFERENCE_LANGUAGES,
                            name=f"built-in: AG News background, {embedder.fingerprint.name}",
                            cache=EmbeddingCache(), progress=progress)
    profile.provenance["background"]["corpus"] = (
        "AG News (Zhang, Zhao & LeCun 2015): titles and descriptions of the original test.csv "
        "and the first 10,429 rows of train.csv, cleaned by scripts/build_builtin_profile.py")
    band_files = [(source, args.data / source / f"{split}.csv", scale) for source, scale in BAND_SOURCES.items()
                  for split in ("train", "dev")]
    labelled = [(source, load_human_pairs(f, scale=scale), scale) for source, f, scale in band_files]
    fit_agreement_bands(
        profile, embedder, [t for _, p, _ in labelled for t in p.texts_a], [t for _, p, _ in labelled for t in p.texts_b],
        [(h - lo) / (hi - lo) for _, p, (lo, hi) in labelled for h in p.human], cache=EmbeddingCache(),
        groups=[source for source, p, _ in labelled for _ in p.human],
        source={"files": [{"name": f"{source}/{f.name}", "sha256": file_digest(f)} for source, f, _ in band_files],
                "scale": [0.0, 1.0], "what": "STS-B train + dev (0-5) and SICK-R train + dev (1-5), "
                                             "each source on its own, the wider band kept"})
    profile.save(out)
    print(f"wrote {out}: {profile.background_pairs} pairs from {len(texts)} sentences")


if __name__ == "__main__":
    main()
