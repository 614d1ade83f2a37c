"""Language awareness (core/embedding/languages.py): detection, profile records, run notes."""

import json

import numpy as np
import pytest

from calibsim_gui.cli import main as cli_main
from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import build_profile, builtin_profile_path
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.embedding.languages import (
    UNKNOWN,
    describe,
    detect_language,
    detect_languages,
    model_languages,
    profile_languages,
    run_languages,
    summarise_texts,
)
from calibsim_gui.core.embedding.model_folders import builtin_model_path
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.resources import resource_path
from tests.fakes import FakeEmbedder

ENGLISH = [
    "The cat is sleeping on the warm kitchen floor.",
    "Prices of fresh vegetables rose sharply at the market this week.",
    "The train to the city was delayed by heavy snow this morning.",
    "Our team finished the project two days before the deadline.",
    "She reads a chapter of her favourite novel every night before bed.",
    "The museum opens a new exhibition about ancient maps next month.",
]
FRENCH = [  # translations of ENGLISH, in order
    "Le chat dort sur le sol chaud de la cuisine.",
    "Les prix des légumes frais ont fortement augmenté au marché cette semaine.",
    "Le train pour la ville a été retardé par une forte neige ce matin.",
    "Notre équipe a terminé le projet deux jours avant la date limite.",
    "Elle lit un chapitre de son roman préféré chaque soir avant de dormir.",
    "Le musée ouvre le mois prochain une nouvelle exposition sur les cartes anciennes.",
]

CHINESE = [  # translations of ENGLISH, in order
    "猫正在温暖的厨房地板上睡觉。",
    "本周市场上新鲜蔬菜的价格大幅上涨。",
    "今天早上去城里的火车因大雪晚点了。",
    "我们的团队在截止日期前两天完成了项目。",
    "她每晚睡前都会读一章她最喜欢的小说。",
    "博物馆下个月将举办一个关于古代地图的新展览。",
]
JAPANESE = [  # translations of ENGLISH, in order
    "猫が暖かい台所の床で寝ています。",
    "今週、市場で新鮮な野菜の値段が大きく上がった。",
    "今朝、街へ行く電車が大雪で遅れました。",
    "私たちのチームは締め切りの二日前にプロジェクトを終えた。",
    "彼女は毎晩寝る前に好きな小説を一章読みます。",
    "博物館は来月、古地図についての新しい展示を始めます。",
]


@pytest.fixture(scope="module")
def english_profile():
    """A profile whose background is calibsim's English reference sentences."""
    sentences = resource_path("reference", "sentences.txt").read_text(encoding="utf-8").splitlines()
    return build_profile(FakeEmbedder(), sentences, ProfileSettings(n_pairs=500))


def _pairs_file(tmp_path, rows, name="pairs.csv"):
    path = tmp_path / name
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence1", "sentence2"])
        writer.writerows(rows)
    return path


def _language_notes(notes):
    return [n for n in notes if "of the texts are" in n or "of different languages" in n]


def test_detection_finds_english_and_french_and_is_deterministic():
    assert detect_languages(ENGLISH) == ["en"] * len(ENGLISH)
    assert detect_languages(FRENCH) == ["fr"] * len(FRENCH)
    mixed = ENGLISH + FRENCH
    once = detect_languages(mixed)
    assert detect_languages(mixed[::-1]) == once[::-1]       # no state carried between texts
    assert detect_languages(mixed) == once


@pytest.mark.parametrize("text", ["Hello", "ok", "Le chat.", "New iPhone", "", "   ", "w12 w7 w99 w3"])
def test_short_or_unsure_texts_are_unknown(text):
    assert detect_language(text) == UNKNOWN


@pytest.mark.parametrize("text", ["今天天气很好，我们去公园散步。", "我喜欢吃苹果。", "我用iPhone拍了很多照片",
                                  "中华人民共和国成立于一九四九年。", "株式会社東京電力"])
def test_chinese_is_detected_by_characters_without_spaces(text):
    assert detect_language(text) == "zh"


@pytest.mark.parametrize("text", ["今日はとても良い天気ですね。", "日本語を勉強しています。", "新型コロナウイルス",
                                  "東京都庁舎の建設計画"])
def test_japanese_is_detected_by_its_kana(text):
    assert detect_language(text) == "ja"


def test_other_scripts_without_spaces_are_detected_and_short_ones_are_unknown():
    assert detect_language("경제가 빠르게 성장했다") == "ko"
    assert detect_language("วันนี้อากาศดีมากครับผม") == "th"
    assert detect_languages(["你好", "こんにちは", "東京大学", "วันนี้"]) == [UNKNOWN] * 4
    assert detect_language("I visited 東京 yesterday and ate ramen with friends") == "en"
    assert detect_languages(CHINESE) == ["zh"] * len(CHINESE)
    assert detect_languages(JAPANESE) == ["ja"] * len(JAPANESE)


def test_summary_shares_are_among_detected_texts():
    entry = summarise_texts(ENGLISH * 2 + FRENCH[:2] + ["Hello", "ok"])
    assert entry["texts"] == len(ENGLISH) + 4              # distinct texts
    assert entry["unknown"] == 2
    assert entry["shares"] == {"en": 0.75, "fr": 0.25}
    assert entry["detector"].startswith("py3langid ")
    assert summarise_texts(ENGLISH + FRENCH, limit=4)["sampled_from"] == 12


def test_profile_records_its_background_languages(english_profile, tmp_path):
    entry = english_profile.provenance["background"]["languages"]
    assert entry["shares"]["en"] >= 0.95
    saved = ReferenceProfile.load(english_profile.save(tmp_path / "en.calibsim-profile"))
    assert profile_languages(saved.provenance)["en"] >= 0.95
    anchors_only = build_profile(FakeEmbedder(), None)
    assert "background" not in anchors_only.provenance
    assert profile_languages(anchors_only.provenance) is None


def test_builtin_profile_records_english_and_profile_show_prints_it(capsys):
    path = builtin_profile_path("all-MiniLM-L6-v2")
    assert profile_languages(ReferenceProfile.load(path).provenance)["en"] >= 0.95   # checksum still valid
    assert cli_main(["profile", "show", str(path)]) == 0
    assert "background languages: en 99" in capsys.readouterr().out


def test_damaged_language_records_are_ignored():
    for bad in ({"background": {"languages": {"shares": ["en"]}}},
                {"background": {"languages": {"shares": {"en": "lots"}}}},
                {"background": "x"}, {"merged_from": [{}, "x"]}, None):
        assert profile_languages(bad) is None
    merged = {"merged_from": [{"background": {"languages": {"shares": {"en": 1.0}}}},
                              {"background": {"languages": {"shares": {"fr": 0.9, "en": 0.1}}}}]}
    assert profile_languages(merged) == {"en": 1.0, "fr": 0.9}
    assert describe(None) == "not recorded"
    assert describe({"en": 0.995, "pcm": 0.004}) == "en 99.5 %"


def test_english_french_pairs_warn_about_the_reference_and_crossed_pairs(english_profile, tmp_path):
    rows = list(zip(ENGLISH, FRENCH)) + [(FRENCH[0], FRENCH[1]), (FRENCH[2], FRENCH[3])]
    scored = score_pairs(load_pairs(_pairs_file(tmp_path, rows)), FakeEmbedder(), english_profile)
    notes = _language_notes(scored.notes)
    reference = [n for n in notes if "of the texts are French (fr)" in n]
    assert len(reference) == 1
    assert "the reference background is English (en)" in reference[0]
    assert "calibsim profile build --background fr.txt" in reference[0]
    crossed = [n for n in notes if "of different languages" in n]
    assert len(crossed) == 1
    assert crossed[0].startswith("6 pairs pair texts of different languages (pairs 1, 2, 3, 4, 5, 6)")
    languages = scored.provenance["languages"]
    assert languages["cross_language_pairs"] == 6
    assert languages["texts"]["shares"] == {"en": 0.5, "fr": 0.5}
    assert languages["reference"]["en"] >= 0.95
    assert json.loads(json.dumps(scored.provenance["languages"])) == languages


def test_english_pairs_give_no_language_note(english_profile, tmp_path):
    rows = list(zip(ENGLISH, ENGLISH[1:] + ENGLISH[:1]))
    scored = score_pairs(load_pairs(_pairs_file(tmp_path, rows)), FakeEmbedder(), english_profile)
    assert _language_notes(scored.notes) == []
    assert scored.provenance["languages"]["cross_language_pairs"] == 0
    assert scored.provenance["languages"]["texts"]["shares"] == {"en": 1.0}


HEADLINES = ["Death toll in bus attack rises to twelve", "Police say no link to helicopter crash",
             "Lawmakers vote for new president", "Nigerian police seek eight suspects over crash",
             "Army chief killed in Lagos ambush", "Ghana votes in tight presidential poll"]


def test_short_english_headlines_are_not_called_another_language_or_cross_language(
        english_profile, tmp_path):
    # with all of py3langid's languages, four of these were guessed Nigerian Pidgin (pcm)
    assert set(detect_languages(HEADLINES)) <= {"en", UNKNOWN}
    rows = list(zip(HEADLINES, HEADLINES[1:] + HEADLINES[:1]))
    scored = score_pairs(load_pairs(_pairs_file(tmp_path, rows)), FakeEmbedder(), english_profile)
    assert scored.provenance["languages"]["cross_language_pairs"] == 0
    assert _language_notes(scored.notes) == []


def test_model_card_languages(tmp_path):
    assert model_languages(builtin_model_path()) == ("en",)
    (tmp_path / "README.md").write_text("---\nlicense: mit\nlanguage:\n- de\n- FR\ntags: [x]\n---\n# m\n")
    assert model_languages(tmp_path) == ("de", "fr")
    (tmp_path / "README.md").write_text("# no front matter\nlanguage: en\n")
    assert model_languages(tmp_path) is None
    assert model_languages(tmp_path / "missing") is None


def test_a_model_card_without_the_language_is_noted():
    provenance = {"background": {"languages": {"shares": {"en": 1.0}}}}
    entry, notes = run_languages(ENGLISH + FRENCH, provenance, model_folder=builtin_model_path())
    assert entry["model"] == ["en"]
    assert any("the model's card declares English (en) only" in n and "French (fr)" in n for n in notes)
    entry, notes = run_languages(ENGLISH, provenance, model_folder=builtin_model_path())
    assert notes == []


def test_chinese_and_japanese_pairs_warn_about_an_english_reference(english_profile, tmp_path):
    provenance = {"background": {"languages": {"shares": {"en": 1.0}}}}
    entry, notes = run_languages(CHINESE + JAPANESE, provenance)
    assert entry["texts"]["unknown"] == 0
    assert entry["texts"]["shares"] == {"ja": 0.5, "zh": 0.5}
    for name in ("Chinese (zh)", "Japanese (ja)"):
        assert any(f"of the texts are {name}; the reference background is English (en)" in n
                   for n in notes)
    rows = list(zip(CHINESE, JAPANESE))
    scored = score_pairs(load_pairs(_pairs_file(tmp_path, rows)), FakeEmbedder(), english_profile)
    notes = _language_notes(scored.notes)
    assert any("of the texts are Chinese (zh)" in n for n in notes)
    assert any("of the texts are Japanese (ja)" in n for n in notes)
    assert any("calibsim profile build --background zh.txt" in n for n in notes)
    assert scored.provenance["languages"]["cross_language_pairs"] == len(rows)


def test_the_detector_model_is_decompressed_once_and_a_damaged_copy_is_rewritten(monkeypatch, tmp_path):
    """py3langid's model is read from an uncompressed copy in the cache (first use writes it, later
    runs map it); a copy with flipped bytes fails its CRC and is replaced, never read as a model,
    and so is a truncated copy or one written for other languages."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE

    from calibsim_gui.core.embedding import languages
    from calibsim_gui.core.embedding.mapped_arrays import read_arrays

    monkeypatch.setenv("CALIBSIM_CACHE_DIR", str(tmp_path))
    packaged = MODEL_DIR / MODEL_FILE
    first = languages._model_arrays(packaged)
    (copy,) = (tmp_path / "langid").glob("*.arrays")
    mapped = languages._model_arrays(packaged)
    assert all(np.array_equal(mapped[name], first[name]) for name in first)
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF                           # inside the largest array
    copy.write_bytes(bytes(data))
    again = languages._model_arrays(packaged)
    assert all((again[name] == first[name]).all() for name in first)
    assert languages._model_arrays(packaged)["ptc"].shape == first["ptc"].shape
    assert copy.read_bytes() != bytes(data)                 # written again, whole
    copy.write_bytes(copy.read_bytes()[:-100])               # truncated
    assert all(np.array_equal(languages._model_arrays(packaged)[name], first[name]) for name in first)
    assert read_arrays(copy, tag=languages._COPY_TAG) is not None      # written again
    monkeypatch.setattr(languages, "_COPY_TAG", "py3langid model, classes en")
    assert read_arrays(copy, tag=languages._COPY_TAG) is None
    assert languages._model_arrays(packaged)["classes"].tolist() == first["classes"].tolist()
    assert read_arrays(copy, tag=languages._COPY_TAG) is not None      # written for these classes
