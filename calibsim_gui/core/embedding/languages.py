"""Which languages texts are in, and whether the model and the reference cover them.

A monolingual model scores a sentence and its translation as unrelated, and a background of
English pairs says nothing about how French pairs score. This module detects the language of
each text with py3langid (langid.py's naive Bayes model on byte n-grams, shipped with the
package: no network, deterministic), summarises a set of texts as shares per language, reads
the languages a profile's background and a model's card declare, and writes the notes a run
shows when they do not match.

Pairs are calibrated in a language by the file first, then by the text (`pair_languages`): a
text takes a language other than its file's only when the detector is sure of it (`SURE`), and
short or unsure texts take their pair's other text's language or the file's, never English by
default. Texts too short for a reliable guess (fewer than `MIN_WORDS` words or `MIN_LETTERS` letters)
and guesses below `MIN_CONFIDENCE` are "unknown"; shares are taken among the texts whose
language was detected. Texts mostly in scripts written without spaces between words are
measured in characters instead: Chinese, Japanese and Korean from `MIN_CJK_CHARS` Han, kana or
Hangul characters, Thai, Lao, Khmer and Burmese from `MIN_LETTERS` characters of their script.
Their language is then read from the script where it is unambiguous (kana: ja, Hangul: ko,
Thai, Lao, Khmer, Myanmar script: th, lo, km, my); Han alone is zh unless py3langid, choosing
between zh and ja, is at least `PAIR_CONFIDENCE` sure it is ja. Guesses are among the ~50 common languages named here: with all 97 of
py3langid's, short English headlines were taken for Nigerian Pidgin (25 of STS-B train's
5,749 English pairs were called cross-language; none with this restriction and
`PAIR_CONFIDENCE`).
"""

from __future__ import annotations

import contextlib
import functools
import io
import lzma
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding.cache import default_cache_dir
from calibsim_gui.core.embedding.file_digests import file_sha256
from calibsim_gui.core.embedding.mapped_arrays import read_arrays, write_arrays
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.references.reference_scale import REFERENCE_LANGUAGES

UNKNOWN = "unknown"
MIN_WORDS = 3
MIN_LETTERS = 15
MIN_CJK_CHARS = 6
"""Han, kana and Hangul characters a text needs (each is a syllable or a word: ~2 English words)."""
MIN_CONFIDENCE = 0.5
"""py3langid's normalised probability below which a guess is not trusted (headlines of AG News:
99.5 % English above it, 93 % with every guess kept)."""
PAIR_CONFIDENCE = 0.8
"""A pair is called cross-language only when both guesses are at least this sure."""
SURE = 0.9
"""A text takes a language other than its file's only when a guess is at least this sure (two
English dictionary glosses were guessed Italian at 0.78)."""
FILE_SAMPLE = 2_000
FILE_CHARACTERS = 100_000
"""Texts and characters the file's language is read from (`file_language`)."""
TEXT_CHARACTERS = 10_000
"""Characters a text's language is guessed from (the whole text took seconds per million words)."""
MAX_TEXTS = 20_000
"""Distinct texts checked per run or background (evenly spaced beyond that; ~65 ms per 1,000)."""
COVERED_SHARE = 0.05      # a reference covers the languages of at least 5 % of its sentences
NOTE_SHARE = 0.10         # an input language is worth a note from 10 % of the detected texts
NO_LANGUAGE = {"zxx"}     # py3langid's "no linguistic content"

_SCRIPTS = {  # scripts written without spaces between words (Hangul: syllable blocks)
    "han": "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3005-\u3007\U00020000-\U0003ffff",
    "ja": "\u3041-\u309f\u30a0-\u30fa\u30fc-\u30ff\u31f0-\u31ff\uff66-\uff9f"
          "\U0001b000-\U0001b16f",                       # kana (not the middle dot ・)
    "ko": "\u1100-\u11ff\u3131-\u318e\ua960-\ua97f\uac00-\ud7ff\uffa0-\uffdc",
    "th": "\u0e01-\u0e3a\u0e40-\u0e4e",
    "lo": "\u0e81-\u0ece\u0edc-\u0edf",
    "km": "\u1780-\u17d3\u17dd",
    "my": "\u1000-\u103f\u1050-\u108f\u109a-\u109d\ua9e0-\ua9fe\uaa60-\uaa7f",
}
_SCRIPT_RES = {name: re.compile(f"[{chars}]") for name, chars in _SCRIPTS.items()}
_ANY_SCRIPT = re.compile(f"[{''.join(_SCRIPTS.values())}]")
_CJK = ("han", "ja", "ko")

_NAMES = {
    "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech",
    "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek", "en": "English",
    "eo": "Esperanto", "es": "Spanish", "et": "Estonian", "eu": "Basque", "fa": "Persian",
    "fi": "Finnish", "fr": "French", "ga": "Irish", "gl": "Galician", "he": "Hebrew",
    "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "id": "Indonesian", "is": "Icelandic",
    "it": "Italian", "ja": "Japanese", "ko": "Korean", "la": "Latin", "lt": "Lithuanian",
    "lv": "Latvian", "ms": "Malay", "nb": "Norwegian Bokmål", "nl": "Dutch", "no": "Norwegian",
    "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak",
    "sl": "Slovenian", "sq": "Albanian", "sr": "Serbian", "sv": "Swedish", "sw": "Swahili",
    "ta": "Tamil", "th": "Thai", "tl": "Tagalog", "tr": "Turkish", "uk": "Ukrainian",
    "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
}
_SCRIPT_NAMES = {"lo": "Lao", "km": "Khmer", "my": "Burmese"}   # told by script, not py3langid


def language_name(code: str) -> str:
    """``"fr"`` -> ``"French"``; codes without a name here are returned as they are."""
    return _NAMES.get(code) or _SCRIPT_NAMES.get(code, code)


def _percent(share: float) -> str:
    return f"{share:.0%}".replace("%", " %")


def _named(code: str) -> str:
    return f"{language_name(code)} ({code})" if code in _NAMES or code in _SCRIPT_NAMES else code


@functools.lru_cache(maxsize=1)
def _identifier():
    """py3langid's model restricted to the languages named here, loaded once per process from
    its decompressed copy (`_model_arrays`)."""
    try:
        from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier
    except ImportError as exc:          # a bundle or environment without it
        raise RuntimeError(f"language detection needs py3langid ({exc}); install it with "
                           "`pip install py3langid`") from None
    arrays = _model_arrays(Path(MODEL_DIR) / MODEL_FILE)
    return LanguageIdentifier(             # as LanguageIdentifier.from_model_file builds it
        arrays["ptc"], arrays["pc"], arrays["classes"].tolist(), _unsigned(arrays["nextmove"]),
        arrays["out_feat"].tolist(), norm_probs=True, tk_row=_unsigned(arrays["nextmove_row"]))


def prepare_detector() -> None:
    """Write the detector's uncompressed copy (`_model_arrays`) into the cache folder now, as
    ``calibsim models --prepare`` does at install, so a first run does not decompress it."""
    with contextlib.suppress(ImportError):              # without py3langid there is nothing to copy
        from py3langid.langid import MODEL_DIR, MODEL_FILE

        _model_arrays(Path(MODEL_DIR) / MODEL_FILE)


def _model_arrays(packaged: Path) -> dict[str, np.ndarray]:
    """The arrays of py3langid's packaged model (LZMA-compressed: ~1 s to decompress) with its
    classes restricted to the languages named here (as ``set_languages`` restricts them), from
    an uncompressed copy in the cache folder named by the package file's digest, written on
    first use and mapped into memory (`mapped_arrays`: ~0.05 s, where reading the whole copy
    took ~0.2 s). A damaged copy fails its CRC check and is written again."""
    copy = default_cache_dir() / "langid" / f"{file_sha256(packaged)[:32]}.arrays"
    arrays = read_arrays(copy, tag=_COPY_TAG)
    if arrays is not None:
        return arrays
    with lzma.open(packaged) as source, np.load(io.BytesIO(source.read()), allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    keep = [i for i, code in enumerate(arrays["classes"].tolist()) if code in _NAMES]
    arrays.update(ptc=arrays["ptc"][:, keep], pc=arrays["pc"][keep], classes=arrays["classes"][keep])
    with contextlib.suppress(OSError, CalibsimError):     # a read-only cache: decompress each time
        copy.parent.mkdir(parents=True, exist_ok=True)
        write_arrays(copy, arrays, tag=_COPY_TAG)
        for older in copy.parent.glob("*.npz"):           # the whole-model copies calibsim 0.1 wrote
            older.unlink(missing_ok=True)
    return arrays


_COPY_TAG = "py3langid model, classes " + ",".join(_NAMES)


def _unsigned(values: np.ndarray) -> memoryview:
    """A numpy unsigned-int array as the flat sequence of ints py3langid's tokenizer walks
    (a view: no copy of a mapped array)."""
    flat = np.ascontiguousarray(values).reshape(-1)
    return memoryview(flat).cast("B").cast({2: "H", 4: "I", 8: "Q"}[flat.dtype.itemsize])


def detector_name() -> str:
    """The detector and its version, for provenance (``"py3langid 0.4.0"``)."""
    import py3langid

    return f"py3langid {getattr(py3langid, '__version__', '?')}"


def _by_script(text: str) -> tuple[str, float] | None:
    """(code, confidence) of a text mostly in scripts written without spaces (see the module
    docstring); None for other texts, which are measured in words."""
    if text.isascii() or not _ANY_SCRIPT.search(text):
        return None
    counts = {name: len(pattern.findall(text)) for name, pattern in _SCRIPT_RES.items()}
    if sum(counts.values()) < sum(map(str.isalpha, _ANY_SCRIPT.sub("", text))):
        return None                     # mostly words between spaces, with a few such characters
    cjk = sum(counts[name] for name in _CJK)
    if cjk < sum(counts.values()) - cjk:
        code = max((name for name in counts if name not in _CJK), key=counts.__getitem__)
        return (code, 1.0) if counts[code] >= MIN_LETTERS else (UNKNOWN, 0.0)
    if cjk < MIN_CJK_CHARS:
        return UNKNOWN, 0.0
    if counts["ja"] and counts["ko"]:   # kana and Hangul together: py3langid decides
        return None
    if counts["ja"] or counts["ko"]:
        return ("ja" if counts["ja"] else "ko"), 1.0
    ranks = dict(_identifier().rank(text))      # Han only: Chinese, or Japanese written in kanji
    zh, ja = ranks.get("zh", 0.0), ranks.get("ja", 0.0)
    p_ja = ja / (zh + ja) if zh + ja > 0 else 0.0
    return ("ja", p_ja) if p_ja >= PAIR_CONFIDENCE else ("zh", max(1.0 - p_ja, MIN_CONFIDENCE))


@functools.lru_cache(maxsize=65_536)
def _guess(text: str) -> tuple[str, float]:
    """(ISO 639 code, confidence) of `text`'s language; ("unknown", 0) for too short a text.
    Cached: a run's notes (`run_languages`) and its per-pair languages (`pair_languages`) ask
    about the same texts."""
    text = str(text)[:TEXT_CHARACTERS].strip()
    scripted = _by_script(text)
    if scripted is not None:
        return scripted
    if len(text.split()) < MIN_WORDS or sum(map(str.isalpha, text)) < MIN_LETTERS:
        return UNKNOWN, 0.0
    code, confidence = _identifier().classify(text)
    return (UNKNOWN, 0.0) if code in NO_LANGUAGE else (code, float(confidence))


def detect_language(text: str, min_confidence: float = MIN_CONFIDENCE) -> str:
    """ISO 639 code of `text`'s language, or "unknown" when it is too short or the guess is
    less sure than `min_confidence`."""
    code, confidence = _guess(text)
    return code if confidence >= min_confidence else UNKNOWN


def detect_languages(texts, min_confidence: float = MIN_CONFIDENCE) -> list[str]:
    """`detect_language` of each text (each distinct text is detected once)."""
    seen: dict[str, tuple[str, float]] = {}
    guesses = [seen[t] if t in seen else seen.setdefault(t, _guess(t)) for t in texts]
    return [code if confidence >= min_confidence else UNKNOWN for code, confidence in guesses]


def _sample(n: int, limit: int) -> np.ndarray:
    """Evenly spaced positions of at most `limit` of `n` items (all of them when n <= limit)."""
    return np.arange(n) if n <= limit else np.linspace(0, n - 1, limit).astype(np.int64)


def summarise(languages) -> dict:
    """Provenance entry of detected `languages`: counts and shares among the detected ones.

    ``{"detector", "texts", "unknown", "shares"}``; shares (rounded to 3 decimals, at least
    0.001) are sorted from the largest.
    """
    counts = Counter(str(code) for code in languages)
    total, unknown = sum(counts.values()), counts.pop(UNKNOWN, 0)
    known = total - unknown
    shares = {c: round(n / known, 3) for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
              if n / known >= 0.001}
    return {"detector": detector_name(), "texts": total, "unknown": unknown, "shares": shares}


def summarise_texts(texts, *, limit: int = MAX_TEXTS) -> dict:
    """`summarise` of the languages of `texts` (distinct; an even sample of `limit` beyond that)."""
    texts = list(dict.fromkeys(texts))
    entry = summarise(detect_languages([texts[i] for i in _sample(len(texts), limit)]))
    if len(texts) > limit:
        entry["sampled_from"] = len(texts)
    return entry


def _shares(entry) -> dict[str, float] | None:
    """The shares of a `summarise` entry read from a (user-supplied) provenance; None if absent
    or malformed."""
    shares = entry.get("shares") if isinstance(entry, dict) else None
    if not isinstance(shares, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and math.isfinite(v) for k, v in shares.items()):
        return None
    return {k: float(v) for k, v in shares.items()}


def profile_languages(provenance: dict) -> dict[str, float] | None:
    """Shares of the languages of a profile's background, from its provenance (merged profiles:
    the larger share of each part); None when the profile does not record them."""
    if not isinstance(provenance, dict):
        return None
    shares = _shares((provenance.get("background") or {}).get("languages")
                     if isinstance(provenance.get("background"), dict) else None)
    if shares is not None:
        return shares
    parts = [profile_languages(p) for p in provenance.get("merged_from") or [] if isinstance(p, dict)]
    if not parts or any(p is None for p in parts):
        return None
    return {code: max(p.get(code, 0.0) for p in parts) for p in parts for code in p}


def describe(shares: dict[str, float] | None, *, top: int = 3) -> str:
    """``"en 99.5 %"``-style short label of language shares ("not recorded" for None)."""
    if shares is None:
        return "not recorded"
    if not shares:
        return "not detected (texts too short or unsure)"
    main = [kv for kv in sorted(shares.items(), key=lambda kv: -kv[1])[:top] if kv[1] >= 0.01]
    return ", ".join(f"{code} {share * 100:.3g} %" for code, share in main) or "mixed (none above 1 %)"


def model_languages(folder) -> tuple[str, ...] | None:
    """Languages a model folder's card (README.md front matter, ``language:``) declares; None
    when it declares none (or the folder has no card). "multilingual" is kept as a code."""
    path = Path(folder) / "README.md"
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(65536)
    except OSError:
        return None
    lines = head.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    found: list[str] = []
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            break
        key, _, value = line.partition(":")
        if key.strip() != "language" or line.startswith((" ", "\t")):
            continue
        value = value.strip().strip("[]")
        if value:
            found += [v.strip(" '\"") for v in value.split(",")]
        for item in lines[i + 1:]:
            if not item.lstrip().startswith("- "):
                break
            found.append(item.strip()[2:].strip(" '\""))
        break
    codes = tuple(dict.fromkeys(c.lower() for c in found if c))
    return codes or None


def run_languages(texts, profile_provenance: dict, *, model_folder=None, pairs=None,
                  limit: int = MAX_TEXTS) -> tuple[dict, list[str]]:
    """Provenance entry ``languages`` and the notes of a run over distinct `texts`.

    Parameters
    ----------
    texts : list of str
        The run's distinct texts.
    profile_provenance : dict
        The reference's provenance (its background's languages, when recorded).
    model_folder : path or None
        The model's folder, whose card may declare its languages.
    pairs : (first, second, numbers) or None
        For pair runs: positions in `texts` of each pair's texts and the pairs' 0-based numbers
        in the input file; pairs whose two texts are in different detected languages are noted.
    """
    texts = list(texts)
    picked = _sample(len(texts), limit)
    detected = np.full(len(texts), UNKNOWN, dtype=object)
    sure = detected.copy()
    try:
        guesses = [_guess(texts[i]) for i in picked]
    except (RuntimeError, OSError, ValueError) as exc:     # no detector: the run goes on without
        return {"error": str(exc)}, [f"the texts' languages were not checked ({exc})"]
    detected[picked] = [code if p >= MIN_CONFIDENCE else UNKNOWN for code, p in guesses]
    sure[picked] = [code if p >= PAIR_CONFIDENCE else UNKNOWN for code, p in guesses]
    summary = summarise(detected[picked])
    if len(texts) > limit:
        summary["sampled_from"] = len(texts)
    reference = profile_languages(profile_provenance)
    model = model_languages(model_folder) if model_folder is not None else None
    entry = {"texts": summary, "reference": reference, "model": list(model) if model else None}
    notes = []
    known = summary["texts"] - summary["unknown"]
    covered = {c for c, s in (reference or {}).items() if s >= COVERED_SHARE}
    model_covers = model is None or "multilingual" in model
    for code, share in summary["shares"].items():
        if share < NOTE_SHARE or round(share * known) < 2:
            continue
        of_all = share * known / summary["texts"]
        in_model = model_covers or code in model
        if covered and code not in covered:
            main = ", ".join(_named(c) for c in sorted(covered, key=lambda c: -reference[c]))
            names = " and ".join(language_name(c) for c in sorted(covered, key=lambda c: -reference[c]))
            notes.append(
                f"{_percent(of_all)} of the texts are {_named(code)}; the reference background is "
                f"{main}: percentiles and z-scores compare them with {names} pairs"
                + (f" (calibrated scores take their unrelated end from calibsim's {language_name(code)} "
                   "reference sentences)" if code in REFERENCE_LANGUAGES else
                   ", and so do calibrated scores") + ". Fix: "
                f"build a reference from {language_name(code)} sentences with `calibsim profile "
                f"build --background {code}.txt`" + ("" if model is not None and in_model
                                                     else ", and use a multilingual model"))
        if not in_model:
            notes.append(f"the model's card declares {', '.join(_named(c) for c in model)} only, and "
                         f"{_percent(of_all)} of the texts are {_named(code)}: their embeddings are "
                         "unreliable. Fix: use a multilingual model (--model FOLDER)")
    if pairs is not None:
        first, second, numbers = (np.asarray(x) for x in pairs)
        seen = np.zeros(len(texts), dtype=bool)
        seen[picked] = True
        a, b = sure[first], sure[second]
        cross = np.flatnonzero(seen[first] & seen[second] & (a != UNKNOWN) & (b != UNKNOWN) & (a != b))
        entry["cross_language_pairs"] = len(cross)
        if len(cross):
            shown = ", ".join(str(int(n) + 1) for n in numbers[cross][:10])
            more = ", …" if len(cross) > 10 else ""
            notes.append(
                f"{len(cross):,} {'pair pairs' if len(cross) == 1 else 'pairs pair'} texts of "
                f"different languages (pair{'s' if len(cross) > 1 else ''} {shown}{more}): "
                + ("a model made for one language scores a text and its translation as unrelated. "
                   "Fix: use a multilingual model (--model FOLDER)" if not (model and in_multilingual(model))
                   else "check that the model was trained on both languages"))
    return entry, notes


def file_language(texts, *, limit: int = FILE_SAMPLE) -> str:
    """The language of a set of texts read as one document (an even sample of `limit` of them):
    short texts that say little alone say enough together; "" when still unsure."""
    texts = list(texts)
    joined = "\n".join(str(texts[i])[:FILE_CHARACTERS] for i in _sample(len(texts), limit))[:FILE_CHARACTERS]
    code, confidence = _guess.__wrapped__(joined)
    return code if code != UNKNOWN and confidence >= MIN_CONFIDENCE else ""


def pair_languages(texts, first, second, *, limit: int = MAX_TEXTS) -> tuple[np.ndarray, dict]:
    """The language of each pair, by the file first, then by the text.

    A text takes its detected language when that is the file's (`file_language`) or when the
    detector is at least `SURE` of it; any other text (short, unsure, unreadable, or past `limit`
    texts, which are sampled evenly) takes the language of the other text of a pair it is in, if
    that one's is detected so, else the file's. A pair whose texts end up in one language gets
    it; else "" (the main end).

    `texts` are distinct texts; `first`, `second` the positions of each pair's texts.

    Returns
    -------
    languages : ndarray of object of shape (n_pairs,)
    assigned : dict
        The file's language and how many texts were assigned by each rule: ``detected``,
        ``from_pair``, ``from_file``, ``none`` (no language found for the file either).
    """
    texts, first, second = list(texts), np.asarray(first, dtype=int), np.asarray(second, dtype=int)
    picked = _sample(len(texts), limit)
    try:
        main = file_language(texts)
        guesses = [_guess(texts[i]) for i in picked]
    except (RuntimeError, OSError, ValueError):          # no detector: every pair gets the main end
        return np.full(len(first), "", dtype=object), {"error": "no language detector"}
    own = np.full(len(texts), "", dtype=object)
    own[picked] = [code if code != UNKNOWN and (p >= SURE or (code == main and p >= MIN_CONFIDENCE)) else ""
                   for code, p in guesses]
    language, rule = own.copy(), np.where(own != "", "detected", "none").astype(object)
    for mine, other in ((first, second), (second, first)):   # an unsure text takes its partner's
        take = (language[mine] == "") & (own[other] != "")
        language[mine[take]], rule[mine[take]] = own[other[take]], "from_pair"
    rest = language == ""
    language[rest], rule[rest] = main, "from_file" if main else "none"
    assigned = {"file": main or None, **{r: int((rule == r).sum()) for r in ("detected", "from_pair", "from_file", "none")}}
    a, b = language[first], language[second]
    return np.where(a == b, a, ""), assigned


def assigned_note(assigned: dict) -> list[str]:
    """The note on texts whose language came from their pair or their file (`pair_languages`),
    when the file is not English (in an English file they get the main end, as they always did)."""
    main, moved = assigned.get("file"), assigned.get("from_pair", 0) + assigned.get("from_file", 0)
    if not moved or main in (None, "en"):
        return []
    return [f"{moved:,} texts are too short or too unsure for a language of their own: "
            f"{assigned['from_pair']:,} took the language of the other text of their pair, "
            f"{assigned['from_file']:,} the file's ({_named(main)}); {assigned['detected']:,} were detected"]


def in_multilingual(model) -> bool:
    """True when a model card's languages say the model is multilingual (or list several)."""
    return "multilingual" in model or len(model) > 1
