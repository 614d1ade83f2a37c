"""HTML leftovers in corpora: find them (tags, entities, entities that lost their "&") and clean
them off before a background is built.

News corpora scraped from the web (AG News, for one) keep markup such as ``&lt;b&gt;``, ``<b>``,
``&#39;`` or a bare ``quot;``; embedded as text they make unrelated sentences look alike.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field, replace

KINDS = ("tags", "escaped tags", "entities", "bare entities")
_PATTERNS = {
    "tags": re.compile(r"</?[A-Za-z][A-Za-z0-9]{0,15}(?:\s[^<>]{0,200})?/?>"),
    "escaped tags": re.compile(r"&(?:amp;)?lt;/?[A-Za-z][^&]{0,200}?&(?:amp;)?gt;", re.IGNORECASE),
    "entities": re.compile(r"&(?:[A-Za-z]{2,8}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});"),
    "bare entities": re.compile(r"(?<![&\w])(?:quot|amp|lt|gt|nbsp|apos|#[0-9]{1,7});"),
}
_BARE = _PATTERNS["bare entities"]
_TAG = _PATTERNS["tags"]
_SPACES = re.compile(r"\s+")
CLEANED_NOTE = "cleaned HTML leftovers"
"""How the note of a `clean_documents` set begins: it says the set was cleaned."""


@dataclass(frozen=True)
class HtmlLeftovers:
    """How many texts hold each kind of HTML leftover, with a few examples."""

    n_texts: int                                   # texts with at least one leftover
    counts: dict = field(default_factory=dict)     # kind -> number of texts holding it
    examples: tuple[str, ...] = ()                 # a few of the leftovers found, as written

    def __bool__(self) -> bool:
        return self.n_texts > 0

    def describe(self) -> str:
        """One sentence in plain words ("" when there is nothing to say)."""
        if not self.n_texts:
            return ""
        kinds = ", ".join(f"{kind} in {n:,}" for kind, n in self.counts.items() if n)
        shown = " ".join(dict.fromkeys(self.examples))
        return (f"{self.n_texts:,} {'text holds' if self.n_texts == 1 else 'texts hold'} HTML "
                f"leftovers ({kinds}), e.g. {shown}")


def find_html_leftovers(texts, *, max_examples: int = 6) -> HtmlLeftovers:
    """Count the texts holding HTML tags, escaped tags, entities or entities missing their "&"."""
    counts, examples, n_texts = Counter(), [], 0
    for text in texts:
        hit = False
        for kind, pattern in _PATTERNS.items():
            match = pattern.search(text)
            if match:
                counts[kind] += 1
                hit = True
                if len(examples) < max_examples and match.group(0) not in examples:
                    examples.append(match.group(0)[:30])
        n_texts += hit
    return HtmlLeftovers(n_texts, {kind: counts[kind] for kind in KINDS if counts[kind]},
                         tuple(examples))


def clean_html(text: str) -> str:
    """`text` with entities decoded (also those that lost their "&", and doubly escaped ones),
    tags removed and runs of white space made one space."""
    for _ in range(3):                      # "&amp;lt;b&amp;gt;" -> "&lt;b&gt;" -> "<b>"
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    text = html.unescape(_BARE.sub(lambda m: "&" + m.group(0), text))    # "quot;" -> '"'
    return _SPACES.sub(" ", _TAG.sub(" ", text)).strip()


def clean_documents(documents):
    """A `DocumentSet` whose texts are `clean_html`-ed; texts left empty or duplicated by the
    cleaning are dropped and counted, and a note says what was done."""
    kept, seen, emptied, duplicated, changed = [], set(), 0, 0, 0
    for doc in documents.documents:
        text = clean_html(doc.text)
        changed += text != doc.text
        if not text:
            emptied += 1
        elif text in seen:
            duplicated += 1
        else:
            seen.add(text)
            kept.append(replace(doc, text=text) if text != doc.text else doc)
    note = (f"{CLEANED_NOTE} from {changed:,} texts"
            + (f", dropping {emptied:,} left empty" if emptied else "")
            + (f" and {duplicated:,} now duplicates" if duplicated else ""))
    return replace(documents, documents=tuple(kept), n_empty=documents.n_empty + emptied,
                   n_duplicates=documents.n_duplicates + duplicated,
                   notes=tuple(documents.notes) + (note,))
