"""The unrelated end of the calibrated scale is measured in the language of the pairs."""

import csv

import numpy as np
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.references.reference_scale import REFERENCE_LANGUAGES, reference_sentences
from tests.fakes import FakeEmbedder

FRENCH = reference_sentences("fr")                # unrelated sentences: pairs of them score
ENGLISH = reference_sentences()[200:400]          # like a typical pair of their language
_FRENCH_WORDS = {"le", "la", "les", "de", "du", "des", "un", "une", "et", "est", "à", "pour", "avec"}


class FrenchLeaningEmbedder(FakeEmbedder):
    """A multilingual-looking fake whose French texts share a direction: French pairs of
    unrelated sentences score higher than English ones, as with real multilingual models."""

    def encode_batch(self, texts, prompt: str = ""):
        out = super().encode_batch(texts, prompt).astype(np.float64)
        french = np.array([len(_FRENCH_WORDS & set(t.lower().split())) >= 2 for t in texts])
        out[french] += 0.9 * self._word("<french>")[None, :] / np.linalg.norm(self._word("<french>"))
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def _pairs(tmp_path, texts, name):
    path = tmp_path / name
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence1", "sentence2"])
        writer.writerows(zip(texts[::2], texts[1::2]))
    return load_pairs(path)



def test_reference_sentences_ship_in_every_listed_language():
    english = reference_sentences()
    for code in REFERENCE_LANGUAGES:
        sentences = reference_sentences(code)
        assert len(sentences) == 200 == len(set(sentences)) and sentences != english[:200]


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    embedder = FrenchLeaningEmbedder()
    profile = build_profile(embedder, None)
    folder = tmp_path_factory.mktemp("pairs")
    return profile, {lang: score_pairs(_pairs(folder, texts, f"{lang}.csv"), embedder, profile,
                                       metrics=["cosine"], interval=True)
                     for lang, texts in (("en", ENGLISH), ("fr", FRENCH))}


def test_unrelated_pairs_sit_at_zero_in_english_and_in_french(scored):
    profile, results = scored
    raw = {lang: np.median(r.frame["cosine_raw"]) for lang, r in results.items()}
    assert raw["fr"] > raw["en"] + 0.05                                # French pairs score higher raw
    for lang, result in results.items():
        assert abs(np.median(result.frame["cosine_calibrated"])) < 0.03, lang
    english_end = profile.metrics["cosine"].calibrators["calibrated"].transform(results["fr"].frame["cosine_raw"])
    assert np.median(english_end) > 0.1                               # with the English end they would not
    assert results["fr"].provenance["reference_languages"] == {"en": 0, "fr": len(results["fr"].frame)}
    assert set(profile.provenance["scale"]["languages"]) == {"fr"}     # measured when first met, once


def test_the_reference_uncertainty_of_french_pairs_comes_from_the_french_sentences(scored):
    _, results = scored
    frame = results["fr"].frame
    assert (frame["cosine_calibrated_lo"] <= frame["cosine_calibrated"] + 1e-9).all()
    assert (frame["cosine_calibrated"] <= frame["cosine_calibrated_hi"] + 1e-9).all()
