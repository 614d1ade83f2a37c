"""Checks of a model folder's tokenizer and configs before either engine loads it.

A tokenizer that yields ids beyond the model's vocabulary, or a ``max_seq_length`` beyond the
model's position embeddings, would end in an index error deep inside torch or ONNX Runtime on
some texts only; here it is a message naming the file, before anything is loaded.
"""

from __future__ import annotations

from pathlib import Path

from calibsim_gui.core.embedding import passed_checks
from calibsim_gui.core.embedding.file_digests import file_sha256s
from calibsim_gui.core.embedding.model_folders import (
    ModelInfo,
    fingerprint_entries,
    int_or_none,
    json_dict,
    read_json,
    transformer_folder,
)
from calibsim_gui.core.errors import ModelError

FOLDER_CHECK = "model-folder"
"""`passed_checks` kind of a transformer folder whose `CHECKED_FILES` passed `check_model_folder`."""
CHECKED_FILES = ("config.json", "sentence_bert_config.json", "tokenizer.json", "vocab.txt", "added_tokens.json")
"""What `check_model_folder` reads in the transformer folder (its outcome depends on nothing else)."""


def check_model_folder(info: ModelInfo) -> None:
    """Refuse `info`'s folder when its tokenizer or ``max_seq_length`` does not fit its model config.

    Files that passed are not checked again while their bytes are the same (`passed_checks`,
    keyed by their digests): reading the tokenizer's ids costs ~0.07 s.

    Raises
    ------
    ModelError
        When the tokenizer can produce an id at or beyond ``vocab_size`` of config.json, or
        ``max_seq_length`` (sentence_bert_config.json) is not a positive whole number within
        ``max_position_embeddings``; the message names the file and the fix.
    """
    folder = transformer_folder(Path(info.path))
    present = [name for name in CHECKED_FILES if (folder / name).is_file()]
    try:
        digests = file_sha256s([folder / name for name in present])
        digest = fingerprint_entries(zip(present, digests, strict=True))
    except OSError:
        digest = None                          # the checks name the file they cannot read
    if digest and passed_checks.recorded(FOLDER_CHECK, digest) is not None:
        return
    _check_folder(folder)
    if digest:
        passed_checks.remember(FOLDER_CHECK, digest, {})


def _check_folder(folder: Path) -> None:
    config = json_dict(folder / "config.json")
    _check_max_seq_length(folder, config)
    vocab = int_or_none(config.get("vocab_size"))
    if vocab is None or vocab <= 0:
        return
    _check_type_ids(folder, config)
    highest, where = tokenizer_max_id(folder)
    if highest is not None and highest >= vocab:
        raise ModelError(f"{where} gives token id {highest:,}, but the model in {folder / 'config.json'} has "
                         f"{vocab:,} token embeddings (vocab_size), so texts with that token could not be "
                         "encoded. Fix: use the tokenizer files that came with the model's weights.")


def _check_max_seq_length(folder: Path, config: dict) -> None:
    path = folder / "sentence_bert_config.json"
    value = json_dict(path).get("max_seq_length")
    if value is None:
        return
    positions = int_or_none(config.get("max_position_embeddings"))
    if int_or_none(value) is None or value <= 0:
        raise ModelError(f"{path}: max_seq_length {value!r} is not a positive whole number. "
                         f"Fix: set it to the model's length{f' (at most {positions})' if positions else ''}.")
    if positions is not None and value > positions:
        raise ModelError(f"{path}: max_seq_length {value:,} is more than the {positions:,} positions the model has "
                         f"(max_position_embeddings in {folder / 'config.json'}), so long texts could not be "
                         f"encoded. Fix: set max_seq_length to at most {positions}.")


def _check_type_ids(folder: Path, config: dict) -> None:
    """Token type ids of the post-processor and padding within ``type_vocab_size``."""
    types = int_or_none(config.get("type_vocab_size"))
    data = read_json(folder / "tokenizer.json")
    if types is None or not isinstance(data, dict):
        return
    used = _ids(data.get("post_processor"), "type_id") + _ids(data.get("padding"), "pad_type_id")
    if used and max(used) >= types:
        raise ModelError(f"{folder / 'tokenizer.json'} gives token type id {max(used)}, but the model in "
                         f"{folder / 'config.json'} has {types} (type_vocab_size). Fix: use the tokenizer "
                         "files that came with the model's weights.")


def tokenizer_max_id(folder: Path) -> tuple[int | None, Path | None]:
    """The highest token id the folder's tokenizer can give (vocabulary, added and special
    tokens, the post-processor's and the padding's ids) and the file it comes from; (None, None)
    without tokenizer files."""
    path = folder / "tokenizer.json"
    data = read_json(path)
    if isinstance(data, dict):
        ids = _ids(data.get("added_tokens"), "id") + _ids(data.get("post_processor"), "ids")
        vocab = (data.get("model") or {}).get("vocab") if isinstance(data.get("model"), dict) else None
        if isinstance(vocab, dict):
            ids += [v for v in vocab.values() if int_or_none(v) is not None]
        elif isinstance(vocab, list):
            ids.append(len(vocab) - 1)
        padding = data.get("padding")
        if isinstance(padding, dict) and int_or_none(padding.get("pad_id")) is not None:
            ids.append(padding["pad_id"])
        return (max(ids), path) if ids else (None, None)
    vocab_txt = folder / "vocab.txt"
    if vocab_txt.is_file():
        with open(vocab_txt, "rb") as f:
            lines = sum(1 for _ in f)
        added = json_dict(folder / "added_tokens.json")
        ids = [lines - 1] + [v for v in added.values() if int_or_none(v) is not None]
        return max(ids), vocab_txt
    return None, None


def _ids(node, key: str) -> list[int]:
    """Every whole number under `key` in the nested JSON `node` (``"cls": ["[CLS]", 101]`` pairs
    of a BERT post-processor included)."""
    found: list[int] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for name, value in item.items():
                if name == key:
                    values = value if isinstance(value, list) else [value]
                    found += [v for v in values if int_or_none(v) is not None]
                elif name in ("cls", "sep") and isinstance(value, list) and len(value) == 2:
                    found += [v for v in value[1:] if int_or_none(v) is not None]
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return found
