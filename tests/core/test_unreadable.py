"""Texts the model cannot read (all tokens unknown or special) get no calibrated score and a reason."""

import csv
import re

import numpy as np
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.calibration.profile_builder import build_profile, default_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.embedding.readability import UNREADABLE_COLUMN
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.reports.content import build_report
from tests.fakes import FakeEmbedder, random_sentences

UNREADABLE = [("🚗", "🍕"), ("😀😀", "🐱"), ("\u200b\u200b", "\u200b"),
              ("ሰላም ለዓለም እንዴት ነህ", "ዛሬ ዝናብ ይዘንባል ብለው ነበር"),          # Amharic
              ("ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ ᎠᏍᎦᏯ", "ᎤᏓᏅᏘ ᎠᏂᏴᏫ ᏧᏂᎸᏫᏍᏓᏁᏗ")]                  # Cherokee
READABLE = [("A man is riding a bicycle.", "A boy rides a bike."),
            ("The stock market fell sharply today.", "I like green tea 🍵.")]


class ReadingEmbedder(FakeEmbedder):
    """The fake, with a tokenizer that knows ASCII words only (others are unknown tokens)."""

    def known_token_counts(self, texts):
        return np.array([len(re.findall(r"[A-Za-z0-9]+", t)) for t in texts], dtype=np.int64)


def _pairs(tmp_path, rows):
    path = tmp_path / "pairs.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("sentence1", "sentence2", "score")] + [(a, b, 2.5) for a, b in rows])
    return load_pairs(path)


def _check(scored, n_unreadable: int, readable_rows: slice, *, pairs: int, band: bool):
    frame = scored.frame
    marks = frame[UNREADABLE_COLUMN].tolist()
    assert marks[:n_unreadable] == ["both"] * n_unreadable and set(marks[readable_rows]) == {""}
    calibrated = [c for c in frame.columns if c.startswith("cosine_") and c != "cosine_raw"]
    assert "cosine_calibrated" in calibrated and "cosine_bg_percentile" in calibrated
    assert ("cosine_calibrated_band80_lo" in calibrated) == band
    assert frame[calibrated].iloc[:n_unreadable].isna().all().all()      # nothing calibrated
    assert frame[calibrated].iloc[readable_rows].notna().all().all()
    assert frame["cosine_raw"].notna().all()                              # the raw score stays
    assert scored.provenance["unreadable"]["pairs"] == pairs
    assert any(f"their {pairs} pairs get no calibrated score" in n for n in scored.notes)


@pytest.fixture(scope="module")
def fake_profile():
    return build_profile(ReadingEmbedder(), random_sentences(300, seed=3), ProfileSettings(n_pairs=400))


def test_texts_without_a_known_token_get_no_calibrated_score_and_a_reason(fake_profile, tmp_path):
    rows = [("🚗", "🍕"), ("😀😀", "🐱"), ("…", "—"), ("a cat sleeps", "a dog runs"), ("🚗", "a red car")]
    scored = score_pairs(_pairs(tmp_path, rows), ReadingEmbedder(), fake_profile, metrics=["cosine"],
                         interval=True)
    _check(scored, 3, slice(3, 4), pairs=4, band=False)
    assert scored.frame[UNREADABLE_COLUMN].iloc[4] == "a"
    assert np.isnan(scored.frame["cosine_calibrated"].iloc[4])
    summary = dict(build_report(scored, fake_profile).summary())
    assert summary["Unreadable pairs"].startswith("4 pairs have a text with no token the model knows")


def test_an_embedder_without_a_tokenizer_flags_nothing(tmp_path):
    profile = build_profile(FakeEmbedder(), random_sentences(300, seed=3), ProfileSettings(n_pairs=400))
    scored = score_pairs(_pairs(tmp_path, [("🚗", "🍕"), ("a cat", "a dog")]), FakeEmbedder(), profile,
                         metrics=["cosine"])
    assert UNREADABLE_COLUMN not in scored.frame and scored.provenance["unreadable"] is None


@pytest.mark.slow
def test_the_builtin_model_cannot_read_emoji_invisible_text_amharic_or_cherokee(real_embedder, tmp_path):
    scored = score_pairs(_pairs(tmp_path, UNREADABLE + READABLE), real_embedder,
                         default_profile(real_embedder), metrics=["cosine"], interval=True)
    _check(scored, len(UNREADABLE), slice(len(UNREADABLE), None), pairs=len(UNREADABLE), band=True)


def test_an_interval_without_a_human_band_says_so(fake_profile, tmp_path):
    scored = score_pairs(_pairs(tmp_path, READABLE), ReadingEmbedder(), fake_profile, metrics=["cosine"],
                         interval=True)
    assert "cosine_calibrated_lo" in scored.frame and "cosine_calibrated_band80_lo" not in scored.frame
    assert any(note.startswith("no human agreement band") for note in scored.notes)
