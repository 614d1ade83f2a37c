"""Building a profile's background on a Ray cluster (Ray Data's batch-inference pattern).

1. Ray Data reads the corpus (local files, globs and folders, or ``s3://``-style URIs), strips
   each sentence, drops blank ones and keys each with `background.text_keys`.
2. The driver collects the keys only (8 bytes a sentence): distinct count, sentences that occur
   more than once, and the key limits of the pair scheme and the query sample.
3. An encoder actor per worker (the model loaded once, on a GPU when the cluster has them, with
   the engine a local run would choose on its device: ONNX Runtime on CPU workers, running the
   graph the driver prepared and checked, torch on GPU workers) encodes one block at a time and
   returns the block's moment sums (count, sum, cross-products)
   plus the few rows the pair scheme or the query sample select, and rows of repeated sentences.
4. The driver adds the moments (repeated sentences once), fits the geometry fixes from them,
   scores the selected pairs in Ray tasks whose sketches it merges in chunk order, and assembles
   the profile with `profile_builder.assemble_profile`. Blocks and chunks are taken in a fixed
   order (not as they finish), so a build run twice on the same cluster gives the same
   backgrounds.

The pairs depend only on the sentences and the seed, so the profile equals the one
`profile_builder.build_profile` makes on one machine from the same sentences: same pairs, same
moments and fixes up to float rounding, quantiles within the sketches' rank error.

Ray is imported lazily: this module imports without it (``pip install 'calibsim[cluster]'``).
"""

from __future__ import annotations

import glob
import math
import os
import re
import signal
import threading
import time
from pathlib import Path

import numpy as np

from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import BackgroundStatistics, assemble_profile, pair_sketches
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.calibration.sketch import ScoreSketch
from calibsim_gui.core.embedding.devices import embedder_engine
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.embedding.models import choose_engine, load_model, load_prepared_graph, prepared_graph
from calibsim_gui.core.embedding.onnx_engine import onnx_refusal
from calibsim_gui.core.embedding.prompts import PromptSettings
from calibsim_gui.core.errors import CalibsimError, Cancelled, InputError, ModelError, ProfileError
from calibsim_gui.core.geometry.background import (
    key_pairs,
    pair_key_limit,
    query_key_limit,
    query_keys,
    query_sample,
    text_keys,
)
from calibsim_gui.core.geometry.transforms import embedding_moments, fit_geometries_from_moments
from calibsim_gui.core.io.inputs import document_column, folder_files
from calibsim_gui.core.io.tables import TABLE_SEPARATORS, TEXT_SUFFIXES, check_text_source
from calibsim_gui.core.provenance import file_digest

BLOCK_ROWS = 4096
"""Sentences per block (an encoder actor's unit of work)."""
CHUNK_PAIRS = 5000
"""Background pairs per scoring task."""
INSTALL_HINT = "pip install 'calibsim[cluster]'   (or: pip install 'ray[data]')"


def import_ray():
    """The `ray` module, or an InputError saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise InputError("the ray engine needs Ray, which is not installed.", fix=INSTALL_HINT) from None
    return ray


REACH_SECONDS = 5.0
"""How long the address of a Ray cluster may take to accept a connection before the build is
refused (Ray's own client waits minutes on an address nobody listens at)."""


def check_reachable(address: str, timeout: float = REACH_SECONDS) -> None:
    """Refuse (InputError) a ``host:port`` or ``ray://host:port`` address that does not accept
    a TCP connection within `timeout` seconds; ``auto`` and other forms are left to Ray."""
    import socket

    match = re.fullmatch(r"(?:ray://)?\[?([^\]\s]+?)\]?:(\d{1,5})", address.strip())
    if not match:
        return
    try:
        socket.create_connection((match[1], int(match[2])), timeout=timeout).close()
    except OSError as exc:
        why = "it did not answer within {:g} s".format(timeout) if isinstance(exc, TimeoutError) \
            else (exc.strerror or str(exc))
        raise InputError(f"cannot reach a Ray cluster at {address}: {why}.",
                         fix="start the cluster (ray start --head) and give the address it prints, or leave "
                             "out --address to start a local Ray instance") from None


# --------------------------------------------------------------------------- reading


def _is_uri(path: str) -> bool:
    return "://" in path


def expand_sources(paths) -> list[str]:
    """Files to read: local globs and folders expanded (folders: .txt/.md, as `load_documents`),
    URIs (``s3://bucket/prefix``) kept as they are for Ray's readers."""
    files: list[str] = []
    for given in map(str, paths):
        if _is_uri(given):
            files.append(given)
            continue
        pattern = os.path.expanduser(given)
        matches = sorted(map(Path, glob.glob(pattern, recursive=True))) \
            if glob.has_magic(pattern) else [Path(pattern)]
        if not matches:
            raise InputError("matches no file.", path=given, fix="check the path or the pattern.")
        for match in matches:
            if match.is_dir():
                found = folder_files(match)
                if not found:
                    raise InputError("holds no .txt or .md files.", path=match,
                                     fix="point at .txt/.md files or a folder of them.")
                files += [str(f.resolve()) for f in found]
            elif match.exists():
                files.append(str(match.resolve()))
            else:
                raise InputError("no such file or folder.", path=match, fix="check the path.")
    return list(dict.fromkeys(files))


def checked_sources(sources, encoding: str | None = None) -> list[str]:
    """`expand_sources`, each local file then given the local engine's checks on this machine
    (`tables.check_text_source`: no FIFO, size limit, no NUL byte, at most 1,000 columns), streamed,
    before Ray starts: Ray's readers built a profile from a file with NUL bytes and ran for
    minutes on a CSV of 100,000 columns."""
    files = expand_sources(sources)
    for path in files:
        if not _is_uri(path):
            _kind(path)
            check_text_source(path, encoding)
    return files


def _kind(path: str) -> str:
    suffix = Path(path.split("?", 1)[0]).suffix.lower()
    if suffix in TABLE_SEPARATORS:
        return suffix
    if suffix in TEXT_SUFFIXES or _is_uri(path):
        return "text"                  # a URI without a known suffix: a folder of text files
    raise InputError(f"has an unsupported extension {suffix or '(none)'!r}; corpora are read from "
                     f"{', '.join(TEXT_SUFFIXES + tuple(TABLE_SEPARATORS))} files or folders.",
                     path=path, fix="save the texts as .txt with one text per line.")


def read_sentences(files: list[str], *, column: str | None = None, encoding: str | None = None):
    """A Ray dataset with one column ``text``: the lines of text files, the `column` of tables."""
    import pyarrow.csv as pacsv
    import ray.data

    groups: dict[str, list[str]] = {}
    for path in files:
        groups.setdefault(_kind(path), []).append(path)
    parts = []
    for kind, paths in groups.items():
        if kind == "text":
            parts.append(ray.data.read_text(paths, encoding=encoding or "utf-8",
                                            file_extensions=[s.lstrip(".") for s in TEXT_SUFFIXES]
                                            if any(map(_is_uri, paths)) else None))
            continue
        if TABLE_SEPARATORS[kind] is None:
            table = ray.data.read_json(paths, lines=True, file_extensions=None)
        else:
            options = {"parse_options": pacsv.ParseOptions(delimiter=TABLE_SEPARATORS[kind])}
            if encoding:
                options["read_options"] = pacsv.ReadOptions(encoding=encoding)
            table = ray.data.read_csv(paths, file_extensions=None, **options)
        head = table.take_batch(50, batch_format="pandas").astype(str)
        name = document_column(head, Path(paths[0]), column)
        parts.append(table.select_columns([name]).rename_columns({name: "text"}))
    return parts[0].union(*parts[1:]) if len(parts) > 1 else parts[0]


def _keyed_sentences(batch: dict, *, seed: int) -> dict:
    """Ray Data UDF: stripped, non-blank sentences and their `text_keys`."""
    texts = ["" if t is None else str(t).lstrip("\ufeff").strip() for t in batch["text"]]
    texts = [t for t in texts if t]
    return {"text": np.array(texts, dtype=object), "key": text_keys(texts, seed)}


# --------------------------------------------------------------------------- workers


def _prompts_of(embedder) -> dict | None:
    """The driver's prompts as a plain dict, so every worker encodes with the same prompt."""
    prompts = getattr(embedder, "prompts", None)
    return prompts.to_dict() if hasattr(prompts, "to_dict") else None


class BlockEncoder:
    """Ray Data UDF run by one actor per worker: encodes a block, returns its statistics.

    Parameters
    ----------
    model : str or None
        Model folder (the same path on every node) or None for the built-in model.
    device, precision, allow_pickle : see `models.load_model` (for torch workers)
    graph : dict or None
        `models.prepared_graph` of the driver's ONNX graph: the worker runs ONNX Runtime on it
        with one thread; None: the torch engine.
    prompts : dict, optional
        `PromptSettings.to_dict()` of the driver's embedder (default: the folder's prompts).
    batch_size : texts per model call
    pair_limit, query_limit : int
        Rows with a text key (query key) at most this are sent back for the pairs (the sample).
    repeated : ndarray of uint64
        Keys of sentences occurring more than once in the corpus: sent back, added once by the driver.
    """

    def __init__(self, *, model, device, precision, allow_pickle, batch_size, pair_limit,
                 query_limit, repeated, prompts=None, graph=None):
        prompts = None if prompts is None else PromptSettings.from_dict(prompts)
        self.embedder = load_prepared_graph(model, graph, prompts=prompts, threads=1) if graph else \
            load_model(model, device=device, precision=precision, allow_pickle=allow_pickle,
                       prompts=prompts, engine="torch")
        self.batch_size = batch_size
        self.pair_limit, self.query_limit = np.uint64(pair_limit), np.uint64(query_limit)
        self.repeated = np.asarray(repeated, dtype=np.uint64)

    def __call__(self, batch: dict):
        import pyarrow as pa

        start = time.perf_counter()
        keys, first = np.unique(np.asarray(batch["key"], dtype=np.uint64), return_index=True)
        texts = [str(batch["text"][i]) for i in first]
        repeated = np.isin(keys, self.repeated)
        own = encode_texts(self.embedder, [t for t, r in zip(texts, repeated) if not r],
                           batch_size=self.batch_size)
        shared = encode_texts(self.embedder, [t for t, r in zip(texts, repeated) if r],
                              batch_size=self.batch_size)
        emb = np.empty((len(keys), self.embedder.dimension), dtype=np.float32)
        emb[~repeated], emb[repeated] = own.embeddings, shared.embeddings
        n, total, cross = embedding_moments(own.embeddings)
        limit = self.embedder.max_seq_length
        too_long = np.zeros(len(keys), dtype=bool)
        if limit and repeated.any():
            too_long[repeated] = self.embedder.token_counts([t for t, r in zip(texts, repeated) if r]) > limit
        send = repeated | (keys <= self.pair_limit) | (query_keys(keys) <= self.query_limit)

        def one(value, dtype):
            return pa.array([value], type=dtype)

        def listed(values, dtype):
            values = pa.array(np.ascontiguousarray(values).ravel(), type=dtype)
            return pa.ListArray.from_arrays(pa.array([0, len(values)], type=pa.int32()), values)

        return pa.table({
            "rows": one(len(batch["key"]), pa.int64()), "n": one(n, pa.int64()),
            "truncated": one(own.n_truncated, pa.int64()),
            "seconds": one(time.perf_counter() - start, pa.float64()),
            "digest": one(self.embedder.fingerprint.digest, pa.string()),
            "total": listed(total, pa.float64()), "cross": listed(cross, pa.float64()),
            "keys": listed(keys[send], pa.uint64()), "repeated": listed(repeated[send], pa.bool_()),
            "too_long": listed(too_long[send], pa.bool_()),
            "embeddings": listed(emb[send], pa.float32()),
        })


_CALIBSIM_ERROR = re.compile(r"calibsim_gui\.core\.errors\.(InputError|ModelError|ProfileError): (.+)")


def worker_error(exc: BaseException) -> CalibsimError | None:
    """The calibsim error a Ray worker raised, as Ray reports it (a traceback in the text of an
    `ActorDiedError` or a `RayTaskError`), or None for any other failure."""
    found = _CALIBSIM_ERROR.findall(str(exc))
    if not found:
        return None
    kind, message = found[-1]
    return {"InputError": InputError, "ModelError": ModelError, "ProfileError": ProfileError}[kind](
        f"a Ray worker stopped the build: {message}")


def _chunk_sketches(a, b, metrics, transforms, fixed_metrics) -> dict:
    """Ray task: `pair_sketches` of one chunk of pairs (rows `a[i]`, `b[i]`), as JSON-able dicts."""
    n = len(a)
    sketches = pair_sketches(np.concatenate([a, b]), np.arange(n), np.arange(n, 2 * n), metrics, transforms,
                             fixed_metrics)
    return {g: {m: s.to_dict() for m, s in per.items()} for g, per in sketches.items()}


# --------------------------------------------------------------------------- driver


class BlockTotals:
    """The driver's running sums over the blocks' statistics."""

    def __init__(self, dimension: int):
        self.n, self.rows, self.blocks, self.truncated, self.seconds = 0, 0, 0, 0, 0.0
        self.total = np.zeros(dimension)
        self.cross = np.zeros((dimension, dimension))
        self.rows_by_key: dict[int, np.ndarray] = {}
        self.repeated: set[int] = set()

    def add(self, table, digest: str) -> int:
        """Fold one block's statistics in; returns the block's number of sentence rows."""
        rows = 0
        for i in range(table.num_rows):
            if table["digest"][i].as_py() != digest:
                raise ProfileError("a worker loaded a different model (its fingerprint differs from "
                                   "the driver's); the model folder must be the same on every node.")
            dim = len(self.total)
            rows += table["rows"][i].as_py()
            self.n += table["n"][i].as_py()
            self.truncated += table["truncated"][i].as_py()
            self.seconds += table["seconds"][i].as_py()
            self.total += table["total"][i].values.to_numpy()
            self.cross += table["cross"][i].values.to_numpy().reshape(dim, dim)
            keys = table["keys"][i].values.to_numpy()
            repeated = table["repeated"][i].values.to_numpy(zero_copy_only=False)
            too_long = table["too_long"][i].values.to_numpy(zero_copy_only=False)
            emb = table["embeddings"][i].values.to_numpy().reshape(len(keys), dim)
            for key, vector, is_repeated, is_long in zip(keys.tolist(), emb, repeated, too_long):
                kept = self.rows_by_key.get(key)
                if kept is None:
                    self.rows_by_key[key] = vector
                    if is_repeated:
                        self.repeated.add(key)
                        self.truncated += int(is_long)
                elif vector.tobytes() < kept.tobytes():
                    # a sentence repeated in several blocks was encoded in each, in batches that
                    # round differently: keep the same copy whatever order the blocks arrive in
                    self.rows_by_key[key] = vector
            self.blocks += 1
        self.rows += rows
        return rows

    def add_repeated(self) -> None:
        """Add each sentence that occurs more than once, once."""
        if self.repeated:
            emb = np.stack([self.rows_by_key[k] for k in sorted(self.repeated)])
            n, total, cross = embedding_moments(emb)
            self.n += n
            self.total += total
            self.cross += cross

    def rows_at_most(self, keys_of, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """Sorted text keys whose `keys_of` value is at most `limit`, and their embeddings."""
        keys = np.array(sorted(self.rows_by_key), dtype=np.uint64)
        keys = keys[keys_of(keys) <= np.uint64(limit)]
        return keys, np.stack([self.rows_by_key[int(k)] for k in keys])


def _worker_setup(ray, device: str, workers: int | None) -> tuple[int, str, dict]:
    """Number of encoder actors, their device and Ray resources (a GPU each when there are GPUs)."""
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    if device == "cuda" and not gpus:
        raise InputError("--device cuda, but the Ray cluster has no GPUs.", fix="use --device auto or cpu")
    if device in ("auto", "cuda") and gpus:
        return workers or gpus, "cuda", {"num_gpus": 1}
    return workers or max(1, int(resources.get("CPU", 1))), "cpu" if device == "auto" else device, \
        {"num_cpus": 1}


def worker_engine(embedder, *, model, device: str, precision: str,
                  allow_pickle: bool) -> tuple[str, dict | None]:
    """The engine a local run would choose on the workers' `device` (`models.choose_engine`, and
    torch for a folder the ONNX engine cannot reproduce), and for ONNX the prepared graph
    (`models.prepared_graph`): the driver's own, or prepared here once when the driver runs torch."""
    engine = choose_engine("auto", device, precision)
    if engine == "onnx" and onnx_refusal(embedder.info.path) is not None and precision != "int8":
        engine = "torch"
    if engine == "torch":
        return engine, None
    onnx = embedder if embedder_engine(embedder) == "onnx" else load_model(
        model, device="cpu", precision=precision, allow_pickle=allow_pickle, engine="onnx",
        prompts=getattr(embedder, "prompts", None))
    return engine, prepared_graph(onnx)


def build_background_on_ray(sources, settings: ProfileSettings, *, embedder, model=None, device: str = "auto",
                            precision: str = "float32", allow_pickle: bool = False,
                            column: str | None = None, encoding: str | None = None,
                            workers: int | None = None, address: str | None = None,
                            batch_size: int | None = None, progress=None,
                            should_stop=None) -> tuple[BackgroundStatistics, list]:
    """Background statistics of a corpus, computed on Ray.

    Uses the running Ray instance if there is one, else connects to `address` or starts a local
    instance with `workers` CPUs (all cores by default), and shuts down what it started.

    Parameters
    ----------
    sources : paths, globs, folders or URIs of the background corpus
    settings : ProfileSettings
        The pairs (`n_pairs`, `seed`), metrics and geometry fixes to compute.
    embedder : the driver's loaded model (fingerprint, dimension); workers load `model` themselves

    Returns
    -------
    BackgroundStatistics, and the ``files`` provenance entries
    """
    ray = import_ray()
    progress = progress or (lambda done, total, message: None)
    should_stop = should_stop or (lambda: False)
    files = checked_sources(sources, encoding)
    started = not ray.is_initialized()
    if started and address:
        check_reachable(address)
    if started:
        import logging

        _keeping_sigterm(lambda: ray.init(
            address=address, num_cpus=None if address else (workers or os.cpu_count()),
            include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR))
    try:
        return _build(ray, files, settings, embedder=embedder, model=model, device=device, precision=precision,
                      allow_pickle=allow_pickle, column=column, encoding=encoding, workers=workers,
                      address=address, batch_size=batch_size, progress=progress, should_stop=should_stop)
    finally:
        if started:
            ray.shutdown()


def _keeping_sigterm(start) -> None:
    """Call `start` (``ray.init``), then give back the caller's SIGTERM handler, which Ray replaces
    with its own (an exit without a word, after its C++ core prints a stack trace)."""
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGTERM) if main else None
    start()
    if handler is not None:
        signal.signal(signal.SIGTERM, handler)


def _build(ray, files, settings, *, embedder, model, device, precision, allow_pickle, column, encoding,
           workers, address, batch_size, progress, should_stop):
    import logging

    from ray.data import ActorPoolStrategy, DataContext

    context = DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = True       # blocks add up in the same order every run
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    start = time.perf_counter()
    n_pairs, seed, metrics, fixed_metrics = settings.n_pairs, settings.seed, list(settings.metrics), \
        settings.fixed_metrics
    keyed = read_sentences(files, column=column, encoding=encoding).map_batches(
        _keyed_sentences, fn_kwargs={"seed": seed}, batch_format="numpy").materialize()
    keys = np.concatenate([np.asarray(b["key"], dtype=np.uint64) for b in keyed.select_columns(["key"])
                           .iter_batches(batch_size=None, batch_format="numpy")] or [np.zeros(0, np.uint64)])
    distinct, counts = np.unique(keys, return_counts=True)
    if len(distinct) < 3:
        raise ProfileError("the background corpus needs at least three distinct sentences.")
    pair_limit, query_limit = pair_key_limit(distinct, n_pairs), query_key_limit(distinct)
    workers, worker_device, resources = _worker_setup(ray, device, workers)
    engine, graph = worker_engine(embedder, model=model, device=worker_device, precision=precision,
                                  allow_pickle=allow_pickle)
    blocks = max(2 * workers, math.ceil(len(keys) / BLOCK_ROWS))
    # materialized first, so the encoder actors can hold every CPU without starving the split
    keyed = keyed.repartition(blocks).materialize()
    encoded = keyed.map_batches(
        BlockEncoder, batch_size=None, batch_format="numpy", compute=ActorPoolStrategy(size=workers),
        fn_constructor_kwargs=dict(model=model, device=worker_device, precision=precision,
                                   allow_pickle=allow_pickle, batch_size=batch_size,
                                   pair_limit=pair_limit, query_limit=query_limit,
                                   repeated=distinct[counts > 1],
                                   prompts=_prompts_of(embedder), graph=graph),
        **resources)
    totals = BlockTotals(embedder.dimension)
    digest = embedder.fingerprint.digest
    progress(0, len(keys), f"encoding {len(keys):,} sentences in {blocks} blocks on {workers} workers")
    encode_start = time.perf_counter()
    try:
        for table in encoded.iter_batches(batch_size=None, batch_format="pyarrow"):
            if should_stop():
                raise Cancelled(f"stopped after {totals.rows:,} of {len(keys):,} sentences")
            totals.add(table, digest)
            rate = totals.rows / max(time.perf_counter() - encode_start, 1e-9)
            progress(totals.rows, len(keys), f"block {totals.blocks} of {blocks}, {rate:,.0f} sentences/s")
    except ray.exceptions.RayError as exc:
        raise worker_error(exc) or exc
    encode_seconds = time.perf_counter() - encode_start
    totals.add_repeated()
    if totals.n != len(distinct):
        raise ProfileError(f"the workers returned {totals.n:,} distinct sentences, the corpus has "
                           f"{len(distinct):,}; a block was lost — run the build again.")
    transforms = fit_geometries_from_moments((totals.n, totals.total, totals.cross), settings.fixes,
                                             settings.geometry_settings)
    pair_keys, pair_emb = totals.rows_at_most(lambda k: k, pair_limit)
    first, second = key_pairs(pair_keys, n_pairs)
    score = ray.remote(_chunk_sketches)
    a, b = pair_emb[first], pair_emb[second]
    pending = [score.remote(a[i:i + CHUNK_PAIRS], b[i:i + CHUNK_PAIRS], metrics, transforms, fixed_metrics)
               for i in range(0, len(a), CHUNK_PAIRS)]
    sketches: dict[str, dict[str, ScoreSketch]] = {}
    for task in pending:            # merged in chunk order, whichever ends first: the same bytes every run
        for geometry, per in ray.get(task).items():
            for metric, d in per.items():
                part = ScoreSketch.from_dict(d)
                sketches.setdefault(geometry, {}).setdefault(metric, ScoreSketch()).merge(part)
    sample_keys, sample_emb = totals.rows_at_most(query_keys, query_limit)
    query_reference = sample_emb[query_sample(sample_keys)]
    provenance = {"engine": "ray", "ray": {
        "version": ray.__version__, "address": address or "local instance",
        "workers": workers, "worker_device": worker_device, "worker_engine": engine, "blocks": totals.blocks,
        "sentences_read": int(len(keys)), "encode_seconds": round(encode_seconds, 2),
        "worker_busy_seconds": round(totals.seconds, 2),
        "total_seconds": round(time.perf_counter() - start, 2)}}
    statistics = BackgroundStatistics(len(distinct), len(first), totals.truncated, transforms, sketches,
                                      query_reference, provenance)
    entries = [{"name": Path(f).name, "sha256": file_digest(f)} if not _is_uri(f) else {"uri": f}
               for f in files]
    return statistics, entries


def build_profile_on_ray(embedder, sources, settings: ProfileSettings, *, model=None, device: str = "auto",
                         precision: str = "float32", allow_pickle: bool = False, column: str | None = None,
                         encoding: str | None = None, workers: int | None = None,
                         address: str | None = None, cache=None, batch_size: int | None = None, progress=None,
                         should_stop=None) -> ReferenceProfile:
    """`profile_builder.build_profile` with the background encoded on Ray, from the same `settings`.

    `embedder` (loaded on the driver) encodes the anchors and names the model; workers load
    `model` (a folder present at the same path on every node, or None for the built-in one)
    with `precision`, on a GPU each when the cluster has GPUs and `device` is auto or cuda, with
    the engine a local run would choose there (`worker_engine`: ONNX Runtime on CPU workers).
    Other parameters as in `build_background_on_ray`. The workers read the files themselves, so
    texts cleaned of HTML on this machine (`settings.clean_html`) cannot be built from here.
    """
    if settings.clean_html:
        raise InputError("HTML leftovers are cleaned off a background read on this machine, not on Ray.",
                         fix="build it with build_profile, or clean the files first")
    background, files = build_background_on_ray(
        sources, settings, embedder=embedder, model=model, device=device, precision=precision,
        allow_pickle=allow_pickle, column=column, encoding=encoding, workers=workers,
        address=address, batch_size=batch_size, progress=progress, should_stop=should_stop)
    return assemble_profile(embedder, background, settings, files=files, cache=cache, batch_size=batch_size,
                            should_stop=should_stop)
