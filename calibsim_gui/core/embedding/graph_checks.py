"""Checks of an ONNX graph file before ONNX Runtime runs it, and of its weights against a model's.

`check_graph_file` reads the graph's structure only (no weights): inputs and outputs the ONNX
engine can feed and read, and external-data files inside the model folder. `initializer_mismatches`
compares the graph's weights with the model's own, which `onnx_export.check_folder_graph` does
before it compares outputs.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PureWindowsPath

import numpy as np

from calibsim_gui.core.embedding.file_digests import file_sha256s
from calibsim_gui.core.errors import ModelError
from calibsim_gui.core.io.atomic import write_text_atomic

GRAPH_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
TOKEN_OUTPUTS = ("token_embeddings", "last_hidden_state")
_INT_TYPES = {6: "int32", 7: "int64"}       # onnx.TensorProto.INT32, INT64
_FLOAT = 1                                    # onnx.TensorProto.FLOAT
GRAPH_FIX = "Fix: use the torch engine (--engine torch), or delete the graph so that calibsim exports its own."


def check_graph_file(graph, folder) -> None:
    """Refuse a graph the ONNX engine cannot run safely, before ONNX Runtime opens it.

    Inputs must be among `GRAPH_INPUTS` (``input_ids`` included), int64 or int32, of rank 2; a
    token-embedding output (`TOKEN_OUTPUTS`, or the only rank-3 one) must be float32 of rank 3;
    every external-data file must be a relative path that stays inside `folder`.

    Raises
    ------
    ModelError
        Naming the graph, what is wrong and the fix.
    """
    import onnx

    graph = Path(graph)
    try:
        model = onnx.load(str(graph), load_external_data=False)
    except Exception as exc:
        raise ModelError(f"{graph} is not a readable ONNX graph ({type(exc).__name__}: {exc}). " + GRAPH_FIX) from exc
    _check_external_data(model, graph, Path(folder))
    weights = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in weights]
    names = [i.name for i in inputs]
    if "input_ids" not in names or set(names) - set(GRAPH_INPUTS):
        raise ModelError(f"{graph} takes inputs {sorted(names)}; the ONNX engine feeds input_ids, attention_mask "
                         "and token_type_ids only. " + GRAPH_FIX)
    for value in inputs:
        kind, rank = _tensor_type(value)
        if kind not in _INT_TYPES or rank not in (None, 2):
            raise ModelError(f"{graph}: input {value.name} is {_describe(kind, rank)}, not a 2-D int64 or int32 "
                             "tensor (batch, tokens). " + GRAPH_FIX)
    outputs = {o.name: _tensor_type(o) for o in model.graph.output}
    name = next((n for n in TOKEN_OUTPUTS if n in outputs), None)
    name = name or next(iter([n for n, (_, rank) in outputs.items() if rank == 3][:1]), None)
    if name is None:
        raise ModelError(f"{graph} has no token-embedding output (outputs: {sorted(outputs)}). " + GRAPH_FIX)
    kind, rank = outputs[name]
    if kind != _FLOAT or rank not in (None, 3):
        raise ModelError(f"{graph}: output {name} is {_describe(kind, rank)}, not a 3-D float32 tensor "
                         "(batch, tokens, dimension). " + GRAPH_FIX)


def _tensor_type(value) -> tuple[int, int | None]:
    tensor = value.type.tensor_type
    return tensor.elem_type, (len(tensor.shape.dim) if tensor.HasField("shape") else None)


def _describe(kind: int, rank: int | None) -> str:
    import onnx

    dtype = onnx.TensorProto.DataType.Name(kind).lower() if kind in onnx.TensorProto.DataType.values() else "?"
    return f"a {rank if rank is not None else '?'}-D {dtype} tensor"


def _all_tensors(graph):
    """Initializers and constant tensors of `graph` and its sub-graphs."""
    yield from graph.initializer
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                yield from _all_tensors(sub)


def _check_external_data(model, graph: Path, folder: Path) -> None:
    root = os.path.realpath(folder)
    for tensor in _all_tensors(model.graph):
        if tensor.data_location != 1:               # onnx.TensorProto.EXTERNAL
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        windows = PureWindowsPath(location)
        target = os.path.realpath(graph.parent / location)
        if (not location or windows.anchor or location.startswith("/") or ".." in windows.parts
                or os.path.commonpath([root, target]) != root):
            raise ModelError(f"{graph}: the weights of {tensor.name} are in {location!r}, outside the model folder "
                             f"{folder}; calibsim reads a graph's external data only from inside its folder. " + GRAPH_FIX)
        fields = {e.key: e.value for e in tensor.external_data}
        if os.path.exists(target) and not os.path.isfile(target):      # a FIFO would block its reader
            raise ModelError(f"{graph}: the weights of {tensor.name} are in {location!r}, which is not a regular "
                             "file but a folder, named pipe (FIFO), socket or device; calibsim reads external "
                             f"data only from regular files (in {graph.parent}). " + GRAPH_FIX)
        try:
            needed = int(fields.get("offset") or 0) + int(fields.get("length") or 0)
            size = os.stat(target).st_size if os.path.isfile(target) else None
        except (ValueError, OSError):
            needed, size = 0, None
        if size is None or size < needed:
            raise ModelError(f"{graph}: the weights of {tensor.name} are in {location!r}, which "
                             + ("is missing" if size is None else f"holds {size:,} bytes, not the {needed:,} "
                                "the graph reads") + f" (in {graph.parent}). " + GRAPH_FIX)


def graph_digest(graph) -> str:
    """sha256 over the bytes of the ONNX file `graph` and of its external-data files (in name
    order), so one digest names everything ONNX Runtime reads; the locations are not checked
    here (`check_graph_file` does that).

    Raises
    ------
    ModelError
        When a file cannot be read.
    """
    import onnx

    graph = Path(graph)
    digest = hashlib.sha256()
    try:
        for path in [graph] + [graph.parent / location for location in external_locations(graph)]:
            digest.update(path.name.encode("utf-8") + b"\0")
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    except Exception as exc:
        raise ModelError(f"Cannot read the ONNX graph {graph} ({type(exc).__name__}: {exc}). " + GRAPH_FIX) from exc
    return digest.hexdigest()


def external_locations(graph) -> list[str]:
    """The external-data files the ONNX file `graph` names, relative to its folder, sorted."""
    import onnx

    model = onnx.load(str(graph), load_external_data=False)
    return sorted({next((e.value for e in t.external_data if e.key == "location"), "")
                   for t in _all_tensors(model.graph) if t.data_location == 1})


RECORD_SUFFIX = ".sha256.json"
"""Beside a graph calibsim wrote into its graph cache: the sha256 of the graph and of its
external-data files, recorded when it was written (`record_graph`) and checked before each load
(`recorded_graph_problem`)."""
_RECORD_TAG = "calibsim graph digest 1"


def record_path(graph) -> Path:
    return Path(str(graph) + RECORD_SUFFIX)


def record_graph(graph) -> None:
    """Record the sha256 of `graph` and its external-data files, which calibsim just wrote.

    Raises
    ------
    WriteError
        When the record cannot be written (the graph would be refused at its next load).
    """
    graph = Path(graph)
    names = [graph.name, *external_locations(graph)]
    digests = file_sha256s([graph.parent / name for name in names])
    write_text_atomic(record_path(graph), json.dumps({"tag": _RECORD_TAG, "files": dict(zip(names, digests))}) + "\n")


def recorded_graph_problem(graph) -> str | None:
    """Why the cached `graph` is not the one calibsim wrote (missing, no record of its digest,
    or bytes that differ from the record), or None when its files are the ones recorded. The
    digests come from `file_digests` (a file whose stat data is unchanged is not read again)."""
    graph = Path(graph)
    if not graph.is_file():
        return "it is missing"
    try:
        entry = json.loads(record_path(graph).read_text(encoding="utf-8"))
        files = entry["files"] if entry.get("tag") == _RECORD_TAG else None
        names = [str(name) for name in files]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return f"no digest of it was recorded when it was written ({record_path(graph).name} is missing or unreadable)"
    if graph.name not in names or any("/" in n or "\\" in n or n.startswith(".") for n in names):
        return f"its record {record_path(graph).name} is not one calibsim writes"
    try:
        digests = file_sha256s([graph.parent / name for name in names])
    except OSError as exc:
        return f"its files cannot be read ({exc})"
    changed = [name for name, digest in zip(names, digests) if files[name] != digest]
    if changed:
        return (f"its bytes ({', '.join(changed)}) differ from the sha256 recorded when calibsim wrote it "
                "(swapped or damaged)")
    return None


def initializer_mismatches(graph, weights: dict) -> list[str]:
    """Names of the graph's float initializers that have a counterpart in `weights` (a weight
    of the same shape, or the transposed shape of a matrix) but equal none of them.

    Parameters
    ----------
    graph : Path
        An ONNX file whose external data (if any) was checked by `check_graph_file`.
    weights : dict of str -> ndarray
        The model's own float32 weights.
    """
    import onnx
    from onnx import numpy_helper

    digests: dict[tuple, set[bytes]] = {}
    for array in weights.values():
        array = np.asarray(array, dtype=np.float32)
        for form in ([array, array.T] if array.ndim == 2 else [array]):
            digests.setdefault(form.shape, set()).add(_digest(form))
    model = onnx.load(str(graph))
    return [init.name for init in model.graph.initializer
            if init.data_type == _FLOAT and tuple(init.dims) in digests
            and _digest(numpy_helper.to_array(init)) not in digests[tuple(init.dims)]]


def _digest(array: np.ndarray) -> bytes:
    return hashlib.sha256(np.ascontiguousarray(array, dtype=np.float32).tobytes()).digest()


def probe_ids(vocab_size: int, length: int) -> np.ndarray:
    """Token ids in rows of `length` that use every id below `vocab_size` at least once (the last
    row is filled up from the start), so a probe on them reads every row of the embedding matrix.

    Returns
    -------
    ndarray of shape (ceil(vocab_size / length), length), int64
    """
    rows = -(-vocab_size // length)
    return np.resize(np.arange(vocab_size, dtype=np.int64), rows * length).reshape(rows, length)
