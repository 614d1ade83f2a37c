"""Hostile model folders (#27, #30): files the fingerprint must see, module types and paths that
are refused before sentence-transformers reads the folder, tokenizers and configs that do not fit
the model. Built from small json-only folders and the fake weights of `make_st_folder`."""

import json
import sys

import pytest

from calibsim_gui.core.embedding import model_folders
from calibsim_gui.core.embedding.model_folders import fingerprint_folder, inspect_model_folder, resolve_model
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.errors import ModelError
from tests.core.test_models import make_st_folder, transformer_in_module_folder, weights_folder


@pytest.fixture(autouse=True)
def _empty_hf_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))


def _write_modules(folder, modules):
    (folder / "modules.json").write_text(json.dumps(
        [{"idx": i, "name": str(i), "path": path, "type": kind} for i, (path, kind) in enumerate(modules)]))


def _router_folder(tmp_path, sub_types, router_path="2_Router"):
    """make_st_folder's model with a Router after pooling whose routes hold `sub_types`
    (model id -> type), each in its own folder with fake weights."""
    folder = make_st_folder(tmp_path / "routed")
    _write_modules(folder, [("", "sentence_transformers.models.Transformer"),
                            ("1_Pooling", "sentence_transformers.models.Pooling"),
                            (router_path, "sentence_transformers.base.modules.router.Router")])
    (folder / router_path).mkdir()
    (folder / router_path / "router_config.json").write_text(json.dumps(
        {"types": sub_types, "structure": {"query": list(sub_types)}, "parameters": {}}))
    for model_id in sub_types:
        (folder / router_path / model_id).mkdir()
        (folder / router_path / model_id / "model.safetensors").write_bytes(b"dense weights")
        (folder / router_path / model_id / "config.json").write_text('{"in_features": 384, "out_features": 384}')
    return folder


# --------------------------------------------------------------------------- the fingerprint sees every module


def test_a_transformer_in_a_dot_folder_changes_the_fingerprint_when_its_weights_change(tmp_path):
    folder = transformer_in_module_folder(tmp_path / "model", ".t")
    weights = weights_folder(folder / ".t", b"weights one")
    before = fingerprint_folder(folder)
    assert ".t/model.safetensors" in {rel for rel, _ in model_folders.model_files(folder)}
    (weights / "model.safetensors").write_bytes(b"weights two")
    assert fingerprint_folder(folder).digest != before.digest


def test_modules_nested_in_a_router_are_fingerprinted_even_in_hidden_folders(tmp_path):
    folder = _router_folder(tmp_path, {"query_0_Dense": "sentence_transformers.models.Dense"}, router_path=".r")
    files = {rel for rel, _ in model_folders.model_files(folder)}
    assert {".r/router_config.json", ".r/query_0_Dense/model.safetensors"} <= files
    before = fingerprint_folder(folder)
    (folder / ".r" / "query_0_Dense" / "model.safetensors").write_bytes(b"other dense weights")
    assert fingerprint_folder(folder).digest != before.digest


def test_the_built_in_models_fingerprint_is_unchanged():
    """Profiles shipped for the built-in model name its digest: walking modules must not move it."""
    digest = fingerprint_folder(model_folders.builtin_model_path()).digest
    assert digest == "c4a57a7f2011f2562b4fb34246d45976f6bb611ae1810569e0bd235637e8475f"


# --------------------------------------------------------------------------- no code from the folder


def test_a_custom_module_nested_in_a_router_is_refused_by_name_and_never_imported(tmp_path, monkeypatch):
    folder = _router_folder(tmp_path, {"query_0_Dense": "sentence_transformers.models.Dense",
                                       "query_1_Mine": "my_module.Mine"})
    marker = tmp_path / "ran"
    (folder / "my_module.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass Mine: pass\n")
    monkeypatch.chdir(folder)                      # as `python -m calibsim_gui` from inside the folder
    monkeypatch.syspath_prepend(str(folder))
    info = inspect_model_folder(folder)
    assert info.needs_remote_code
    for engine in ("torch", "onnx"):
        with pytest.raises(ModelError, match=r"my_module\.Mine \(2_Router/query_1_Mine\)") as error:
            load_model(str(folder), engine=engine, device="cpu")
        assert "never runs" in str(error.value)
    assert not marker.exists() and "my_module" not in sys.modules


@pytest.mark.parametrize("kind", ["sentence_transformers.models.Sequential", "transformers_modules.x.Model",
                                  "sentence_transformers.models.Pooling.__init__", 7])
def test_module_types_outside_the_library_are_refused(tmp_path, kind):
    folder = make_st_folder(tmp_path / "custom")
    _write_modules(folder, [("", "sentence_transformers.models.Transformer"), ("1_Pooling", kind)])
    with pytest.raises(ModelError, match="not sentence-transformers' own") as error:
        load_model(str(folder), device="cpu")
    assert str(kind) in str(error.value)


@pytest.mark.parametrize("path", ["/", "/etc", "../elsewhere", "1_Pooling/../../x", "C:\\models", "a\0b", None])
def test_a_module_path_outside_the_folder_is_refused_before_anything_is_read(tmp_path, path):
    folder = make_st_folder(tmp_path / "escaping")
    _write_modules(folder, [("", "sentence_transformers.models.Transformer"),
                            (path, "sentence_transformers.models.Pooling")])
    for call in (lambda: resolve_model(str(folder)), lambda: fingerprint_folder(folder),
                 lambda: load_model(str(folder), device="cpu")):
        with pytest.raises(ModelError, match="not inside the model folder") as error:
            call()
        assert str(folder / "modules.json") in str(error.value) and "Fix:" in str(error.value)


def _big_tree(root, folders=30, files=30):
    """A tree of `folders` x `files` json files that a walk would read."""
    for i in range(folders):
        (root / f"d{i}").mkdir(parents=True)
        for j in range(files):
            (root / f"d{i}" / f"f{j}.json").write_text("{}")
    return root


@pytest.mark.parametrize("where", ["module folder", "folder inside a module"])
@pytest.mark.parametrize("target", ["/", "/usr", "big tree"])
def test_a_link_out_of_the_model_folder_is_refused_before_any_walk(tmp_path, monkeypatch, target, where):
    """#43: a module folder linked to / walked the file system for 54 s and ended on "Permission
    denied"; linked to /usr, 88 s and a wrong "weights are pickles" refusal."""
    big = _big_tree(tmp_path / "big") if target == "big tree" else None
    outside = str(big or target)
    folder = transformer_in_module_folder(tmp_path / "model", "0_Transformer")
    if where == "module folder":
        (folder / "0_Transformer").symlink_to(outside, target_is_directory=True)
        link = folder / "0_Transformer"
    else:
        weights_folder(folder / "0_Transformer", b"weights")
        link = folder / "1_Pooling" / "extra"
        link.symlink_to(outside, target_is_directory=True)
    scanned = []
    real_scandir = model_folders.os.scandir
    monkeypatch.setattr(model_folders.os, "scandir", lambda path: scanned.append(str(path)) or real_scandir(path))
    for call in (lambda: resolve_model(str(folder)), lambda: fingerprint_folder(folder),
                 lambda: load_model(str(folder), device="cpu")):
        with pytest.raises(ModelError, match="outside the model folder") as error:
            call()
        message = str(error.value)
        assert str(link) in message and "symbolic link" in message and "Fix: copy the folder" in message
    assert not [path for path in scanned if path.startswith(str(link)) or (big and path.startswith(str(big)))]


def test_a_router_naming_a_sub_module_outside_the_folder_is_refused(tmp_path):
    folder = _router_folder(tmp_path, {"query_0_Dense": "sentence_transformers.models.Dense"})
    (folder / "2_Router" / "router_config.json").write_text(json.dumps(
        {"types": {"../../..": "sentence_transformers.models.Dense"}}))
    with pytest.raises(ModelError, match="router_config.json names the module path '../../..'"):
        resolve_model(str(folder))


# --------------------------------------------------------------------------- tokenizer and config


def _with_tokenizer(tmp_path, edit):
    """make_st_folder's model with the built-in tokenizer.json, changed by `edit(data)`."""
    folder = make_st_folder(tmp_path / "tokenized")
    data = json.loads((model_folders.builtin_model_path() / "tokenizer.json").read_text())
    edit(data)
    (folder / "tokenizer.json").write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["model"]["vocab"].update({"zzzz": 999_999}), "token id 999,999"),
    (lambda d: d["added_tokens"].append({"id": 30_522, "content": "<x>", "special": True}), "token id 30,522"),
    (lambda d: d["post_processor"]["special_tokens"]["[CLS]"].update({"ids": [40_000]}), "token id 40,000"),
    (lambda d: d["post_processor"]["single"][0]["SpecialToken"].update({"type_id": 5}), "token type id 5"),
], ids=["vocab", "added", "post-processor", "type-id"])
def test_a_tokenizer_giving_ids_beyond_the_vocabulary_is_refused_for_both_engines(tmp_path, edit, words):
    folder = _with_tokenizer(tmp_path, edit)
    for engine in ("torch", "onnx"):
        with pytest.raises(ModelError, match=words) as error:
            load_model(str(folder), engine=engine, device="cpu")
        assert str(folder / "tokenizer.json") in str(error.value) and "Fix:" in str(error.value)


@pytest.mark.parametrize("value, words", [(10**9, "1,000,000,000 is more than the 512 positions"),
                                          (0, "0 is not a positive whole number"),
                                          ("long", "'long' is not a positive whole number")])
def test_a_max_seq_length_beyond_the_models_positions_is_refused(tmp_path, value, words):
    folder = make_st_folder(tmp_path / "long")
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": value}))
    for engine in ("torch", "onnx"):
        with pytest.raises(ModelError, match=words) as error:
            load_model(str(folder), engine=engine, device="cpu")
        assert str(folder / "sentence_bert_config.json") in str(error.value) and "Fix:" in str(error.value)


def test_a_folder_that_passed_its_checks_is_refused_once_its_tokenizer_changes(tmp_path, monkeypatch):
    """#29: a folder's passed checks are remembered by its files' bytes (not checked again on
    every run), so a tokenizer edited afterwards is refused all the same."""
    from calibsim_gui.core.embedding import folder_checks

    folder = _with_tokenizer(tmp_path, lambda data: None)
    info = inspect_model_folder(folder)
    folder_checks.check_model_folder(info)
    with monkeypatch.context() as patch:
        patch.setattr(folder_checks, "tokenizer_max_id", lambda path: pytest.fail("checked again"))
        folder_checks.check_model_folder(info)                  # the same bytes: not read again
    data = json.loads((folder / "tokenizer.json").read_text())
    data["model"]["vocab"]["zzzz"] = 999_999
    (folder / "tokenizer.json").write_text(json.dumps(data))
    with pytest.raises(ModelError, match="token id 999,999"):
        folder_checks.check_model_folder(info)
