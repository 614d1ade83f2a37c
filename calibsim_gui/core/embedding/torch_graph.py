"""The torch engine's lean path: the model's transformer traced once (TorchScript) and run with
torch and the ``tokenizers`` library only.

Importing sentence-transformers costs seconds (transformers' model loading, torch.distributed,
sympy, scikit-learn: 11 s of a 16.7 s ``calibsim score`` on an H200, #44). The first load of a
model on a device type in a precision loads it through sentence-transformers as before
(`torch_engine.load_torch_model`), traces its transformer (token ids -> token embeddings) with
``torch.jit.trace``, freezes it (weights as constants: it loads 2.5x faster, the same vectors),
saves the graph into `torch_graph_dir` and checks the graph's sentence vectors against
sentence-transformers' (`check_graph`); later loads run the graph (`TorchGraphEmbedder`):
tokenised as the ONNX engine tokenises (`tokenized`), pooled and normalised by the ONNX engine's
`onnx_engine.pool` on the device. TorchScript, not ``torch.export``: loading an exported program
imports sympy (+1.3 s measured on the CPU), loading a TorchScript file nothing beyond torch.

Models the graph cannot reproduce (modules other than Transformer, Pooling and Normalize, no
``tokenizer.json``: `onnx_engine.onnx_refusal`), precision ``auto`` that needs the anchor check, a
graph that fails its check and ``CALIBSIM_TORCH_GRAPH=0`` run through sentence-transformers, the
precision note saying why.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding.cache_folder import default_cache_dir
from calibsim_gui.core.embedding.devices import read_ahead, resolve_device
from calibsim_gui.core.embedding.file_digests import file_sha256
from calibsim_gui.core.embedding.graph_preparation import start_preparation
from calibsim_gui.core.embedding.model_folders import ModelFingerprint, ModelInfo, fingerprint_folder
from calibsim_gui.core.embedding.onnx_engine import ModuleStack, onnx_refusal, pool, read_module_stack
from calibsim_gui.core.embedding.onnx_export import CHECK_SENTENCES, token_embedding_module
from calibsim_gui.core.embedding.prompts import PromptSettings, choose_prompts
from calibsim_gui.core.embedding.tokenized import TokenizedEmbedder
from calibsim_gui.core.embedding.torch_engine import (
    CONFIG_FIX,
    SentenceTransformerEmbedder,
    check_torch_folder,
    load_torch_model,
    precision_choice,
)
from calibsim_gui.core.errors import CalibsimError, ModelError
from calibsim_gui.core.io.atomic import atomic_path, write_text_atomic

TORCH_GRAPH_ENV = "CALIBSIM_TORCH_GRAPH"
"""``0`` runs the torch engine through sentence-transformers on every load (no prepared graph)."""
GRAPH_DIR_ENV = "CALIBSIM_TORCH_GRAPH_DIR"
MAX_GRAPH_DIFF = {"float32": 1e-5, "bfloat16": 2e-3}
"""Largest |difference| of a prepared graph's sentence vectors from sentence-transformers' in the
same precision on `CHECK_SENTENCES`; more and the graph is deleted, not used."""
CHECK_PROMPT = "query: "
WHO = "The torch engine's prepared graph"
FALLBACK = "calibsim runs the model through sentence-transformers instead."
_RECORD_TAG = "calibsim torch graph 2"          # 2: frozen; graphs recorded as 1 are prepared again


def torch_graph_dir() -> Path:
    """``$CALIBSIM_TORCH_GRAPH_DIR`` if set, else ``torch-graphs/`` in the embedding cache folder."""
    env = os.environ.get(GRAPH_DIR_ENV)
    return Path(env).expanduser() if env else default_cache_dir() / "torch-graphs"


def graph_path(fingerprint: ModelFingerprint, device: str, precision: str) -> Path:
    """Where the prepared graph of the model with `fingerprint` on `device`'s type (cpu, cuda,
    mps: a trace holds the device of the tensors it makes) in `precision` is kept."""
    kind = device.partition(":")[0]
    return (torch_graph_dir() / f"{fingerprint.name.replace('/', '--')}-{fingerprint.digest[:32]}"
            / f"{kind}-{precision}.pt")


def _record(graph: Path) -> Path:
    return graph.with_suffix(".json")


def recorded_check(graph: Path, digest: str, device: str, precision: str) -> dict | None:
    """What `check_graph` found when it passed `graph`, if `graph` is still the file it checked,
    for the model with `digest` on `device`'s type in `precision`, under this torch; else None."""
    import torch

    try:
        found = json.loads(_record(graph).read_text(encoding="utf-8"))
        fine = (found["tag"] == _RECORD_TAG and found["model"] == digest and found["torch"] == torch.__version__
                and found["device"] == device.partition(":")[0] and found["precision"] == precision
                and found["max_abs_diff"] <= MAX_GRAPH_DIFF[precision] and type(found["dimension"]) is int
                and found["sha256"] == file_sha256(graph))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if fine else None


class TorchGraphEmbedder(TokenizedEmbedder):
    """A model run from its prepared TorchScript graph, with the interface of
    `torch_engine.SentenceTransformerEmbedder` and its engine name: its vectors equal
    sentence-transformers' within `MAX_GRAPH_DIFF` and share their cache entries and profiles.

    Attributes
    ----------
    fingerprint, info, device, precision, precision_note, dimension, max_seq_length, prompts
        As `SentenceTransformerEmbedder`'s.
    engine : str
        ``"torch"``.
    graph : Path
        The TorchScript file, loaded on first encode (a run whose texts are all in the embedding
        cache loads none).
    """

    engine = "torch"

    def __init__(self, graph, info: ModelInfo, fingerprint: ModelFingerprint, *, device: str, precision: str,
                 precision_note: str, inputs, dimension: int, stack: ModuleStack | None = None,
                 prompts: PromptSettings | None = None):
        self.graph = Path(graph)
        self.info = info
        self.fingerprint = fingerprint
        self.device = device
        self.precision = precision
        self.precision_note = precision_note
        self.inputs = list(inputs)
        self.dimension = int(dimension)
        self.stack = read_module_stack(info.path, WHO, FALLBACK) if stack is None else stack
        self.max_seq_length = self.stack.max_seq_length
        self.prompts = choose_prompts(info) if prompts is None else prompts
        self.set_tokenizer(info, self.stack, WHO, FALLBACK)
        self._module = None
        self._module_lock = threading.Lock()

    def _loaded(self):
        with self._module_lock:
            if self._module is None:
                try:
                    self._module = load_graph(self.graph, self.device)
                except Exception as exc:
                    raise ModelError(f"torch cannot load the prepared graph {self.graph}: {exc}. Fix: delete "
                                     "it; calibsim prepares it again on the next load.") from exc
            return self._module

    def encode_batch(self, texts: list[str], prompt: str = "") -> np.ndarray:
        """Embed `texts` as sentence-transformers would, with `prompt` put before each (left out
        of pooling when the Pooling module has ``include_prompt: false``).

        Returns
        -------
        ndarray of shape (len(texts), dimension), float32
        """
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        import torch

        prompt = str(prompt or "")
        arrays = self.token_arrays(texts, prompt)
        prompt_length = self.prompt_length(prompt) if prompt and not self.stack.include_prompt else 0
        module = self._loaded()
        try:
            # optimized_execution(False): the graph's own ops, as sentence-transformers runs them; TorchScript's
            # profiling executor would fuse them anew (other bits, compile pauses) for each new batch shape
            with torch.inference_mode(), torch.jit.optimized_execution(False):
                tensors = {n: torch.from_numpy(a).to(self.device) for n, a in arrays.items()}
                tokens = module(*(tensors[n] for n in self.inputs)).float()
                vectors = pool(tokens, tensors["attention_mask"], self.stack, prompt_length).cpu().numpy()
        except (RuntimeError, ValueError, IndexError, TypeError) as exc:
            raise ModelError(f"The prepared graph {self.graph} of {self.info.path} failed on a batch of "
                             f"{len(texts)} texts: {type(exc).__name__}: {exc}. {CONFIG_FIX}") from exc
        return np.asarray(vectors, dtype=np.float32)


def load_graph(graph: Path, device: str):
    """`torch.jit.load` of `graph`, a call that holds the interpreter lock throughout (the window
    waits as long): the file is read first, and the load runs on one intra-op thread.

    The load compares its constants some 5,000 times (``aten::equal``), each a parallel region:
    on two threads beside two busy processes the load took 2.5 s, on one 44-120 ms (#44). The
    thread count is this thread's (OpenMP's is per thread) and is given back after."""
    import torch

    read_ahead(graph)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)    # TorchScript, in torch 2.13
            return torch.jit.load(str(graph), map_location=device).eval()
    finally:
        torch.set_num_threads(threads)


def check_graph(embedder: TorchGraphEmbedder, reference: SentenceTransformerEmbedder) -> float:
    """Largest |difference| between the sentence vectors of `embedder` and `reference` on
    `CHECK_SENTENCES`: all in one padded batch, one alone and three together, without a prompt
    and with `CHECK_PROMPT`."""
    texts = list(CHECK_SENTENCES)
    worst = 0.0
    for batch in (texts, texts[:1], texts[2:5]):
        for prompt in ("", CHECK_PROMPT):
            ours, theirs = embedder.encode_batch(batch, prompt), reference.encode_batch(batch, prompt)
            worst = max(worst, float(np.abs(ours - theirs).max()) if ours.shape == theirs.shape else np.inf)
    return worst


def prepare_graph(reference: SentenceTransformerEmbedder, target: Path, stack: ModuleStack) -> TorchGraphEmbedder:
    """Trace `reference`'s transformer on its device in its precision, save it as `target`, and
    return it as a `TorchGraphEmbedder` once `check_graph` passed (a record beside it says so).

    Raises
    ------
    ModelError
        When tracing or saving fails, or the graph's vectors differ from `reference`'s by more
        than `MAX_GRAPH_DIFF` (the graph is then deleted).
    """
    import torch

    try:
        module, names, sample = token_embedding_module(reference)
    except Exception as exc:        # the tokenizers library raises a bare Exception
        raise ModelError(f"Could not tokenise the check sentences with {reference.info.path}: {exc}") from exc
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with torch.no_grad(), warnings.catch_warnings(), atomic_path(target) as out:
            warnings.simplefilter("ignore")      # the tracer's notes on Python branches it fixed
            traced = torch.jit.trace(module, sample, check_trace=False).eval()
            # frozen (weights as constants, one inlined graph): loads in ~27 ms instead of ~70 ms,
            # a call that holds the interpreter lock; optimize_numerics=False: the same vectors
            torch.jit.save(torch.jit.freeze(traced, optimize_numerics=False), str(out))
    except (CalibsimError, OSError, RuntimeError, ValueError, TypeError) as exc:
        raise ModelError(f"Could not trace {reference.info.path} into {target}: {type(exc).__name__}: {exc}") from exc
    embedder = TorchGraphEmbedder(target, reference.info, reference.fingerprint, device=reference.device,
                                  precision=reference.precision, precision_note=reference.precision_note,
                                  inputs=names, dimension=reference.dimension, stack=stack,
                                  prompts=reference.prompts)
    try:
        diff = check_graph(embedder, reference)
    except ModelError as exc:
        target.unlink(missing_ok=True)
        raise ModelError(f"its check failed: {exc}") from exc
    limit = MAX_GRAPH_DIFF[reference.precision]
    if not diff <= limit:
        target.unlink(missing_ok=True)
        raise ModelError(f"its vectors differ from sentence-transformers' by up to {diff:.2g} (more than {limit})")
    found = {"tag": _RECORD_TAG, "model": reference.fingerprint.digest, "torch": torch.__version__,
             "device": reference.device.partition(":")[0], "precision": reference.precision,
             "max_abs_diff": diff, "dimension": reference.dimension, "inputs": names,
             "sha256": file_sha256(target)}
    write_text_atomic(_record(target), json.dumps(found) + "\n")
    return embedder


def noted(note: str, more: str) -> str:
    """`note` (a precision note, ``"float32 (...)"``) with `more` added inside its brackets."""
    return f"{note[:-1]}; {more})" if note.endswith(")") else f"{note} ({more})"


def load_torch_engine(info: ModelInfo, *, device: str = "auto", precision: str = "float32",
                      allow_pickle: bool = False, prompts: PromptSettings | None = None,
                      prepare: str = "now"):
    """The torch engine for `info`'s model: its prepared graph (`TorchGraphEmbedder`, prepared and
    checked on the first load), else sentence-transformers (`load_torch_model`) with the reason
    in its precision note.

    `prepare`: ``"now"`` prepares a missing graph in this load; ``"background"`` (the app)
    loads through sentence-transformers and has it prepared by a child process
    (`graph_preparation`), kept as the embedder's ``graph_preparation``.

    Raises
    ------
    ModelError
        As `load_torch_model`.
    """
    check_torch_folder(info, allow_pickle)
    resolved = resolve_device(device)
    fingerprint = fingerprint_folder(info.path, info.name)
    prompts = choose_prompts(info) if prompts is None else prompts
    choice = precision_choice(precision, resolved, fingerprint.digest)
    refusal = onnx_refusal(info.path, WHO, FALLBACK)
    if os.environ.get(TORCH_GRAPH_ENV, "").strip() == "0" or choice is None or refusal is not None:
        embedder = load_torch_model(info, device=resolved, precision=precision, allow_pickle=allow_pickle,
                                    prompts=prompts)
        if refusal is not None and choice is not None:
            embedder.precision_note = noted(embedder.precision_note, f"sentence-transformers: {refusal}")
        return embedder
    stack = read_module_stack(info.path, WHO, FALLBACK)
    graph = graph_path(fingerprint, resolved, choice[0])
    found = recorded_check(graph, fingerprint.digest, resolved, choice[0])
    if found is not None:
        return TorchGraphEmbedder(graph, info, fingerprint, device=resolved, precision=choice[0],
                                  precision_note=noted(choice[1], "prepared graph"), inputs=found["inputs"],
                                  dimension=found["dimension"], stack=stack, prompts=prompts)
    reference = load_torch_model(info, device=resolved, precision=precision, allow_pickle=allow_pickle,
                                 prompts=prompts)
    if prepare == "background":
        reference.graph_preparation = start_preparation(info.path, resolved, choice[0], graph, allow_pickle)
        if reference.graph_preparation is not None:
            reference.precision_note = noted(reference.precision_note,
                                             "sentence-transformers while its graph is prepared")
        return reference
    try:
        embedder = prepare_graph(reference, graph, stack)
    except ModelError as exc:
        reference.precision_note = noted(reference.precision_note,
                                         f"sentence-transformers: the prepared graph is not used, {exc}")
        return reference
    embedder.precision_note = noted(choice[1], "prepared graph")
    return embedder
