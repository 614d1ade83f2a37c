"""The model a run starts from, as the command line and the Python API open it: a model folder
or vectors files, after checking the cache folders it will write to. Its references are the
session model's choice (`session.references.chosen`)."""

from __future__ import annotations

from pathlib import Path

from calibsim_gui.core.embedding import models
from calibsim_gui.core.embedding.cache_folder import default_cache_dir, folder_problem
from calibsim_gui.core.embedding.model_folders import resolve_model
from calibsim_gui.core.embedding.onnx_engine import ONNX_DIR_ENV, onnx_cache_dir
from calibsim_gui.core.embedding.prompts import choose_prompts
from calibsim_gui.core.embedding.vectors_file import load_vectors
from calibsim_gui.core.errors import InputError


def open_model(model=None, *, vectors=(), device: str = "auto", engine: str = "auto",
               precision: str = "float32", allow_pickle: bool = False, prompt_name: str | None = None,
               query_prompt: str | None = None, doc_prompt: str | None = None, no_prompt: bool = False,
               trust_folder_graph: bool = False, memory_budget: int | None = None):
    """The embedder of `model` (see `resolve_model`), or of `vectors` files (`load_vectors`).

    Parameters
    ----------
    model : str or None
        Built-in (None), a sentence-transformers folder, or a model in the Hugging Face cache.
    vectors : path or sequence of paths
        Vectors files to read instead of running a model; `model` and the prompts must then be unset.
    device, engine, precision, allow_pickle, trust_folder_graph : see `load_model`.
    prompt_name, query_prompt, doc_prompt, no_prompt : see `choose_prompts`.

    Raises
    ------
    InputError
        When vectors are given with a model or prompts, or int8 is asked of the torch engine.
    ModelError
        When the model cannot be loaded (`load_model`).
    """
    vectors = [vectors] if isinstance(vectors, (str, Path)) else list(vectors or ())
    if vectors:
        prompts = [n for n, v in (("model", model), ("prompt_name", prompt_name), ("query_prompt", query_prompt),
                                  ("doc_prompt", doc_prompt)) if v is not None]
        if prompts:
            raise InputError(f"vectors files are a model of their own: {', '.join(prompts)} cannot apply.",
                             fix="give either vectors (--vectors) or a model (--model), and embed with any "
                                 "prompt before saving the vectors")
        return load_vectors(vectors, memory_budget=memory_budget)
    if precision == "int8" and engine == "torch":
        raise InputError("--precision int8 runs on the ONNX engine only, not with --engine torch.",
                         fix="use --engine onnx, or --precision float32")
    info = resolve_model(model)
    prompts = choose_prompts(info, prompt_name=prompt_name, query_prompt=query_prompt, doc_prompt=doc_prompt,
                             no_prompt=no_prompt)
    return models.load_model(info, device=device, precision=precision, allow_pickle=allow_pickle, prompts=prompts,
                             engine=engine, trust_folder_graph=trust_folder_graph)


def check_cache_folders(*, cache: bool = True, onnx: bool = True) -> None:
    """Refuse, before a model is loaded (exporting its graph can take a minute), the embedding
    cache folder (`cache`: one is used) or the ONNX graph folder (`onnx`: the model may run on the
    ONNX engine) when it is a file or cannot be written; the command line and the API check alike.

    Raises
    ------
    InputError
        Naming the folder and the environment variable that moves it.
    """
    folders = [(default_cache_dir(), "embedding cache", "CALIBSIM_CACHE_DIR")] if cache else []
    if onnx:
        folders.append((onnx_cache_dir(), "ONNX graph", ONNX_DIR_ENV))
    for folder, what, env in folders:
        problem = folder_problem(folder)
        if problem:
            raise InputError(f"Cannot open the {what} folder: {problem}.",
                             fix=f"make it a writable folder, or set {env} to one")
