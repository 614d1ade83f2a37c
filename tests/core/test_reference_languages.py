"""The unrelated end of the calibrated scale is measured in the language of the pairs."""

import csv

import numpy as np
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.embedding.languages import language_name
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
    assert set(profile.provenance["scale"]["languages"]) == set()     # measured into a new profile


def test_the_reference_uncertainty_of_french_pairs_comes_from_the_french_sentences(scored):
    _, results = scored
    frame = results["fr"].frame
    assert (frame["cosine_calibrated_lo"] <= frame["cosine_calibrated"] + 1e-9).all()
    assert (frame["cosine_calibrated"] <= frame["cosine_calibrated_hi"] + 1e-9).all()


SHORT = {  # 1-5 words: too short for a language of their own
    "ar": ["رجل يركب دراجة", "القطة نائمة", "السماء زرقاء", "أحب القهوة", "الطفل يضحك", "المطر يهطل"],
    "zh": ["猫在睡觉", "下雨了", "我喜欢茶", "孩子在笑", "天很蓝", "房子很大"],
    "nl": ["Een man fietst.", "De kat slaapt.", "Het regent.", "Ik drink koffie.", "Het kind lacht.",
           "Het huis is groot."],
    "fr": ["Le chat dort.", "Il pleut.", "J'aime le café.", "L'enfant rit.", "Le ciel est bleu.",
           "Un homme court."],
    "de": ["Die Katze schläft.", "Es regnet.", "Ich trinke Kaffee.", "Das Kind lacht.", "Der Himmel ist blau.",
           "Ein Mann läuft."],
    "hi": ["बिल्ली सो रही है", "बारिश हो रही है", "मुझे चाय पसंद है", "बच्चा हंस रहा है", "आसमान नीला है",
           "घर बड़ा है"],
    "it": ["Il gatto dorme.", "Piove.", "Mi piace il caffè.", "Il bambino ride.", "Il cielo è blu.",
           "Un uomo va in bicicletta."],
    "ja": ["猫が寝ている", "雨です", "お茶が好き", "子供が笑う", "空は青い", "男が走る"],
    "pl": ["Kot śpi.", "Pada deszcz.", "Lubię kawę.", "Dziecko się śmieje.", "Niebo jest niebieskie.",
           "Dom jest duży."],
    "pt": ["Um homem anda de bicicleta.", "Um rapaz anda de bicicleta.", "O gato dorme.", "Está chovendo.",
           "Eu gosto de café.", "A criança ri."],
    "ru": ["Мужчина едет на велосипеде.", "Кошка спит.", "Идёт дождь.", "Я люблю кофе.", "Ребёнок смеётся.",
           "Небо голубое."],
    "es": ["Un hombre monta en bicicleta.", "El gato duerme.", "Llueve.", "Me gusta el café.", "El niño ríe.",
           "El cielo es azul."],
}
GLOSSES = ["spare in quality or quantity", "lacking in quality or quantity", "fond of music",
           "a small boat", "not generous", "to walk slowly", "meagre", "frugal in amount"]


@pytest.fixture(scope="module")
def short_scored(tmp_path_factory):
    embedder = FakeEmbedder()
    profile, folder = build_profile(embedder, None), tmp_path_factory.mktemp("short")
    files = {**SHORT, "en": GLOSSES}
    return {code: score_pairs(_pairs(folder, texts + texts[1:] + texts[:1], f"{code}.csv"), embedder, profile,
                              metrics=["cosine"]) for code, texts in files.items()}


@pytest.mark.parametrize("code", sorted(SHORT))
def test_short_sentences_take_the_end_of_their_files_language(short_scored, code):
    assert set(REFERENCE_LANGUAGES) == set(SHORT)
    result = short_scored[code]
    assert result.provenance["reference_languages"] == {"en": 0, code: len(result.frame)}
    assigned = result.provenance["languages"]["assigned"]
    assert assigned["file"] == code and assigned["none"] == 0
    assert any(f"the file's ({language_name(code)} ({code}))" in note for note in result.notes)


def test_english_glosses_in_an_english_file_stay_english(short_scored):
    result = short_scored["en"]
    assert result.provenance["reference_languages"] == {"en": len(result.frame)}
    assert result.provenance["languages"]["assigned"]["file"] == "en"


def test_a_mixed_file_stays_mixed_where_the_evidence_is_strong(tmp_path):
    embedder = FakeEmbedder()
    texts = ENGLISH[:40] + FRENCH[:40]
    result = score_pairs(_pairs(tmp_path, texts, "mixed.csv"), embedder, build_profile(embedder, None),
                         metrics=["cosine"])
    assert result.provenance["reference_languages"] == {"en": 20, "fr": 20}
