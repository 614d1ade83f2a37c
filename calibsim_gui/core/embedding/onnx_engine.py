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
from functools import partial
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
from calibsim_gui.core.embedding.prompts import PromptSettings, choose_prompts
from calibsim_gui.core.embedding.tokenized import TokenizedEmbedder
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


def read_module_stack(folder, who: str = "The ONNX engine", fix: str = _TORCH_FIX) -> ModuleStack:
    """The Transformer -> Pooling -> (Normalize) stack of `folder`, refusing any other stack
    (`who`, the engine, and `fix` name the refusal).

    Raises
    ------
    ModelError
        When the folder has modules the ONNX engine does not reproduce (Dense layers, a pooling
        mode such as weightedmean or lasttoken, modules after normalisation), with the fix.
    """
    folder = Path(folder)
    modules = module_tree(folder)           # module paths inside the folder, nested modules too
    if not modules:
        raise ModelError(f"{who} needs {folder / 'modules.json'} to know the model's pooling. " + fix)
    kinds = [module_class(kind) or str(kind) for _, kind in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ModelError(f"{who} reproduces Transformer, Pooling and Normalize modules only; "
                         f"{folder} has {', '.join(k or '?' for k in kinds)}. " + fix)
    transformer_dir = folder / modules[0][0]
    pooling = json_dict(folder / modules[1][0] / "config.json")
    modes = pooling.get("pooling_mode")
    if modes is None:
        modes = [mode for key, mode in _LEGACY_POOLING_KEYS.items() if pooling.get(key)] or ["mean"]
    modes = (modes,) if isinstance(modes, str) else tuple(str(m) for m in modes)
    unknown = [m for m in modes if m not in _POOLING_MODES]
    if unknown or not modes:
        raise ModelError(f"{who} cannot pool with {', '.join(unknown) or 'no mode'} "
                         f"({folder / modules[1][0]}). " + fix)
    st_config = json_dict(transformer_dir / "sentence_bert_config.json")
    max_len = int_or_none(st_config.get("max_seq_length"))
    if max_len is None:     # sentence-transformers caps the tokenizer's limit at the positions
        limits = [int_or_none(json_dict(transformer_dir / "tokenizer_config.json").get("model_max_length")),
                  int_or_none(json_dict(transformer_dir / "config.json").get("max_position_embeddings"))]
        max_len = min((n for n in limits if n and n > 0), default=None)
    return ModuleStack(pooling_modes=modes, include_prompt=pooling.get("include_prompt", True) is not False,
                       normalize=len(kinds) == 3, max_seq_length=max_len,
                       do_lower_case=st_config.get("do_lower_case") is True, tokenizer_dir=transformer_dir)


def onnx_refusal(folder, who: str = "The ONNX engine", fix: str = _TORCH_FIX) -> str | None:
    """Why the ONNX engine (or `who`, another engine that runs a graph on token ids) cannot
    reproduce the model in `folder` (its modules, no tokenizer.json), or None when it can
    (`choose_engine`'s ``auto`` then uses torch for it)."""
    try:
        tokenizer = read_module_stack(folder, who, fix).tokenizer_dir / "tokenizer.json"
    except ModelError as exc:
        return str(exc)
    if not tokenizer.is_file():
        return f"{who} needs {tokenizer} (a fast tokenizer). " + fix
    return None


def pool(token_embeddings, attention_mask, stack: ModuleStack, prompt_length: int = 0):
    """Sentence vectors from token embeddings, as sentence-transformers' Pooling and Normalize.

    Runs on numpy arrays (the ONNX engine) or on torch tensors on their device (the torch engine's
    prepared graph, `torch_graph`), with the same operations.

    Parameters
    ----------
    token_embeddings : ndarray or torch.Tensor of shape (n, n_tokens, dim), float32
    attention_mask : ndarray or torch.Tensor of shape (n, n_tokens)
    prompt_length : int
        Leading tokens (the special start token and the prompt) left out of pooling when the
        stack does not include the prompt.

    Returns
    -------
    ndarray or torch.Tensor (as `token_embeddings`) of shape (n, dim * len(stack.pooling_modes)), float32
    """
    if isinstance(token_embeddings, np.ndarray):
        token_embeddings = np.asarray(token_embeddings, dtype=np.float32)
        xp, mask, positions = np, np.asarray(attention_mask, dtype=np.float32).copy(), np.arange
    else:
        import torch

        xp, mask = torch, attention_mask.to(token_embeddings.device, torch.float32, copy=True)
        positions = partial(torch.arange, device=token_embeddings.device)
    if prompt_length and not stack.include_prompt:
        pad = mask.argmax(axis=1)            # left padding before the first real token, if any
        mask[positions(mask.shape[1])[None, :] < (pad + prompt_length)[:, None]] = 0
    vectors = []
    for mode in stack.pooling_modes:
        if mode == "cls":
            vectors.append(token_embeddings[positions(len(mask)), mask.argmax(axis=1)])
        elif mode == "max":
            vectors.append(xp.amax(xp.where(mask[..., None] > 0, token_embeddings, -np.inf), axis=1))
        else:
            total = (token_embeddings * mask[..., None]).sum(axis=1)
            count = xp.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
            vectors.append(total / (count if mode == "mean" else xp.sqrt(count)))
    out = xp.concatenate(vectors, axis=1)
    if stack.normalize:
        out = out / xp.clip(xp.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
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


class OnnxEmbedder(TokenizedEmbedder):
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
        self.graph = Path(graph)
        self.info = info
        self.fingerprint = fingerprint
        self.precision = precision
        self.quantisation = INT8_RECIPE if precision == "int8" else ""
        self.precision_note = precision_note
        self.prompts = choose_prompts(info) if prompts is None else prompts
        self.stack = read_module_stack(info.path) if stack is None else stack
        self.max_seq_length = self.stack.max_seq_length
        self.set_tokenizer(info, self.stack, "The ONNX engine", _TORCH_FIX)

        self._threads = threads
        self._session = None
        self._session_lock = threading.Lock()
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
        arrays = self.token_arrays(texts, prompt)
        prompt_length = self.prompt_length(prompt) if prompt and not self.stack.include_prompt else 0
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
