"""SQLite cache of text embeddings, keyed by model (fingerprint id, engine, precision, prompt) and the text's sha256.

Each entry carries its vector's length and a checksum of the whole entry; an entry that fails
either, holds a number that is not finite, or has another dimension than asked is damaged: it is
dropped, its text encoded again, and a warning says so. It is never used.
"""

from __future__ import annotations

import collections
import hashlib
import math
import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding.cache_folder import default_cache_dir
from calibsim_gui.core.embedding.devices import embedder_engine, embedder_precision
from calibsim_gui.core.embedding.prompts import embedder_prompt
from calibsim_gui.core.errors import CalibsimError

_CHUNK = 900  # digests per query; stays under SQLite's oldest variable limit (999)
FULL_CHECK_UP_TO = 8 * 2**20
"""Caches up to this many bytes are checked whole when opened (``PRAGMA quick_check`` reads every
page: 4.3 s cold and 0.1 s warm for a 151 MB cache, paid by every run and, in the app, by the
window); a larger one is found damaged where a read or write meets the damage (`_failed`)."""
_DAMAGE = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    digest BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    norm REAL,
    checksum BLOB,
    PRIMARY KEY (model, digest)
)
"""
# Entries written before checksums existed have none: they are left unused, and replaced when
# their texts are encoded again.
_NEW_COLUMNS = {"norm": "REAL", "checksum": "BLOB"}


def cache_key(embedder, prompt: str | None = None) -> str:
    """The model key of `embedder`'s vectors: its fingerprint id, plus its engine unless torch,
    plus its precision unless float32 (and its ``quantisation`` recipe if it says one), plus a
    digest of the prompt unless there is none.

    Vectors of one model from different engines or precisions differ slightly, so they never
    share entries; neither do vectors of one text encoded with different prompts. torch float32
    without a prompt keeps the bare id that caches written before engines, precisions and prompts
    existed used. `prompt` defaults to the embedder's symmetric prompt (`embedder_prompt`).
    """
    engine = embedder_engine(embedder)
    precision = embedder_precision(embedder)
    prompt = embedder_prompt(embedder) if prompt is None else prompt
    key = embedder.fingerprint.id
    if engine != "torch":
        key += f"+{engine}"
    if precision != "float32":
        key += f"+{precision}"
    if getattr(embedder, "quantisation", ""):
        key += f"-{embedder.quantisation}"
    if prompt:
        key += "+prompt:" + hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return key


def entry_checksum(model_key: str, digest: bytes, dim: int, vector: bytes, norm: float) -> bytes:
    """sha256 (first 16 bytes) of everything an entry holds, so that no part of it can change alone."""
    return hashlib.sha256(b"\0".join([model_key.encode("utf-8", "surrogatepass"), digest, str(dim).encode(),
                                      repr(float(norm)).encode(), vector])).digest()[:16]


def entry_damage(model_key: str, digest: bytes, dim: int, blob: bytes, norm, checksum,
                 dimension: int | None = None) -> str | None:
    """Why a stored entry cannot be used ("checksum", "length", ...), or None when it is sound;
    "unchecked" for an entry written before checksums (not damaged, but not used either)."""
    if checksum is None:
        return "unchecked"
    if len(blob) != 4 * dim or (dimension is not None and dim != dimension):
        return "dimension"
    vector = np.frombuffer(blob, dtype=np.float32)
    if not np.isfinite(vector).all():
        return "not finite"
    if norm is None or entry_checksum(model_key, digest, dim, blob, norm) != checksum:
        return "checksum"
    if not math.isclose(_norm(vector), norm, rel_tol=1e-9, abs_tol=1e-12):
        return "length"
    return None


def _norm(vector: np.ndarray) -> float:
    return float(np.linalg.norm(vector.astype(np.float64)))


def text_digest(text: str) -> bytes:
    """sha256 (32 bytes) of the text's UTF-8 bytes (lone surrogates kept as-is)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _fix_for(exc: sqlite3.Error) -> str:
    """What to do about the database error `exc`, by its cause (only a full disk needs space)."""
    text = str(exc).lower()
    if "full" in text:
        return "free some disk space"
    if "readonly" in text or "read-only" in text or "permission" in text:
        return "make the cache file and its folder writable"
    if "locked" in text or "busy" in text:
        return "close the other program using the cache"
    return "check the drive the cache is on"


class EmbeddingCache:
    """Persistent store of float32 embeddings per (model key, text); see `cache_key`.

    A corrupt cache file is moved aside to ``<name>.corrupt-<timestamp>`` with a warning and
    replaced by an empty cache. If the database fails later (disk full, I/O error), the cache
    turns itself off for the rest of the session: lookups find nothing, stores keep nothing, a
    `RuntimeWarning` is issued and the text is kept in `warnings` for the app to show; the run
    goes on with embeddings computed by the model. A damaged entry (`entry_damage`) is found
    absent, deleted, and named in a warning. Each `store` is one transaction. Methods may
    be called from any thread, one call at a time (they share one lock).

    Parameters
    ----------
    path : str or Path, optional
        Database file; defaults to ``default_cache_dir() / "embeddings.sqlite"``.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_cache_dir() / "embeddings.sqlite"
        self._lock = threading.Lock()
        self.warnings: list[str] = []
        self.off = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._conn = self._connect()
            except sqlite3.OperationalError:
                raise
            except sqlite3.DatabaseError as exc:
                self._move_aside(str(exc))
                self._conn = self._connect()
        except (OSError, sqlite3.OperationalError) as exc:
            raise CalibsimError(
                f"Cannot open the embedding cache {self.path}: {exc}. "
                "Fix: make the folder writable or set CALIBSIM_CACHE_DIR to another folder."
            ) from exc

    def _connect(self) -> sqlite3.Connection:
        whole = not self.path.exists() or self.path.stat().st_size <= FULL_CHECK_UP_TO
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        try:
            result = conn.execute("PRAGMA quick_check").fetchone()[0] if whole else "ok"
            if result != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {result}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            with conn:
                conn.execute(_SCHEMA)
                have = {row[1] for row in conn.execute("PRAGMA table_info(embeddings)")}
                for column, kind in _NEW_COLUMNS.items():
                    if column not in have:
                        conn.execute(f"ALTER TABLE embeddings ADD COLUMN {column} {kind}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self, reason: str) -> None:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):  # a stale WAL must not be replayed into the new file
            src = Path(f"{self.path}{suffix}")
            if src.exists():
                os.replace(src, f"{aside}{suffix}")
        self._warn(f"The embedding cache {self.path} was corrupt ({reason}); it was moved to {aside} "
                   "and an empty cache was started. Embeddings will be recomputed.")

    def _warn(self, text: str) -> None:
        self.warnings.append(text)
        warnings.warn(text, RuntimeWarning, stacklevel=4)

    def _failed(self, exc: sqlite3.Error) -> None:
        """A read or write failed (called holding the lock): a damaged file is moved aside and an
        empty cache started, as at open; any other failure turns the cache off."""
        if getattr(exc, "sqlite_errorname", "") in _DAMAGE:
            try:
                self._conn.close()
                self._move_aside(str(exc))
                self._conn = self._connect()
                return
            except (OSError, sqlite3.Error) as again:
                exc = again
        self._turn_off(exc)

    def _turn_off(self, exc: sqlite3.Error) -> None:
        """Stop using the database after it failed (called holding the lock)."""
        self.off = True
        self._warn(f"The embedding cache {self.path} stopped working ({exc}); calibsim goes on "
                   f"without it, so texts are encoded again. Fix: {_fix_for(exc)}, or set "
                   "CALIBSIM_CACHE_DIR to a folder on another drive.")

    def lookup(self, model_key: str, texts: list[str], *, dimension: int | None = None) -> dict[str, np.ndarray]:
        """Cached vectors of those `texts` that are in the cache for this model.

        Parameters
        ----------
        model_key : str
            `cache_key` of the model.
        texts : list of str
        dimension : int, optional
            If given, vectors of another length are damaged (the key names one model).

        Returns
        -------
        dict
            text -> read-only ndarray of shape (dim,), float32, for the texts found.
        """
        by_digest: dict[bytes, list[str]] = {}
        for text in texts:
            by_digest.setdefault(text_digest(text), []).append(text)
        digests = list(by_digest)
        found: dict[str, np.ndarray] = {}
        with self._lock:
            try:
                rows = [] if self.off else self._select(model_key, digests)
            except sqlite3.Error as exc:
                self._failed(exc)
                return {}
            damaged: dict[bytes, str] = {}
            for digest, dim, blob, norm, checksum in rows:
                damage = entry_damage(model_key, digest, dim, blob, norm, checksum, dimension)
                if damage is None:
                    vector = np.frombuffer(blob, dtype=np.float32)
                    for text in by_digest[digest]:
                        found[text] = vector
                elif damage != "unchecked":
                    damaged[digest] = damage
            if damaged:
                self._drop(model_key, damaged)
        return found

    def _drop(self, model_key: str, damaged: dict[bytes, str]) -> None:
        """Delete damaged entries and say so (called holding the lock)."""
        try:
            with self._conn:
                self._conn.executemany("DELETE FROM embeddings WHERE model = ? AND digest = ?",
                                       [(model_key, digest) for digest in damaged])
        except sqlite3.Error as exc:
            self._failed(exc)
        kinds = ", ".join(f"{n} {kind}" for kind, n in
                          sorted(collections.Counter(damaged.values()).items()))
        self._warn(f"The embedding cache {self.path} held {len(damaged)} damaged vector"
                   f"{'s' if len(damaged) > 1 else ''} (checks failed: {kinds}); "
                   f"{'they were' if len(damaged) > 1 else 'it was'} dropped and the text"
                   f"{'s are' if len(damaged) > 1 else ' is'} encoded again. If this recurs, check "
                   "the drive, or delete the cache file.")

    def _select(self, model_key: str, digests: list[bytes]) -> list[tuple]:
        rows = []
        for start in range(0, len(digests), _CHUNK):
            chunk = digests[start:start + _CHUNK]
            rows += self._conn.execute(
                "SELECT digest, dim, vector, norm, checksum FROM embeddings WHERE model = ? AND digest IN "
                f"({','.join('?' * len(chunk))})",
                [model_key, *chunk],
            ).fetchall()
        return rows

    def store(self, model_key: str, texts: list[str], vectors: np.ndarray) -> None:
        """Save `vectors` (shape ``(len(texts), dim)``) for `texts`, replacing older entries; a
        vector that is not finite is not kept (it would only be found damaged)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(f"vectors of shape {vectors.shape} do not match {len(texts)} texts")
        dim = vectors.shape[1]
        rows = []
        for text, vector in zip(texts, vectors):
            if not np.isfinite(vector).all():
                continue
            digest, blob, norm = text_digest(text), vector.tobytes(), _norm(vector)
            rows.append((model_key, digest, dim, blob, norm, entry_checksum(model_key, digest, dim, blob, norm)))
        with self._lock:
            if self.off:
                return
            try:
                with self._conn:
                    self._conn.executemany(
                        "INSERT OR REPLACE INTO embeddings (model, digest, dim, vector, norm, checksum) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        rows,
                    )
            except sqlite3.Error as exc:
                self._failed(exc)

    def count(self, model_key: str | None = None) -> int:
        """Number of cached vectors, for one model or all."""
        with self._lock:
            if model_key is None:
                return self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
            return self._conn.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model_key,)).fetchone()[0]

    def clear(self, model_key: str | None = None) -> None:
        """Delete cached vectors, for one model or all."""
        with self._lock, self._conn:
            if model_key is None:
                self._conn.execute("DELETE FROM embeddings")
            else:
                self._conn.execute("DELETE FROM embeddings WHERE model = ?", (model_key,))

    def close(self) -> None:
        """Close the database (safe to call twice)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
