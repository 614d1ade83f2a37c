"""Every text a reference profile encodes, for people who embed with a model calibsim cannot run
(`calibsim reference-texts`; the vectors come back through `core.embedding.vectors_file`)."""

from __future__ import annotations

from calibsim_gui.core.references.anchors import AnchorSet, builtin_anchors
from calibsim_gui.core.references.reference_scale import REFERENCE_LANGUAGES, reference_sentences


def anchor_texts(anchors: AnchorSet) -> list[str]:
    """The texts of a ladder's pairs: every first text, then every second text."""
    return [p.text_a for p in anchors.pairs] + [p.text_b for p in anchors.pairs]


def reference_texts(anchors=(), languages=REFERENCE_LANGUAGES) -> list[str]:
    """The distinct texts every profile needs vectors for, in a fixed order: the English reference
    sentences (the unrelated end of the scale and a vectors model's identity), the built-in ladder
    and each of `anchors` (`AnchorSet`; their texts with themselves are the identical end too), then
    the reference sentences of each of `languages` (codes of `REFERENCE_LANGUAGES`)."""
    texts = reference_sentences("en")
    for ladder in (builtin_anchors(), *anchors):
        texts += anchor_texts(ladder)
    for code in languages:
        texts += reference_sentences(code)
    return list(dict.fromkeys(texts))


def texts_to_embed(anchors=(), pair_tables=(), document_sets=()) -> list[str]:
    """`reference_texts` (with `anchors`), then both texts of every pair of `pair_tables`
    (`PairTable`s; pairs with an empty text left out) and the texts of `document_sets`, each once."""
    texts = reference_texts(anchors)
    for table in pair_tables:
        usable = table.frame.drop(index=list(table.empty_rows))
        texts += [*usable[table.text_a], *usable[table.text_b]]
    for documents in document_sets:
        texts += documents.texts
    return list(dict.fromkeys(texts))
