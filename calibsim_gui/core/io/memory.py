"""Memory budget: how much a run will hold at once, checked before the run starts.

Pair metrics and matrices are computed in blocks, but some things are held whole: the embedding
of every distinct text, the output columns, a document matrix. A run whose estimate exceeds the
budget is refused with the estimate, so the machine never starts swapping halfway through.
The budget is half the memory this process can have (`available_memory`: physical memory, or
less under an address-space limit or a container's memory limit) unless the user sets it
(``--memory-budget``, the app's Settings menu, or the ``CALIBSIM_MEMORY_BUDGET`` environment
variable). Whatever the budget, a run the process's own limits cannot hold is refused.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from calibsim_gui.core.errors import InputError

BUDGET_ENV = "CALIBSIM_MEMORY_BUDGET"
DEFAULT_SHARE = 0.5                     # of physical memory
WORKING_BYTES = 200_000_000             # blocks, temporaries and libraries' own buffers
_UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
# Bytes held while a file is read and parsed, per byte of the file: the bytes, the decoded text,
# pandas' parse, the frame of Python strings and the texts or documents made from it. Measured as
# the growth of peak RSS (and the tracemalloc peak) over `load_pairs` / `load_documents` of 42-51
# MB files built by repeating rows of /work/shared/data: STS-B pairs 8.8x (traced 6.1x), AG News
# CSV 8.6x (5.1x), STS-B sentences one per line as documents 14.7x (7.7x). Files of very short
# lines hold more per byte (a Python string object per text).
READ_FACTOR = 16
# Background pairs: 13.7 KB a pair at dimension 384 (35.8 bytes per dimension), measured with
# tracemalloc as the growth of `build_profile`'s peak from 20,000 to 120,000 pairs.
PAIR_BYTES_PER_DIM = 40
PAIR_BYTES_FIXED = 200


def parse_size(text: str) -> int:
    """``"4G"``, ``"512 MB"``, ``"1.5GB"`` or a plain number of bytes -> bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)B?\s*", str(text), flags=re.IGNORECASE)
    if not match or float(match[1]) <= 0:
        raise InputError(f"{text!r} is not a memory size.", fix="write it like 4G, 512M or 1.5GB")
    return int(float(match[1]) * _UNITS[match[2].upper()])


def format_size(n_bytes: float) -> str:
    """Bytes in the largest unit that keeps the number >= 1, e.g. ``"1.2 GB"``."""
    for unit in ("TB", "GB", "MB", "KB"):
        if n_bytes >= _UNITS[unit[0]]:
            return f"{n_bytes / _UNITS[unit[0]]:.1f} {unit}"
    return f"{int(n_bytes)} B"


def physical_memory() -> int:
    """Bytes of physical memory: from ``sysconf`` where there is one (psutil's import alone
    costs ~0.04 s of a command's start), else from psutil (Windows)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        import psutil

        return int(psutil.virtual_memory().total)


NO_CGROUP_LIMIT = 2**60                  # cgroup v1 writes "no limit" as a number near 2**63
_CGROUP_FILES = (("memory.max", "memory.current"),                      # cgroup v2
                 ("memory.limit_in_bytes", "memory.usage_in_bytes"))    # cgroup v1


def cgroup_memory(root: Path = Path("/sys/fs/cgroup"),
                  membership: Path = Path("/proc/self/cgroup")) -> tuple[int, int] | None:
    """(limit, bytes in use) of the memory cgroup this process runs in (a container's limit),
    or None where there is none (no limit, not Linux, unreadable)."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return None
    folders = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        base = root if controllers == "" else root / "memory" if "memory" in controllers.split(",") else None
        if base is not None:            # the cgroup's own folder, or the root a container sees as its own
            folders += [base / path.lstrip("/"), base]
    for folder in folders:
        for limit_name, usage_name in _CGROUP_FILES:
            try:
                limit = int((folder / limit_name).read_text())
            except (OSError, ValueError):           # missing, or "max": no limit here
                continue
            if limit >= NO_CGROUP_LIMIT:
                continue
            try:
                used = int((folder / usage_name).read_text())
            except (OSError, ValueError):
                used = 0
            return limit, used
    return None


def process_limit() -> tuple[int, str] | None:
    """What this process may still allocate under its own limits, and which limit that is: the
    address-space limit (RLIMIT_AS, ``ulimit -v``) less the address space already mapped, or the
    cgroup's memory limit (a container's) less what the cgroup uses; None when neither is set."""
    found = []
    try:
        import resource
    except ImportError:                     # Windows: no such limits
        resource = None
    if resource is not None:
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft not in (resource.RLIM_INFINITY, -1):
            import psutil

            mapped = psutil.Process().memory_info().vms
            found.append((max(soft - mapped, 0),
                          _limit_words("the address-space limit (ulimit -v)", soft, mapped)))
    cgroup = cgroup_memory()
    if cgroup is not None:
        limit, used = cgroup
        found.append((max(limit - used, 0),
                      _limit_words("the memory limit of this container (cgroup)", limit, used)))
    return min(found) if found else None


def _limit_words(limit_name: str, limit: int, used: int) -> str:
    return f"{limit_name} of {format_size(limit)}, {format_size(used)} of it in use"


def available_memory() -> int:
    """The memory this process can have: physical memory, or less under `process_limit`."""
    limit = process_limit()
    return min(physical_memory(), limit[0]) if limit else physical_memory()


def default_budget() -> int:
    """``CALIBSIM_MEMORY_BUDGET`` when set, else half the memory this process can have."""
    if os.environ.get(BUDGET_ENV):
        return parse_size(os.environ[BUDGET_ENV])
    return int(available_memory() * DEFAULT_SHARE)


def pair_run_bytes(n_rows: int, n_texts: int, dim: int, n_columns: int, n_geometries: int = 1) -> int:
    """Peak estimate for scoring `n_rows` pairs of `n_texts` distinct texts into `n_columns`
    score columns: the float32 vectors, a float64 copy per geometry fix and the query-scale
    work, the float64 columns (twice: arrays, then the output table)."""
    vectors = n_texts * dim * (4 + 8 * (n_geometries + 1))
    return int(vectors + n_rows * 8 * (2 * n_columns + 2) + WORKING_BYTES)


def file_read_bytes(n_file_bytes: int) -> int:
    """Peak estimate for reading and parsing text, CSV, TSV or JSONL files of `n_file_bytes`
    bytes in all (known from their sizes before a byte is read)."""
    return int(n_file_bytes * READ_FACTOR + WORKING_BYTES)


def background_pairs_bytes(n_pairs: int, dim: int) -> int:
    """Peak estimate for scoring `n_pairs` background pairs into sketches: the two gathered
    float32 embeddings of every pair, their float64 copies under a geometry fix, the index
    arrays, a score array per metric and the sorted copy a sketch takes (`PAIR_BYTES_PER_DIM`)."""
    return int(n_pairs * (PAIR_BYTES_PER_DIM * dim + PAIR_BYTES_FIXED))


def profile_build_bytes(n_texts: int, dim: int, n_pairs: int = 0) -> int:
    """Peak estimate for a local background build: the float32 embeddings of every sentence,
    the float64 copy their moments are summed from (`calibsim_gui.core.geometry.transforms`) and the
    `n_pairs` background pairs (`background_pairs_bytes`)."""
    return int(n_texts * dim * 12 + background_pairs_bytes(n_pairs, dim) + WORKING_BYTES)


def chunk_bytes(n_chunks: int, n_chars: int, dim: int) -> int:
    """Peak estimate for the chunks of long texts (``--long-texts chunk``), beyond the run's own:
    each chunk's text (a substring, and its copy for encoding) and its float32 vector, held by
    the encoder, the text's chunk set and the text's mean vector. Measured with tracemalloc over
    `score_pairs` of two 200 KB texts at dimension 48: about 830 bytes a chunk of 210 characters.
    Chunk pairs are scored in blocks of a fixed size, whatever the texts' lengths."""
    return int(2 * n_chars + n_chunks * (12 * dim + 100))


ENCODER_BYTES_PER_UNIT = 4
"""Bytes of the encoder's working memory per layer, token and unit of (width + feed-forward width
+ heads x tokens): float32 activations, the feed-forward's and the attention scores. Checked on
all-MiniLM-L6-v2 with ONNX Runtime: 100 pairs of ~300-word texts (256 tokens) peaked 2.06 GB at
batch 64 and 0.61 GB at batch 8, about 26 MB a text; this gives 31 MB."""


def encoder_bytes(batch: int, tokens: int, *, layers: int, width: int, ff_width: int, heads: int,
                  weights: int) -> int:
    """Peak estimate for encoding a batch of `batch` texts padded to `tokens` tokens with a
    transformer of `layers` layers (`width`, feed-forward `ff_width`, `heads` attention heads)
    whose weights take `weights` bytes: the weights and every layer's activations and attention
    scores of the batch (ONNX Runtime's arena keeps them all)."""
    per_text = ENCODER_BYTES_PER_UNIT * layers * tokens * (width + ff_width + heads * tokens)
    return int(weights + batch * per_text)


def matrix_run_bytes(n_docs: int, dim: int, n_matrices: int) -> int:
    """Peak estimate for an all-pairs run: `n_matrices` float32 n x n matrices plus vectors."""
    return int(n_docs * n_docs * 4 * n_matrices + n_docs * dim * 12 + WORKING_BYTES)


def check_budget(needed: int, budget: int | None, *, what: str, fix: str, path=None) -> None:
    """Raise InputError (naming `path`, the input, when given) when `needed` bytes exceed
    `budget` (None: the default budget) or what the process's own limits leave (`process_limit`)."""
    limit = process_limit()
    why = ""
    if budget is None:
        budget = default_budget()
        if limit is not None and not os.environ.get(BUDGET_ENV) and limit[0] < physical_memory():
            why = f" (half of the {format_size(limit[0])} this process may still take under {limit[1]})"
    if limit is not None and limit[0] < needed <= budget:
        raise InputError(f"{what} needs about {format_size(needed)} of memory, more than this process "
                         f"may still take ({format_size(limit[0])}) under {limit[1]}.", path=path,
                         fix=f"{fix}, or raise that limit")
    if needed > budget:
        raise InputError(f"{what} needs about {format_size(needed)} of memory, more than the memory "
                         f"budget of {format_size(budget)}{why}.", path=path,
                         fix=f"{fix}, or raise the memory budget (--memory-budget, Settings ▸ "
                             f"Memory budget in the app, or {BUDGET_ENV})")


def release_unused_arrow_memory() -> None:
    """Hand back to the system the memory pandas' Arrow-backed strings freed: Arrow's allocator
    keeps it otherwise (reading a 45 MB table of one long text left 140 MB of it held)."""
    pyarrow = sys.modules.get("pyarrow")     # loaded only where pandas keeps strings in Arrow
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
