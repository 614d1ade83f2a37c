"""Vectors from any model: texts and their vectors read from files, served as an embedder.

A user writes the texts a run needs (`calibsim reference-texts`), embeds them with any model and
hands calibsim the vectors: a ``.npz`` holding the arrays ``texts`` (strings) and ``vectors``
(floats, one row per text), or a ``.npy`` of vectors row-aligned with the texts file of the same
name beside it (``texts.txt`` or ``texts.jsonl``). Nothing is unpickled; shapes, dtypes and sizes
are checked from the files' headers before anything large is read.

`VectorsEmbedder` answers what the engines answer (fingerprint, dimension, `encode_batch`,
`token_counts`); it has no tokenizer, so it marks no text as truncated and cannot split long
texts into chunks. Its identity is a digest of the vectors of calibsim's English reference
sentences, which every vectors file must hold: two models never share a profile or a cache entry.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding.model_folders import ModelFingerprint, ModelInfo
from calibsim_gui.core.embedding.prompts import PromptedEmbedder, PromptSettings
from calibsim_gui.core.errors import InputError, ModelError
from calibsim_gui.core.io.atomic import write_text_atomic
from calibsim_gui.core.io.memory import check_budget
from calibsim_gui.core.io.tables import read_text_file
from calibsim_gui.core.references.reference_scale import reference_sentences

VECTORS_NAME = "vectors"
"""The model name of every vectors embedder (its digest tells them apart)."""
TEXTS_SUFFIXES = (".txt", ".jsonl")
MAX_DIMENSION = 65_536
EMBED_FIX = ("run `calibsim reference-texts --out texts.txt` (add --pairs/--documents with your files "
             "to include their texts), embed every line with your model, and save the vectors beside "
             "it as texts.npy (numpy.save), or both as one .npz (numpy.savez(FILE, texts=..., vectors=...))")


def write_texts(path, texts) -> Path:
    """Write `texts` atomically: ``.txt`` one per line (refused for a text holding a line break)
    or ``.jsonl`` one JSON string per line."""
    path = Path(path)
    texts = [str(t) for t in texts]
    if path.suffix.lower() == ".jsonl":
        write_text_atomic(path, "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts))
        return path
    if path.suffix.lower() != ".txt":
        raise InputError("a texts file is .txt (one text per line) or .jsonl (one JSON string per line).",
                         path=path, fix="end the name with .txt or .jsonl")
    broken = next((t for t in texts if "\n" in t or "\r" in t), None)
    if broken is not None:
        raise InputError(f"the text {broken[:60]!r}... holds a line break, which a .txt file of one "
                         "text per line cannot keep.", path=path, fix="write a .jsonl file instead")
    write_text_atomic(path, "".join(t + "\n" for t in texts))
    return path


def read_texts(path) -> list[str]:
    """The texts of a file `write_texts` wrote (.txt: one per line; .jsonl: one JSON string per line)."""
    path = Path(path)
    text = read_text_file(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if path.suffix.lower() != ".jsonl":
        return lines
    texts = []
    for number, line in enumerate(lines, start=1):
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        if not isinstance(value, str):
            raise InputError("is not a JSON string.", path=path, line=number,
                             fix="write one JSON string per line, e.g. \"a text\"")
        texts.append(value)
    return texts


def _array_header(stream, path: Path, what: str) -> tuple[tuple[int, ...], np.dtype, int]:
    """Shape, dtype and header size of the ``.npy`` array at the start of `stream`, from its header."""
    try:
        version = np.lib.format.read_magic(stream)
        read = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f"npy format version {version}")
        shape, _, dtype = read(stream)
    except ValueError as exc:
        raise InputError(f"its {what} are not a numpy array calibsim reads ({exc}).", path=path,
                         fix="save them with numpy.save or numpy.savez") from None
    return shape, np.dtype(dtype), stream.tell()


def _check_vectors_header(shape, dtype: np.dtype, path: Path) -> int:
    """Refuse vectors that are not a 2-D float array of a sane dimension; the bytes they take as read
    and as float32."""
    if dtype.kind != "f" or dtype.fields is not None or len(shape) != 2:
        raise InputError(f"holds an array of {dtype} with shape {shape}, not vectors: a 2-D array of "
                         "floats, one row per text.", path=path, fix=EMBED_FIX)
    if not 1 <= shape[1] <= MAX_DIMENSION:
        raise InputError(f"its vectors have {shape[1]:,} dimensions; calibsim reads 1 to {MAX_DIMENSION:,}.",
                         path=path, fix=EMBED_FIX)
    return int(shape[0]) * int(shape[1]) * (dtype.itemsize + 4)


def _read_npy(path: Path, memory_budget) -> np.ndarray:
    with open(path, "rb") as stream:
        shape, dtype, offset = _array_header(stream, path, "vectors")
    needed = _check_vectors_header(shape, dtype, path)
    if path.stat().st_size < offset + int(np.prod(shape)) * dtype.itemsize:
        raise InputError("is shorter than its header says (cut off?).", path=path, fix="save the vectors again")
    check_budget(needed, memory_budget, what=f"{shape[0]:,} vectors of {shape[1]:,} dimensions",
                 fix="embed fewer texts per file", path=path)
    return np.array(np.load(path, mmap_mode="r", allow_pickle=False), dtype=np.float32)


def _read_npz(path: Path, memory_budget) -> tuple[list[str], np.ndarray]:
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info for info in archive.infolist()}
            if {"texts.npy", "vectors.npy"} - set(members):
                raise InputError(f"holds {', '.join(sorted(members)) or 'nothing'}, not the arrays texts and "
                                 "vectors.", path=path, fix=EMBED_FIX)
            headers = {}
            for name in ("texts", "vectors"):
                with archive.open(members[f"{name}.npy"]) as stream:
                    headers[name] = _array_header(stream, path, name)
    except zipfile.BadZipFile:
        raise InputError("is not a .npz archive.", path=path, fix=EMBED_FIX) from None
    (text_shape, text_dtype, _), (shape, dtype, _) = headers["texts"], headers["vectors"]
    needed = _check_vectors_header(shape, dtype, path)
    if text_dtype.kind != "U" or len(text_shape) != 1:
        raise InputError(f"its texts are an array of {text_dtype} with shape {text_shape}, not a 1-D array "
                         "of strings.", path=path, fix="save them as numpy.array(list_of_texts)")
    # the texts as read, then as Python strings (at most about as large again)
    needed += 2 * int(np.prod(text_shape)) * text_dtype.itemsize
    check_budget(needed, memory_budget, what=f"{shape[0]:,} vectors of {shape[1]:,} dimensions and their texts",
                 fix="embed fewer texts per file", path=path)
    with np.load(path, allow_pickle=False) as arrays:
        return [str(t) for t in arrays["texts"]], np.asarray(arrays["vectors"], dtype=np.float32)


def texts_beside(path) -> Path:
    """The texts file of a ``.npy`` of vectors: the same name ending in .txt or .jsonl."""
    path = Path(path)
    found = [path.with_suffix(s) for s in TEXTS_SUFFIXES if path.with_suffix(s).is_file()]
    if len(found) != 1:
        raise InputError(f"a .npy holds vectors only; their texts are read from {path.with_suffix('.txt').name} "
                         f"or {path.with_suffix('.jsonl').name} beside it, and "
                         + ("neither exists." if not found else "both exist."), path=path,
                         fix="keep exactly one texts file of that name beside the vectors, or save both in "
                             "one .npz (numpy.savez(FILE, texts=..., vectors=...))")
    return found[0]


def read_vectors_file(path, *, memory_budget: int | None = None) -> tuple[list[str], np.ndarray]:
    """Texts and their float32 vectors, row-aligned, from a ``.npz`` or a ``.npy`` (see the module).

    Raises
    ------
    InputError
        Naming the file, when it is missing, of another kind, not a 2-D float array, holds NaN or
        infinity, has a row count other than its texts', or is over `memory_budget`.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("does not exist.", path=path, fix="check the path of --vectors")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        texts, vectors = _read_npz(path, memory_budget)
    elif suffix == ".npy":
        source = texts_beside(path)
        vectors, texts = _read_npy(path, memory_budget), read_texts(source)
    else:
        raise InputError("is not a vectors file (.npz, or .npy with a texts file beside it).", path=path,
                         fix=EMBED_FIX)
    if len(texts) != len(vectors):
        raise InputError(f"holds {len(vectors):,} vectors for {len(texts):,} texts.", path=path,
                         fix="give one vector per text, in the texts' order")
    if not np.isfinite(vectors).all():
        row = int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])
        raise InputError(f"the vector of text {row + 1} ({texts[row][:60]!r}) holds NaN or infinity.",
                         path=path, fix="embed that text again")
    return texts, vectors


class VectorsEmbedder(PromptedEmbedder):
    """Vectors read from files, served as a model: `encode_batch` looks texts up.

    Attributes
    ----------
    fingerprint : ModelFingerprint
        ``vectors@<digest>``: the sha256 of the English reference sentences' vectors.
    files : tuple of Path
    dimension : int
    max_seq_length : None
        No tokenizer: no text is marked as truncated.
    """

    engine = "vectors"
    precision = "float32"
    device = "cpu"

    def __init__(self, texts, vectors: np.ndarray, files=()):
        self.files = tuple(Path(f) for f in files)
        self.prompts = PromptSettings()
        self._vectors = np.array(vectors, dtype=np.float32, order="C")
        self._rows: dict[str, int] = {}
        for row, text in enumerate(texts):
            first = self._rows.setdefault(text, row)
            if first != row and not np.array_equal(self._vectors[first], self._vectors[row]):
                raise InputError(f"the text {text[:60]!r} has two different vectors.", path=self._where,
                                 fix="give each text one vector (embed it once)")
        self.dimension = int(self._vectors.shape[1])
        self.max_seq_length = None
        missing = self.missing(reference_sentences("en"))
        if missing:
            raise self._missing_error(missing, why="the English reference sentences are a vectors model's "
                                                   "identity and the unrelated end of every scale")
        digest = hashlib.sha256(f"calibsim-vectors-1 {self.dimension}".encode())
        for text in reference_sentences("en"):
            digest.update(self._vectors[self._rows[text]].astype("<f4").tobytes())
        self.fingerprint = ModelFingerprint(VECTORS_NAME, digest.hexdigest())
        self.precision_note = "float32 (vectors read from " + ", ".join(f.name for f in self.files) + ")"
        self.info = ModelInfo(name=VECTORS_NAME, path=self.files[0] if self.files else Path(VECTORS_NAME),
                              source="vectors file", dimension=self.dimension, max_seq_length=None,
                              size_bytes=int(self._vectors.nbytes), safe_weights=True, needs_remote_code=False)

    @property
    def _where(self) -> str:
        return ", ".join(map(str, self.files)) or "the vectors"

    @property
    def texts(self) -> list[str]:
        """The texts that have a vector."""
        return list(self._rows)

    def missing(self, texts) -> list[str]:
        """The distinct `texts` without a vector, in order."""
        return [t for t in dict.fromkeys(map(str, texts)) if t not in self._rows]

    def _missing_error(self, missing, *, why: str = "") -> InputError:
        shown = "; ".join(repr(t[:60]) for t in missing[:3]) + ("; ..." if len(missing) > 3 else "")
        return InputError(f"{len(missing):,} texts the run needs have no vector ({shown})"
                          + (f": {why}." if why else "."), path=self._where, fix=EMBED_FIX)

    def encode_batch(self, texts, prompt: str = "") -> np.ndarray:
        """The vectors of `texts`; a prompt cannot be applied to vectors made elsewhere."""
        if prompt:
            raise ModelError("Vectors read from files cannot take a prompt. Fix: embed the texts with the "
                             "prompt yourself, and leave out the prompt options.")
        missing = self.missing(texts)
        if missing:
            raise self._missing_error(missing)
        return self._vectors[[self._rows[t] for t in texts]]

    def token_counts(self, texts) -> np.ndarray:
        """No tokenizer: every text counts as one token. Refuses, before any work, texts without a
        vector (`encode_texts` asks this of every text it is about to encode)."""
        missing = self.missing(texts)
        if missing:
            raise self._missing_error(missing)
        return np.ones(len(texts), dtype=np.int64)

    def token_spans(self, texts):
        raise ModelError("Vectors read from files have no tokenizer, so long texts cannot be split into "
                         "chunks. Fix: score with --long-texts truncate (the default), or embed the chunks "
                         "yourself.")


def load_vectors(paths, *, memory_budget: int | None = None) -> VectorsEmbedder:
    """A `VectorsEmbedder` of the texts and vectors of every file of `paths` (one path or several).

    Raises
    ------
    InputError
        When a file is refused (`read_vectors_file`), the files' dimensions differ, a text has two
        different vectors, or the English reference sentences have none.
    """
    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if not paths:
        raise InputError("no vectors file given.", fix=EMBED_FIX)
    texts, blocks = [], []
    for path in paths:
        file_texts, vectors = read_vectors_file(path, memory_budget=memory_budget)
        if blocks and vectors.shape[1] != blocks[0].shape[1]:
            raise InputError(f"its vectors have {vectors.shape[1]} dimensions, those of {paths[0]} "
                             f"{blocks[0].shape[1]}: they come from different models.", path=path,
                             fix="give the vectors of one model")
        texts += file_texts
        blocks.append(vectors)
    return VectorsEmbedder(texts, np.concatenate(blocks) if len(blocks) > 1 else blocks[0], paths)
