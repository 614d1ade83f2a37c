"""Make ONNX graphs for the ONNX engine: export from torch (checked against it), quantise to int8.

torch is imported inside `export_graph` only; quantisation needs onnxruntime and onnx, not torch.
Every file is written atomically (`calibsim_gui.core.io.atomic`), so an interrupted export leaves
no half-written graph for the next run to load; an export works in a folder named for its process
(`EXPORT_WORK_PREFIX`), and the next export removes those of processes that were killed.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding.devices import import_torch
from calibsim_gui.core.embedding.file_digests import file_sha256
from calibsim_gui.core.embedding.graph_checks import initializer_mismatches, probe_ids, record_path
from calibsim_gui.core.embedding.model_folders import ModelInfo, fingerprint_folder, model_files
from calibsim_gui.core.embedding.onnx_engine import (
    EXPORT_MANIFEST,
    FOLDER_GRAPHS,
    OnnxEmbedder,
    onnx_cache_dir,
    read_module_stack,
)
from calibsim_gui.core.embedding.torch_engine import load_torch_model
from calibsim_gui.core.errors import ModelError
from calibsim_gui.core.io.atomic import atomic_path, write_text_atomic

MAX_EXPORT_DIFF = 1e-5
"""Largest |difference| of an exported graph's embeddings from torch float32's; more is refused."""
MAX_PROBE_DIFF = 1e-4
"""Largest |difference| of a folder graph's token embeddings from torch's on every token id,
relative to the largest |value| (at least 1); more is refused."""
OPSET = 17
CHECK_SENTENCES = (
    "A man is playing a guitar.",
    "Two dogs run through a field of tall grass while their owner watches.",
    "Le chat dort sur le canapé depuis ce matin.",
    "数据中心的冷却系统需要定期维护。",
    "ok",
    "The committee postponed its decision until the auditors had reviewed every account, "
    "because the figures reported in spring did not match the bank statements. " * 12,
)
"""Sentences an export is checked on: short, long (past 256 tokens), non-Latin, in one padded batch."""
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def export_graph(info: ModelInfo, target, *, allow_pickle: bool = False) -> Path:
    """Export `info`'s transformer (token ids -> token embeddings) to the ONNX file `target`.

    The graph is exported with torch's TorchScript exporter, optimised offline by ONNX Runtime,
    then run through `OnnxEmbedder` on `CHECK_SENTENCES` and compared with the torch engine;
    it is kept only if no value differs by more than `MAX_EXPORT_DIFF`.

    Raises
    ------
    ModelError
        When torch is not installed, the export fails, or the graph does not match torch.
    """
    try:
        torch = import_torch()
    except ImportError:
        raise ModelError(f"{info.path} has no ONNX graph and torch is not installed to export one. Fix: "
                         "install torch once (pip install torch), or export the folder with "
                         "scripts/export_onnx.py where torch is installed.") from None
    import onnxruntime

    reference = load_torch_model(info, device="cpu", precision="float32", allow_pickle=allow_pickle)
    module, names, sample = token_embedding_module(reference)
    target = Path(target)
    work = export_work_folder(target.parent)
    try:
        raw, optimised = work / "raw.onnx", work / "model.onnx"
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")      # the tracer's notes on Python branches it fixed
            torch.onnx.export(module, sample, str(raw),
                              input_names=names, output_names=["token_embeddings"], opset_version=OPSET,
                              dynamic_axes={n: {0: "batch", 1: "sequence"} for n in [*names, "token_embeddings"]},
                              dynamo=False)
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(optimised)
        options.log_severity_level = 3
        onnxruntime.InferenceSession(str(raw), options, providers=["CPUExecutionProvider"])
        deduplicate_initializers(optimised)
        diff = graph_difference(info, optimised, reference)
        if not diff <= MAX_EXPORT_DIFF:
            raise ModelError(f"The ONNX export of {info.path} differs from torch by up to {diff:.2g} "
                             f"(more than {MAX_EXPORT_DIFF}), so it was deleted. Fix: use the torch "
                             "engine (--engine torch) for this model.")
        with atomic_path(target) as out:
            os.replace(optimised, out)
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"Could not export {info.path} to ONNX: {type(exc).__name__}: {exc}. "
                         "Fix: use the torch engine (--engine torch) for this model.") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def token_embedding_module(reference) -> tuple:
    """The transformer of `reference` (the torch engine's sentence-transformers model) as a torch
    module from token-id tensors to token embeddings, to export or trace.

    Returns
    -------
    module : torch.nn.Module
        Called with one tensor per name of `names`, in that order.
    names : list of str
        The inputs it takes (of ``input_ids``, ``attention_mask``, ``token_type_ids``).
    sample : tuple of torch.Tensor
        Two of `CHECK_SENTENCES` as one padded batch of those inputs, on `reference`'s device.
    """
    import torch

    transformer = reference._model[0].auto_model.eval()
    tokens = reference._model.tokenizer(list(CHECK_SENTENCES[:2]), padding=True, return_tensors="pt")
    params = inspect.signature(transformer.forward).parameters
    names = [n for n in _INPUTS if n in tokens and n in params]

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = transformer

        def forward(self, *tensors):
            return self.transformer(**dict(zip(names, tensors)))[0]

    return TokenEmbeddings().eval(), names, tuple(tokens[n].to(reference.device) for n in names)


def deduplicate_initializers(graph) -> int:
    """Store each distinct weight of the ONNX file `graph` once (rewritten in place when any
    repeats: nodes that used a copy use the first, in subgraphs too), so the graph is as small as
    its float32 weights; return the bytes saved. The numbers it computes are unchanged."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(graph))
    outputs = {output.name for output in model.graph.output}
    first, renamed, saved = {}, {}, 0
    for tensor in list(model.graph.initializer):
        array = numpy_helper.to_array(tensor)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key in first and tensor.name not in outputs:
            renamed[tensor.name] = first[key]
            model.graph.initializer.remove(tensor)
            saved += array.nbytes
        else:
            first.setdefault(key, tensor.name)
    if renamed:
        for node in _all_nodes(model.graph):
            node.input[:] = [renamed.get(name, name) for name in node.input]
        with atomic_path(graph) as out:
            onnx.save(model, str(out))
    return saved


def _all_nodes(graph):
    """The nodes of an ONNX graph and of the subgraphs in their attributes (If, Loop, Scan)."""
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                yield from _all_nodes(sub)


EXPORT_WORK_PREFIX = ".calibsim-export-"
"""Folders an export works in are named this, then the exporting process's id: an export that
was killed leaves one (about 90 MB of graph for the built-in model), removed by the next export
into the same folder (`remove_stale_exports`)."""


def export_work_folder(parent: Path) -> Path:
    """A new work folder for an export, in `parent` (beside its target: the finished graph is
    renamed into place, never copied across drives), after removing those of killed exports."""
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale_exports(parent)
    return Path(tempfile.mkdtemp(prefix=f"{EXPORT_WORK_PREFIX}{os.getpid()}-", dir=parent))


def remove_stale_exports(parent) -> list[Path]:
    """Remove the export work folders in `parent` whose process no longer runs; return them."""
    import psutil

    removed = []
    for folder in Path(parent).glob(f"{EXPORT_WORK_PREFIX}*"):
        pid = folder.name.removeprefix(EXPORT_WORK_PREFIX).split("-", 1)[0]
        if folder.is_dir() and pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def remove_other_int8_graphs(graph) -> list[Path]:
    """Remove the int8 graphs beside the int8 `graph` in `onnx_cache_dir`, `graph` itself
    kept: int8 graphs of earlier recipes (``model-int8-w7pc-*.onnx``, 23 MB each for the built-in
    model) or quantised from an earlier float32 graph are never loaded again. Return those removed;
    one that cannot be removed (open in another process) stays for the next load."""
    graph = Path(graph)
    removed = []
    for other in graph.parent.glob("model-int8-*.onnx"):
        if other != graph and other.is_file():
            try:
                other.unlink()
                record_path(other).unlink(missing_ok=True)
            except OSError:
                continue
            removed.append(other)
    return removed


def graph_difference(info: ModelInfo, graph, reference) -> float:
    """Largest |difference| between the embeddings of `CHECK_SENTENCES` by the ONNX `graph` and
    by `reference`, the torch engine's float32 `info` model."""
    onnx = OnnxEmbedder(graph, info, reference.fingerprint, stack=read_module_stack(info.path))
    return float(np.abs(onnx.encode_batch(list(CHECK_SENTENCES))
                        - reference.encode_batch(list(CHECK_SENTENCES))).max())


def probe_difference(info: ModelInfo, graph, reference, tokens_per_run: int = 8192) -> float:
    """Largest |difference| between the token embeddings of the ONNX `graph` and of `reference`'s
    transformer on `graph_checks.probe_ids` (every token id of the vocabulary, in rows of the
    model's max length), relative to the largest |value| (at least 1)."""
    import torch

    onnx = OnnxEmbedder(graph, info, reference.fingerprint, stack=read_module_stack(info.path))
    transformer = reference._model[0].auto_model.eval()
    config = transformer.config
    length = min(onnx.max_seq_length or 128, getattr(config, "max_position_embeddings", None) or 512, 128)
    params = inspect.signature(transformer.forward).parameters
    worst = 0.0
    rows, step = probe_ids(int(config.vocab_size), length), max(1, tokens_per_run // length)
    for start in range(0, len(rows), step):
        ids = rows[start:start + step]
        arrays = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        with torch.inference_mode():
            theirs = transformer(**{n: torch.from_numpy(a) for n, a in arrays.items() if n in params})[0]
        theirs = theirs.float().numpy()
        ours = onnx.token_embeddings(arrays)
        worst = max(worst, float(np.abs(ours - theirs).max() / max(1.0, float(np.abs(theirs).max()))))
    return worst


def check_folder_graph(info: ModelInfo, graph, fingerprint, *, allow_pickle: bool = False) -> bool:
    """Check a graph that came with the model folder against its torch weights, once (a note in
    `onnx_cache_dir` remembers the graph and weights that passed).

    The check covers what the graph computes: each float initializer that has a counterpart in
    the weights must equal one (`graph_checks.initializer_mismatches`), the token embeddings on
    ids that cover every row of the embedding matrix must match (`probe_difference`, at most
    `MAX_PROBE_DIFF`), and so must the sentence embeddings of `CHECK_SENTENCES` (`MAX_EXPORT_DIFF`).

    Returns
    -------
    bool
        True when the graph passed (now or before); False when torch is not installed to check it.

    Raises
    ------
    ModelError
        When the graph's weights or numbers are not the model's.
    """
    note = onnx_cache_dir() / "checked" / f"{fingerprint.digest[:32]}-{file_sha256(Path(graph))[:32]}.json"
    if _passed(note):
        return True
    if importlib.util.find_spec("torch") is None:
        return False
    reference = load_torch_model(info, device="cpu", precision="float32", allow_pickle=allow_pickle)
    state = reference._model[0].auto_model.state_dict()
    bad = initializer_mismatches(graph, {k: v.detach().float().cpu().numpy() for k, v in state.items()})
    fix = "Fix: use the torch engine (--engine torch), or delete the graph so that calibsim exports its own."
    if bad:
        raise ModelError(f"The ONNX graph {graph} that came with the model holds weights that are not its torch "
                         f"weights ({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''} equal none of the same "
                         "shape). " + fix)
    probe = probe_difference(info, graph, reference)
    if not probe <= MAX_PROBE_DIFF:
        raise ModelError(f"The ONNX graph {graph} that came with the model differs from its torch weights on the "
                         f"token ids of its vocabulary by up to {probe:.2g} (more than {MAX_PROBE_DIFF}, relative). "
                         + fix)
    diff = graph_difference(info, graph, reference)
    if not diff <= MAX_EXPORT_DIFF:
        raise ModelError(f"The ONNX graph {graph} that came with the model differs from its torch weights by "
                         f"up to {diff:.2g} (more than {MAX_EXPORT_DIFF}). " + fix)
    write_text_atomic(note, json.dumps({"graph": str(graph), "max_abs_diff": diff, "probe_diff": probe}) + "\n")
    return True


def _passed(note: Path) -> bool:
    """Whether `note` is the record `check_folder_graph` writes of a graph that passed (a damaged
    or hand-made one is not: the graph is checked again, #43)."""
    try:
        found = json.loads(note.read_text(encoding="utf-8"))
        return (found["max_abs_diff"] <= MAX_EXPORT_DIFF and found["probe_diff"] <= MAX_PROBE_DIFF
                and type(found["max_abs_diff"]) is float and type(found["probe_diff"]) is float)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def quantize_int8(source, target) -> Path:
    """Write the int8 graph of the fp32 ONNX file `source` to `target` by `INT8_RECIPE`: weights
    quantised per channel to QInt8 in 7 bits (``reduce_range``), activations quantised on the fly
    (``quantize_dynamic``). The same `source` always gives the same bytes.

    Seven-bit weights keep CPUs without VNNI (AVX2 only) from saturating their u8 x s8 products
    (ONNX Runtime's advice); on STS-B test (benchmarks/precision.py) they run as fast as 8-bit
    weights and lose no more Spearman. Static (calibrated, QDQ) quantisation and ONNX Runtime's transformer fusions
    were measured too and were no faster on the CPU (README.md, "int8, measured")."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The graph is already optimised: the quantiser's advice to pre-process it is noise for users.
    advice = _DropMessage("Please consider to run pre-processing")
    logging.getLogger().addFilter(advice)
    try:
        with atomic_path(target) as out:
            quantize_dynamic(str(source), str(out), per_channel=True, reduce_range=True,
                             weight_type=QuantType.QInt8,
                             extra_options={"DefaultTensorType": TensorProto.FLOAT})
    except Exception as exc:
        raise ModelError(f"Could not quantise {source} to int8: {type(exc).__name__}: {exc}. "
                         "Fix: use --precision float32.") from exc
    finally:
        logging.getLogger().removeFilter(advice)
    return Path(target)


class _DropMessage(logging.Filter):
    """Drops log records whose message starts with `prefix`."""

    def __init__(self, prefix: str):
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


def export_folder(info: ModelInfo, out, *, allow_pickle: bool = False) -> Path:
    """Write a model folder that the ONNX engine loads without torch: `info`'s configs and
    tokenizer, its checked graph in ``onnx/model.onnx`` and `EXPORT_MANIFEST`, no torch weights.

    Shipped as the built-in model (the desktop bundle), it keeps the source folder's fingerprint
    (`onnx_engine.shipped_fingerprint` checks the manifest), so profiles built from the source
    model fit it. Anywhere else its graph cannot be checked without weights: it runs only on
    trust, under its own fingerprint (`onnx_engine.unverified_fingerprint`). `out` must not exist yet, or be empty.

    Raises
    ------
    ModelError
        When `out` is not empty, or the export fails (see `export_graph`).
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ModelError(f"{out} already exists and is not an empty folder. Fix: name a new folder.")
    source = Path(info.path)
    fingerprint = fingerprint_folder(source, info.name)
    files = model_files(source)
    building = export_work_folder(out.parent)
    try:
        for rel, file in files:
            if file.suffix not in (".safetensors", ".bin"):
                (building / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(file, building / rel)
        graph = export_graph(info, building / FOLDER_GRAPHS[0], allow_pickle=allow_pickle)
        manifest = {"source": fingerprint.to_dict(), "files": {rel: file_sha256(file) for rel, file in files},
                    "graph_sha256": file_sha256(graph)}
        write_text_atomic(building / EXPORT_MANIFEST, json.dumps(manifest, indent=1) + "\n")
        if out.exists():
            out.rmdir()
        os.replace(building, out)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return out
