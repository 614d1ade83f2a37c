"""The way in: `load_model` chooses an engine (torch or ONNX Runtime) and loads a model folder.

Refusals (code in the folder, pickled weights) come first; torch and onnxruntime are imported
only by the engine that runs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from calibsim_gui.core.embedding import devices, onnx_engine
from calibsim_gui.core.embedding.devices import DEFAULT_PRECISION, ENGINES, PRECISIONS
from calibsim_gui.core.embedding.file_digests import file_sha256
from calibsim_gui.core.embedding.folder_checks import check_model_folder
from calibsim_gui.core.embedding.graph_checks import (
    check_graph_file,
    graph_digest,
    record_graph,
    recorded_graph_problem,
)
from calibsim_gui.core.embedding.model_folders import (
    ModelFingerprint,
    ModelInfo,
    fingerprint_folder,
    has_weights,
    remote_code_refusal,
    resolve_model,
)
from calibsim_gui.core.embedding.onnx_engine import (
    INT8_RECIPE,
    ONNX_PRECISIONS,
    OnnxEmbedder,
    cached_graph,
    folder_graph,
    onnx_refusal,
    read_module_stack,
    shipped_fingerprint,
    unverified_fingerprint,
)
from calibsim_gui.core.embedding.onnx_export import (
    check_folder_graph,
    export_graph,
    quantize_int8,
    remove_other_int8_graphs,
)
from calibsim_gui.core.embedding.prompts import PromptSettings
from calibsim_gui.core.embedding.torch_graph import load_torch_engine
from calibsim_gui.core.errors import ModelError

UNVERIFIED_NOTE = "UNVERIFIED: the model folder's own graph, not checked against the model's weights"
"""In the precision note (so in every output's provenance) of a folder graph run on trust."""


def choose_engine(engine: str = "auto", device: str = "auto", precision: str = DEFAULT_PRECISION) -> str:
    """The engine that `engine` names: ``"torch"`` or ``"onnx"``.

    ``"auto"`` gives ONNX Runtime on the CPU when it is installed and the precision is float32
    or int8, and torch when the device is (or ``auto`` resolves to) cuda or mps, when bfloat16
    or precision ``auto`` is asked, or when onnxruntime is missing. Without torch installed it
    gives ONNX whatever the precision (the desktop bundle; ``auto`` precision is float32 there).

    Raises
    ------
    ModelError
        When the engine is unknown, or cannot run with that device or precision.
    """
    if engine not in ENGINES:
        raise ModelError(f"Unknown engine {engine!r}. Use {', '.join(ENGINES)}.")
    if precision not in PRECISIONS:
        raise ModelError(f"Unknown precision {precision!r}. Use {', '.join(PRECISIONS)}.")
    device = (device or "auto").strip().lower()
    no_torch = importlib.util.find_spec("torch") is None
    if engine == "auto":
        if onnx_engine.onnxruntime_missing() is not None:
            engine = "torch"
        elif no_torch:
            engine = "onnx"
        elif precision in ("auto", "bfloat16"):
            engine = "torch"
        elif device == "auto":
            engine = "onnx" if devices.cpu_only_torch() or devices.resolve_device("auto") == "cpu" else "torch"
        else:
            engine = "onnx" if device == "cpu" else "torch"
    if engine == "torch" and no_torch:
        raise ModelError("This calibsim has no torch: it runs models with ONNX Runtime on the CPU. "
                         "Fix: use --engine onnx (or auto); for GPUs, install calibsim from source.")
    if engine == "onnx" and device not in ("auto", "cpu"):
        raise ModelError(f"The ONNX engine runs on the CPU, not {device}. "
                         "Fix: use --device cpu, or --engine torch for the GPU.")
    if engine == "torch" and precision == "int8":
        raise ModelError("int8 runs on the ONNX engine only. Fix: add --engine onnx (CPU).")
    if engine == "onnx" and precision == "bfloat16":
        raise ModelError("bfloat16 runs on the torch engine only. Fix: add --engine torch, or use "
                         "--precision float32 on the ONNX engine.")
    return engine


def load_model(info_or_spec, *, device: str = "auto", precision: str = DEFAULT_PRECISION,
               allow_pickle: bool = False, prompts: PromptSettings | None = None,
               engine: str = "auto", trust_folder_graph: bool = False, prepare_graph: str = "now"):
    """Load a model offline, after refusing folders that would run code or unpickle data.

    Parameters
    ----------
    info_or_spec : ModelInfo or str or None
        A model from `discover_models`, or anything `resolve_model` accepts.
    device : str
        See `resolve_device`.
    precision : {"float32", "auto", "bfloat16", "int8"}
        ``"float32"`` (the default) gives the same numbers on every machine. ``"auto"`` trades
        that for speed: bfloat16 where the device has native bfloat16 (`bfloat16_support`)
        and the model keeps its accuracy (the built-in model was verified on STS-B; any other
        model must move the built-in anchor pairs' cosines by at most
        `BFLOAT16_MAX_ANCHOR_CHANGE`, checked at load), else float32. ``"int8"``: the ONNX
        engine's dynamically quantised graph (never picked by ``"auto"``).
    allow_pickle : bool
        Allow weights stored only as pickles (``*.bin``), which can run code when loaded.
    prompts : PromptSettings, optional
        The prompts to encode with; defaults to the folder's (`choose_prompts`).
    engine : {"auto", "torch", "onnx"}
        See `choose_engine`; ``auto`` also uses torch for a folder the ONNX engine cannot
        reproduce (`onnx_engine.onnx_refusal`). Both engines give one fingerprint, so profiles
        built with one fit the other (a folder graph run on trust has its own).
    trust_folder_graph : bool
        Run a folder's own ONNX graph that cannot be checked against its weights (no torch, or
        no weights): under its own fingerprint, with "unverified" in its precision note.
    prepare_graph : {"now", "background"}
        The torch engine's missing prepared graph: traced in this load, or (the app, whose window
        must keep answering) in a child process while this load uses sentence-transformers
        (`torch_graph.load_torch_engine`).

    Returns
    -------
    SentenceTransformerEmbedder, calibsim_gui.core.embedding.torch_graph.TorchGraphEmbedder (the
    torch engine's prepared graph: `torch_graph.load_torch_engine`) or
    calibsim_gui.core.embedding.onnx_engine.OnnxEmbedder

    Raises
    ------
    ModelError
        If the folder needs remote code, has pickle-only weights without `allow_pickle`, a
        tokenizer or max_seq_length that does not fit its config (`check_model_folder`), the
        device is unusable, the precision or engine unknown or not usable together, or the
        model fails to load.
    """
    chosen = choose_engine(engine, device, precision)
    info = info_or_spec if isinstance(info_or_spec, ModelInfo) else resolve_model(info_or_spec)
    if info.needs_remote_code:
        raise ModelError(remote_code_refusal(info))
    check_model_folder(info)
    if chosen == "onnx":
        if engine == "auto" and precision != "int8" and onnx_refusal(info.path) is not None:
            return load_model(info, device=device, precision=precision, allow_pickle=allow_pickle,
                              prompts=prompts, engine="torch", prepare_graph=prepare_graph)
        return load_onnx_model(info, precision="float32" if precision == "auto" else precision,
                               prompts=prompts, allow_pickle=allow_pickle, trust_folder_graph=trust_folder_graph)
    return load_torch_engine(info, device=device, precision=precision, allow_pickle=allow_pickle,
                             prompts=prompts, prepare=prepare_graph)


def load_onnx_model(info: ModelInfo, *, precision: str = "float32", prompts: PromptSettings | None = None,
                    allow_pickle: bool = False, trust_folder_graph: bool = False) -> OnnxEmbedder:
    """The ONNX engine for `info`'s model, exporting (and quantising) its graph on first use.

    Without a graph in the folder, the graph exported by `onnx_export.export_graph` into
    `onnx_cache_dir` (torch needed once) runs under the folder's fingerprint, once its bytes are
    the ones recorded when it was written (`graph_checks.recorded_graph_problem`); a swapped or
    damaged one is exported again (its precision note says so), or refused without torch. A graph that came
    with the folder (`FOLDER_GRAPHS`) is first checked as a file (`graph_checks.check_graph_file`);
    it runs under the folder's fingerprint only once checked against the folder's torch weights
    (`onnx_export.check_folder_graph`), or for the built-in model shipped without weights
    (`onnx_engine.shipped_fingerprint`). Otherwise it runs only with `trust_folder_graph`, under
    `onnx_engine.unverified_fingerprint`, its precision note saying "unverified".

    Raises
    ------
    ModelError
        When onnxruntime is missing, the precision is not float32 or int8, the folder's modules
        cannot be reproduced, no graph exists and torch cannot export one, or the folder's graph
        is refused or cannot be checked and is not trusted.
    """
    missing = onnx_engine.onnxruntime_missing()
    if missing:
        raise ModelError(f"The ONNX engine cannot run: {missing}. Fix: pip install onnxruntime, "
                         "or use the torch engine (--engine torch).")
    if precision not in ONNX_PRECISIONS:
        raise ModelError(f"The ONNX engine computes in {' or '.join(ONNX_PRECISIONS)}, not {precision}. "
                         "Fix: use --precision float32 or int8, or the torch engine for bfloat16.")
    if info.needs_remote_code:
        raise ModelError(remote_code_refusal(info))
    stack = read_module_stack(info.path)
    graph = folder_graph(info.path)
    unverified, remade = "", ""
    if graph is None:
        fingerprint = fingerprint_folder(info.path, info.name)
        graph = cached_graph(fingerprint)
        problem = recorded_graph_problem(graph)
        if problem is not None:
            if graph.is_file() and importlib.util.find_spec("torch") is None:
                raise ModelError(f"The cached ONNX graph {graph} cannot be used: {problem}, and torch is not "
                                 "installed to export it again. Fix: delete the graph and run once where torch "
                                 "is installed (pip install torch), or point CALIBSIM_ONNX_DIR at a folder of "
                                 "graphs calibsim exported.")
            export_graph(info, graph, allow_pickle=allow_pickle)
            record_graph(graph)
            remade = "" if problem == "it is missing" else f"; the cached graph was exported again: {problem}"
    else:
        check_graph_file(graph, info.path)
        fingerprint = shipped_fingerprint(info)
        if fingerprint is None:
            weights = has_weights(Path(info.path))
            fingerprint = fingerprint_folder(info.path, info.name)
            if not (weights and check_folder_graph(info, graph, fingerprint, allow_pickle=allow_pickle)):
                if not trust_folder_graph:
                    raise ModelError(_unchecked_graph(graph, weights))
                fingerprint, unverified = unverified_fingerprint(info, graph), UNVERIFIED_NOTE
    note = f"float32 (ONNX Runtime; {unverified or 'equal to torch float32 within 1e-5'}{remade})"
    if precision == "int8":
        # keyed by the float32 graph's bytes too: a folder's own graph is not in the fingerprint
        source, graph = graph, cached_graph(fingerprint, f"int8-{INT8_RECIPE}-{file_sha256(graph)[:16]}")
        problem = recorded_graph_problem(graph)
        if problem is not None:
            quantize_int8(source, graph)
            record_graph(graph)
            remade += "" if problem == "it is missing" else f"; the cached int8 graph was made again: {problem}"
        remove_other_int8_graphs(graph)     # of earlier recipes or float32 graphs: never loaded again
        note = ("int8 (ONNX Runtime, dynamically quantised, text by text: scores move by up to ~0.06"
                + (f"; {unverified}" if unverified else "") + f"{remade})")
    return OnnxEmbedder(graph, info, fingerprint, stack=stack, precision=precision, precision_note=note,
                        prompts=prompts)


def prepared_graph(embedder: OnnxEmbedder) -> dict:
    """What another process (a Ray worker) needs to run `embedder`'s prepared, checked graph
    without exporting or checking it again (`load_prepared_graph`): JSON-safe."""
    return {"graph": str(embedder.graph), "graph_sha256": graph_digest(embedder.graph),
            "folder_sha256": fingerprint_folder(embedder.info.path).digest,
            "fingerprint": embedder.fingerprint.to_dict(), "precision": embedder.precision,
            "precision_note": embedder.precision_note}


def load_prepared_graph(info_or_spec, prepared: dict, *, prompts: PromptSettings | None = None,
                        threads: int = 0) -> OnnxEmbedder:
    """The ONNX engine on a graph `prepared_graph` described in another process, once this
    machine's graph and model folder are checked to be the same bytes; `threads`: ONNX Runtime's
    threads (0: its default, one per core).

    Raises
    ------
    ModelError
        When the graph or the model folder here differs from the one described, or is missing.
    """
    info = info_or_spec if isinstance(info_or_spec, ModelInfo) else resolve_model(info_or_spec)
    graph = Path(prepared["graph"])
    fix = ("Fix: the model folder and the prepared graph must be the same files at the same paths on every "
           "node (a shared filesystem; set CALIBSIM_ONNX_DIR to a shared folder for exported graphs).")
    if not graph.is_file():
        raise ModelError(f"The prepared ONNX graph {graph} is missing on this machine. " + fix)
    if graph_digest(graph) != prepared["graph_sha256"]:
        raise ModelError(f"The ONNX graph {graph} on this machine differs from the one prepared and checked. " + fix)
    if fingerprint_folder(info.path).digest != prepared["folder_sha256"]:
        raise ModelError(f"The model folder {info.path} on this machine differs from the one the graph "
                         f"{graph} was prepared for. " + fix)
    return OnnxEmbedder(graph, info, ModelFingerprint.from_dict(prepared["fingerprint"]),
                        stack=read_module_stack(info.path), precision=prepared["precision"],
                        precision_note=prepared["precision_note"], prompts=prompts, threads=threads)


def _unchecked_graph(graph: Path, weights: bool) -> str:
    why = ("torch is not installed to compare it with the folder's weights" if weights
           else "the folder holds no weights (model.safetensors) to compare it with")
    return (f"The ONNX graph {graph} that came with the model cannot be checked: {why}; calibsim does not "
            "run a graph it has not checked. Fix: install torch (pip install torch) so that calibsim checks "
            "it once, or use the folder with its weights. If you trust the graph, pass --trust-folder-graph (in the "
            "app: tick \"Run a folder's own graph unverified\" on the Model tab): it then runs under its own "
            "fingerprint, and every output says that it is unverified.")
