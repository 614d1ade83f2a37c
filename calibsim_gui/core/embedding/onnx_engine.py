"""Encode with ONNX Runtime: the CPU engine of the desktop bundle, which needs no torch.

Only onnxruntime, the ``tokenizers`` library (the folder's ``tokenizer.json``) and numpy are used,
imported inside the functions that need them. Pooling and normalisation are read from the
folder's ``modules.json`` and done here in numpy exactly as sentence-transformers does them; the
graph itself only maps token ids to token embeddings. Graphs come from the model folder
(``onnx/model.onnx`` or ``model.onnx``) or are exported once into `onnx_cache_dir` by
`calibsim_gui.core.embedding.onnx_export` (which needs torch).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding import model_folders, passed_checks
from calibsim_gui.core.embedding.cache import default_cache_dir
from calibsim_gui.core.embedding.file_digests import file_sha256
from calibsim_gui.core.embedding.graph_checks import GRAPH_FIX
from calibsim_gui.core.embedding.model_folders import (
    ModelFingerprint,
    ModelInfo,
    fingerprint_entries,
    has_weights,
    int_or_none,
    json_dict,
    model_files,
    module_class,
    module_tree,
    read_json,
)
from calibsim_gui.core.embedding.prompts import PromptedEmbedder, PromptSettings, choose_prompts
from calibsim_gui.core.embedding.readability import known_token_counts, unknown_token_ids
from calibsim_gui.core.errors import ModelError

ONNX_PRECISIONS = ("float32", "int8")
INT8_RECIPE = "w7pc-single"
"""Names how int8 vectors are made: `onnx_export.quantize_int8` quantises weights in 7 bits, per
channel, and activations on the fly (``w7pc``), and each text runs through the graph alone
(``single``: activations are scaled per run, so a batch would make a text's vector depend on the
texts beside it). Part of the int8 graph's file name and of its vectors' cache key, so a graph or
vectors made by an earlier recipe are never taken for this one's."""
FOLDER_GRAPHS = ("onnx/model.onnx", "model.onnx")
"""Where a model folder may already hold its fp32 ONNX graph (token ids -> token embeddings)."""
EXPORT_MANIFEST = "onnx/calibsim-export.json"
"""Written by `onnx_export.export_folder`: the source folder's fingerprint and file digests, so
the built-in model shipped without its torch weights keeps the source's fingerprint
(`shipped_fingerprint`); in any other folder it grants nothing."""
ONNX_DIR_ENV = "CALIBSIM_ONNX_DIR"
_POOLING_MODES = ("cls", "mean", "max", "mean_sqrt_len_tokens")
_LEGACY_POOLING_KEYS = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                        "pooling_mode_mean_tokens": "mean",
                        "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                        "pooling_mode_weightedmean_tokens": "weightedmean",
                        "pooling_mode_lasttoken": "lasttoken"}
_TORCH_FIX = "Fix: use the torch engine (--engine torch)."
GRAPH_CHECK = "onnx-graph"
"""`passed_checks` kind of a graph that loaded, has a text model's inputs and outputs and gave a
finite probe vector; it records the width of the graph's token embeddings."""


def onnxruntime_missing() -> str | None:
    """Why the ONNX engine cannot run here (onnxruntime is not installed), or None if it can."""
    if importlib.util.find_spec("onnxruntime") is None:
        return "onnxruntime is not installed (pip install onnxruntime)"
    return None


def onnx_cache_dir() -> Path:
    """``$CALIBSIM_ONNX_DIR`` if set, else ``onnx/`` in the embedding cache folder."""
    env = os.environ.get(ONNX_DIR_ENV)
    return Path(env).expanduser() if env else default_cache_dir() / "onnx"


def cached_graph(fingerprint: ModelFingerprint, precision: str = "float32") -> Path:
    """Where the exported (or quantised) graph of the model with `fingerprint` is kept."""
    name = "model.onnx" if precision == "float32" else f"model-{precision}.onnx"
    return onnx_cache_dir() / f"{fingerprint.name.replace('/', '--')}-{fingerprint.digest[:32]}" / name


def folder_graph(folder) -> Path | None:
    """The fp32 ONNX graph the model folder ships (`FOLDER_GRAPHS`), or None."""
    return next((Path(folder) / rel for rel in FOLDER_GRAPHS if (Path(folder) / rel).is_file()), None)


# --------------------------------------------------------------------------- the module stack


@dataclass(frozen=True)
class ModuleStack:
    """What a sentence-transformers folder does after its transformer, read from its files.

    Attributes
    ----------
    pooling_modes : tuple of str
        Pooled vectors concatenated in this order (``"cls"``, ``"mean"``, ``"max"``,
        ``"mean_sqrt_len_tokens"``).
    include_prompt : bool
        False: the prompt's tokens are left out of pooling (as sentence-transformers does).
    normalize : bool
        A Normalize module follows: vectors have unit length.
    max_seq_length : int or None
    do_lower_case : bool
    tokenizer_dir : Path or None
        The transformer module's folder, which holds ``tokenizer.json``.
    """

    pooling_modes: tuple[str, ...]
    include_prompt: bool
    normalize: bool
    max_seq_length: int | None
    do_lower_case: bool
    tokenizer_dir: Path | None = None


def read_module_stack(folder) -> ModuleStack:
    """The Transformer -> Pooling -> (Normalize) stack of `folder`, refusing any other stack.

    Raises
    ------
    ModelError
        When the folder has modules the ONNX engine does not reproduce (Dense layers, a pooling
        mode such as weightedmean or lasttoken, modules after normalisation), with the fix.
    """
    folder = Path(folder)
    modules = module_tree(folder)           # module paths inside the folder, nested modules too
    if not modules:
        raise ModelError(f"The ONNX engine needs {folder / 'modules.json'} to know the model's pooling. "
                         + _TORCH_FIX)
    kinds = [module_class(kind) or str(kind) for _, kind in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ModelError(f"The ONNX engine reproduces Transformer, Pooling and Normalize modules only; "
                         f"{folder} has {', '.join(k or '?' for k in kinds)}. " + _TORCH_FIX)
    transformer_dir = folder / modules[0][0]
    pooling = json_dict(folder / modules[1][0] / "config.json")
    modes = pooling.get("pooling_mode")
    if modes is None:
        modes = [mode for key, mode in _LEGACY_POOLING_KEYS.items() if pooling.get(key)] or ["mean"]
    modes = (modes,) if isinstance(modes, str) else tuple(str(m) for m in modes)
    unknown = [m for m in modes if m not in _POOLING_MODES]
    if unknown or not modes:
        raise ModelError(f"The ONNX engine cannot pool with {', '.join(unknown) or 'no mode'} "
                         f"({folder / modules[1][0]}). " + _TORCH_FIX)
    st_config = json_dict(transformer_dir / "sentence_bert_config.json")
    max_len = int_or_none(st_config.get("max_seq_length"))
    if max_len is None:     # sentence-transformers caps the tokenizer's limit at the positions
        limits = [int_or_none(json_dict(transformer_dir / "tokenizer_config.json").get("model_max_length")),
                  int_or_none(json_dict(transformer_dir / "config.json").get("max_position_embeddings"))]
        max_len = min((n for n in limits if n and n > 0), default=None)
    return ModuleStack(pooling_modes=modes, include_prompt=pooling.get("include_prompt", True) is not False,
                       normalize=len(kinds) == 3, max_seq_length=max_len,
                       do_lower_case=st_config.get("do_lower_case") is True, tokenizer_dir=transformer_dir)


def onnx_refusal(folder) -> str | None:
    """Why the ONNX engine cannot reproduce the model in `folder` (its modules, no tokenizer.json),
    or None when it can (`choose_engine`'s ``auto`` then uses torch for it)."""
    try:
        tokenizer = read_module_stack(folder).tokenizer_dir / "tokenizer.json"
    except ModelError as exc:
        return str(exc)
    if not tokenizer.is_file():
        return f"The ONNX engine needs {tokenizer} (a fast tokenizer). " + _TORCH_FIX
    return None


def pool(token_embeddings: np.ndarray, attention_mask: np.ndarray, stack: ModuleStack,
         prompt_length: int = 0) -> np.ndarray:
    """Sentence vectors from token embeddings, as sentence-transformers' Pooling and Normalize.

    Parameters
    ----------
    token_embeddings : ndarray of shape (n, n_tokens, dim), float32
    attention_mask : ndarray of shape (n, n_tokens)
    prompt_length : int
        Leading tokens (the special start token and the prompt) left out of pooling when the
        stack does not include the prompt.

    Returns
    -------
    ndarray of shape (n, dim * len(stack.pooling_modes)), float32
    """
    mask = np.asarray(attention_mask, dtype=np.float32).copy()
    if prompt_length and not stack.include_prompt:
        pad = mask.argmax(axis=1)            # left padding before the first real token, if any
        mask[np.arange(mask.shape[1])[None, :] < (pad + prompt_length)[:, None]] = 0
    vectors = []
    for mode in stack.pooling_modes:
        if mode == "cls":
            vectors.append(token_embeddings[np.arange(len(mask)), mask.argmax(axis=1)])
        elif mode == "max":
            vectors.append(np.where(mask[..., None] > 0, token_embeddings, -np.inf).max(axis=1))
        else:
            total = (token_embeddings * mask[..., None]).sum(axis=1)
            count = np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
            vectors.append(total / (count if mode == "mean" else np.sqrt(count)))
    out = np.concatenate(vectors, axis=1).astype(np.float32)
    if stack.normalize:
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


# --------------------------------------------------------------------------- fingerprints


def shipped_fingerprint(info: ModelInfo) -> ModelFingerprint | None:
    """The source model's fingerprint for calibsim's own built-in model folder shipped without
    weights (the desktop bundle, written by `onnx_export.export_folder`), after checking that
    every file and the graph are the ones `EXPORT_MANIFEST` lists; None for any other folder.

    A manifest in any other folder is never taken for identity: it can be rewritten along with
    the graph it describes, so such a folder's graph is unverified (`unverified_fingerprint`).

    Raises
    ------
    ModelError
        When the built-in folder's files are not the ones its manifest lists.
    """
    folder = Path(info.path)
    try:
        builtin = Path(model_folders.builtin_model_path()).resolve() == folder.resolve()
    except ModelError:
        builtin = False
    graph = folder_graph(folder)
    if not builtin or graph is None or has_weights(folder):
        return None
    manifest = read_json(folder / EXPORT_MANIFEST)
    try:
        source = ModelFingerprint.from_dict(manifest["source"])
        listed = {str(rel): str(sha) for rel, sha in manifest["files"].items()}
        fine = (all(listed.get(rel) == file_sha256(file) for rel, file in model_files(folder))
                and manifest.get("graph_sha256") == file_sha256(graph)
                and fingerprint_entries(sorted(listed.items())) == source.digest)
    except (KeyError, TypeError, AttributeError, OSError) as exc:
        raise ModelError(f"{folder / EXPORT_MANIFEST} is not a calibsim export manifest ({exc}).") from exc
    if not fine:
        raise ModelError(f"The files of {folder} are not the ones {EXPORT_MANIFEST} lists: the folder "
                         "was changed after export. Fix: reinstall calibsim.")
    return ModelFingerprint(name=info.name, digest=source.digest)


UNVERIFIED_SUFFIX = "+unverified-graph"


def unverified_fingerprint(info: ModelInfo, graph) -> ModelFingerprint:
    """The fingerprint of a folder's graph run without a check against weights: the digest of
    the folder's files and of the graph itself, under the name `info.name` + `UNVERIFIED_SUFFIX`,
    so it never shares a cache entry or a profile with a checked model."""
    entries = [(rel, file_sha256(file)) for rel, file in model_files(Path(info.path))]
    entries.append(("<unverified onnx graph>", file_sha256(Path(graph))))
    return ModelFingerprint(name=info.name + UNVERIFIED_SUFFIX, digest=fingerprint_entries(sorted(entries)))


# --------------------------------------------------------------------------- the embedder


class OnnxEmbedder(PromptedEmbedder):
    """A model run by ONNX Runtime on the CPU, with the interface of `SentenceTransformerEmbedder`.

    Attributes
    ----------
    fingerprint : ModelFingerprint
        The source folder's, so profiles built with the torch engine fit.
    info : ModelInfo
    engine : str
        ``"onnx"``.
    device : str
        ``"cpu"``.
    precision : str
        ``"float32"`` or ``"int8"`` (dynamically quantised weights and activations; each text runs
        alone, on one thread per text, so its vector never depends on the texts beside it).
    quantisation : str
        `INT8_RECIPE` in int8, else ``""``: kept apart in the embedding cache.
    precision_note : str
    dimension : int
    max_seq_length : int or None
    prompts : PromptSettings
    graph : Path
        The ONNX file in use.
    """

    engine = "onnx"
    device = "cpu"

    def __init__(self, graph, info: ModelInfo, fingerprint: ModelFingerprint, *, stack: ModuleStack | None = None,
                 precision: str = "float32", precision_note: str = "float32",
                 prompts: PromptSettings | None = None, threads: int = 0):
        from tokenizers import Tokenizer, normalizers

        self.graph = Path(graph)
        self.info = info
        self.fingerprint = fingerprint
        self.precision = precision
        self.quantisation = INT8_RECIPE if precision == "int8" else ""
        self.precision_note = precision_note
        self.prompts = choose_prompts(info) if prompts is None else prompts
        self.stack = read_module_stack(info.path) if stack is None else stack
        self.max_seq_length = self.stack.max_seq_length
        tokenizer_dir = self.stack.tokenizer_dir or Path(info.path)
        tokenizer_file = tokenizer_dir / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise ModelError(f"The ONNX engine needs {tokenizer_file} (a fast tokenizer). " + _TORCH_FIX)
        try:
            self._batched = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:
            raise ModelError(f"Cannot read {tokenizer_file}: {exc}") from exc
        if self.stack.do_lower_case:
            existing = self._batched.normalizer
            self._batched.normalizer = normalizers.Sequence(
                [normalizers.Lowercase()] + ([existing] if existing is not None else []))
        config = json_dict(tokenizer_dir / "tokenizer_config.json")
        self._batched.no_truncation()
        self._batched.no_padding()
        self._special_ids = {i for i, token in self._batched.get_added_tokens_decoder().items() if token.special}
        self._plain_tokenizer = None
        self._plain_lock = threading.Lock()
        if self.max_seq_length:
            self._batched.enable_truncation(self.max_seq_length,
                                            direction=str(config.get("truncation_side", "right")))
        pad_token = config.get("pad_token")
        pad_token = pad_token.get("content") if isinstance(pad_token, dict) else pad_token
        pad_token = pad_token if isinstance(pad_token, str) else "[PAD]"
        self._batched.enable_padding(direction=str(config.get("padding_side", "right")),
                                     pad_id=self._batched.token_to_id(pad_token) or 0, pad_token=pad_token)

        self._threads = threads
        self._session = None
        self._session_lock = threading.Lock()
        self._prompt_lengths: dict[str, int] = {}
        try:
            self._graph_sha256 = file_sha256(self.graph)
        except OSError:
            self._graph_sha256 = ""            # ONNX Runtime says why it cannot read it
        found = passed_checks.recorded(GRAPH_CHECK, self._graph_sha256) if self._graph_sha256 else None
        width = (found or {}).get("width")
        self.dimension = width * len(self.stack.pooling_modes) if type(width) is int and width > 0 else None
        if self.dimension is None:
            self.dimension = int(self.encode_batch(["dimension"]).shape[1])
            if self._graph_sha256:
                passed_checks.remember(GRAPH_CHECK, self._graph_sha256,
                                       {"width": self.dimension // len(self.stack.pooling_modes)})

    def _opened(self):
        """The ONNX Runtime session, opened on first use: at load for a graph not checked before
        (`passed_checks`), else when the run first encodes (a run whose texts are all in the
        embedding cache opens none, ~0.3 s of CPU for the built-in model).

        Raises
        ------
        ModelError
            When ONNX Runtime cannot load the graph, or its inputs or outputs are not a text
            model's.
        """
        with self._session_lock:
            if self._session is not None:
                return self._session
            import onnxruntime

            options = onnxruntime.SessionOptions()
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            # 0: ONNX Runtime's default (one per core); int8 runs texts alone, one per thread (`pooled`)
            options.intra_op_num_threads = 1 if self.precision == "int8" else self._threads
            try:
                session = onnxruntime.InferenceSession(str(self.graph), options,
                                                       providers=["CPUExecutionProvider"])
            except Exception as exc:
                raise ModelError(f"ONNX Runtime cannot load {self.graph}: {exc}. " + GRAPH_FIX) from exc
            self._inputs = {i.name: (np.int32 if i.type == "tensor(int32)" else np.int64)
                            for i in session.get_inputs()}
            unknown = set(self._inputs) - {"input_ids", "attention_mask", "token_type_ids"}
            if "input_ids" not in self._inputs or unknown:
                raise ModelError(f"{self.graph} takes inputs {sorted(self._inputs)}; the ONNX engine feeds "
                                 "input_ids, attention_mask and token_type_ids only. " + _TORCH_FIX)
            outputs = session.get_outputs()
            names = [o.name for o in outputs]
            self._output = next((n for n in ("token_embeddings", "last_hidden_state") if n in names),
                                next((o.name for o in outputs if len(o.shape or ()) == 3), None))
            if self._output is None:
                raise ModelError(f"{self.graph} has no token-embedding output (names: {names}).")
            self._session = session
            return session

    @property
    def _plain(self):
        """The tokenizer without truncation or padding (token counts and spans, prompt lengths),
        made on first use (~0.1 s): a run whose texts are all in the embedding cache needs none."""
        with self._plain_lock:
            if self._plain_tokenizer is None:
                from tokenizers import Tokenizer

                plain = Tokenizer.from_str(self._batched.to_str())
                plain.no_truncation()
                plain.no_padding()
                self._plain_tokenizer = plain
            return self._plain_tokenizer

    def _prompt_length(self, prompt: str) -> int:
        """Tokens of `prompt` with the special tokens around it, less a trailing special one
        (sentence-transformers' ``prompt_length``)."""
        if prompt not in self._prompt_lengths:
            ids = self._plain.encode(prompt).ids
            self._prompt_lengths[prompt] = len(ids) - (1 if ids and ids[-1] in self._special_ids else 0)
        return self._prompt_lengths[prompt]

    def encode_batch(self, texts: list[str], prompt: str = "") -> np.ndarray:
        """Embed `texts` as sentence-transformers would, with `prompt` put before each (left out
        of pooling when the Pooling module has ``include_prompt: false``).

        Returns
        -------
        ndarray of shape (len(texts), dimension), float32

        Raises
        ------
        ModelError
            When the graph fails (`token_embeddings`), or a vector is all zero or not finite.
        """
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        prompt = str(prompt or "")
        encodings = self._batched.encode_batch([prompt + str(t) for t in texts])
        arrays = {"input_ids": np.array([e.ids for e in encodings]),
                  "attention_mask": np.array([e.attention_mask for e in encodings]),
                  "token_type_ids": np.array([e.type_ids for e in encodings])}
        prompt_length = self._prompt_length(prompt) if prompt and not self.stack.include_prompt else 0
        vectors = self.pooled(arrays, prompt_length)
        if not (np.isfinite(vectors).all() and np.abs(vectors).max(axis=1).all()):
            raise ModelError(f"{self.graph} gives sentence vectors that are all zero or not finite (its token "
                             "embeddings are zero, or overflow when pooled), so its numbers cannot be used. "
                             + GRAPH_FIX)
        if self.dimension is not None and vectors.shape[1] != self.dimension:
            raise ModelError(f"{self.graph} gives {vectors.shape[1]}-dimensional sentence vectors, not the "
                             f"{self.dimension} recorded when it was checked "
                             f"({passed_checks.entry_path(GRAPH_CHECK, self._graph_sha256)}). "
                             "Fix: delete that record; calibsim checks the graph again on the next load.")
        return vectors

    def pooled(self, arrays: dict, prompt_length: int = 0) -> np.ndarray:
        """Sentence vectors (`pool`) of the token-id `arrays` (see `token_embeddings`).

        float32 runs the batch at once. int8 runs each text alone, without padding, texts spread
        over one thread per core (`threads`): its activations are quantised with one scale per
        run, so in a batch a text's vector would move (up to ~0.04 in cosine) with the texts
        beside it and its padding. Alone, the same text always gives the same vector, at about
        batched int8's CPU time (benchmarks/precision.py).
        """
        if self.precision != "int8":
            return pool(self.token_embeddings(arrays), arrays["attention_mask"], self.stack, prompt_length)

        def alone(row: int) -> np.ndarray:
            keep = np.asarray(arrays["attention_mask"][row]) > 0
            one = {name: np.asarray(values[row])[keep][None, :] for name, values in arrays.items()}
            return pool(self.token_embeddings(one), one["attention_mask"], self.stack, prompt_length)

        rows = range(len(arrays["input_ids"]))
        workers = min(len(rows), self._threads or os.cpu_count() or 1)
        if workers < 2:
            return np.concatenate([alone(row) for row in rows])
        with ThreadPoolExecutor(workers, thread_name_prefix="calibsim-int8") as runs:
            return np.concatenate(list(runs.map(alone, rows)))

    def token_embeddings(self, arrays: dict) -> np.ndarray:
        """The graph's token embeddings for the token-id `arrays` (``input_ids``, ``attention_mask``,
        ``token_type_ids``, each (batch, tokens)), refused unless finite and (batch, tokens, dim).

        Raises
        ------
        ModelError
            When ONNX Runtime fails, or the output has another shape or non-finite values.
        """
        session = self._opened()
        feed = {name: np.asarray(arrays[name]).astype(dtype) for name, dtype in self._inputs.items()}
        try:
            tokens = np.asarray(session.run([self._output], feed)[0], dtype=np.float32)
        except Exception as exc:
            raise ModelError(f"ONNX Runtime failed to run {self.graph}: {type(exc).__name__}: {exc}. "
                             + _TORCH_FIX) from exc
        if tokens.ndim != 3 or tokens.shape[:2] != feed["input_ids"].shape:
            raise ModelError(f"{self.graph} returned token embeddings of shape {tokens.shape} for "
                             f"{feed['input_ids'].shape} tokens; a (batch, tokens, dimension) tensor is "
                             "needed. " + _TORCH_FIX)
        if not np.isfinite(tokens).all():
            raise ModelError(f"{self.graph} returned NaN or infinite values, so its numbers cannot be used. "
                             + _TORCH_FIX)
        return tokens

    def token_counts(self, texts: list[str]) -> np.ndarray:
        """Tokens each text has before truncation, special tokens included.

        Returns
        -------
        ndarray of shape (len(texts),), int64
        """
        encodings = self._plain.encode_batch([str(t) for t in texts]) if texts else []
        return np.array([len(e.ids) for e in encodings], dtype=np.int64)

    def token_spans(self, texts: list[str]) -> list[np.ndarray]:
        """Character span ``(start, end)`` of every token of each text, special tokens left out.

        Returns
        -------
        list of ndarray of shape (n_tokens, 2), int64
        """
        encodings = self._plain.encode_batch([str(t) for t in texts], add_special_tokens=False) if texts else []
        return [np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2) for e in encodings]

    def known_token_counts(self, texts: list[str]) -> np.ndarray:
        """Tokens of each text that are neither special nor unknown (`readability`).

        Returns
        -------
        ndarray of shape (len(texts),), int64
        """
        return known_token_counts(self._plain, texts, unknown_token_ids(self._plain))
