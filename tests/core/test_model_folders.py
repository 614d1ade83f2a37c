"""Broken model folders become a `ModelError` that names the folder and what is wrong.

(Pickle-only weights and remote code are covered in test_models.py.)
"""

import json
import shutil

import pytest

from calibsim_gui.core.errors import ModelError
from calibsim_gui.core.embedding.model_folders import builtin_model_path, inspect_model_folder
from calibsim_gui.core.embedding.models import load_model
from tests.core.test_models import make_st_folder


@pytest.fixture(autouse=True)
def _empty_hf_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))


def builtin_copy(folder, **config_changes):
    """The built-in model's files with its weights linked (not copied) and config.json changed."""
    source = builtin_model_path()
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.safetensors"))
    (folder / "model.safetensors").symlink_to(source / "model.safetensors")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **config_changes}))
    return folder


def test_a_folder_without_weights_says_the_weights_are_missing(tmp_path):
    folder = make_st_folder(tmp_path / "no-weights", weights=())
    with pytest.raises(ModelError, match="no weights|weights are missing") as err:
        load_model(str(folder))
    assert str(folder) in str(err.value) and "pickle" not in str(err.value)


def test_a_config_that_is_not_json_is_named(tmp_path):
    folder = make_st_folder(tmp_path / "bad-config")
    (folder / "config.json").write_text('{"hidden_size": 384,')
    with pytest.raises(ModelError, match="Cannot read") as err:
        inspect_model_folder(folder)
    assert str(folder / "config.json") in str(err.value)


def test_modules_json_that_is_not_a_list_of_modules_is_refused(tmp_path):
    folder = make_st_folder(tmp_path / "bad-modules")
    (folder / "modules.json").write_text('{"0": "sentence_transformers.models.Transformer"}')
    with pytest.raises(ModelError, match="not a list of modules") as err:
        load_model(str(folder))
    assert str(folder) in str(err.value)


def test_a_tokenizer_that_needs_remote_code_is_refused(tmp_path):
    folder = make_st_folder(tmp_path / "custom-tokenizer")
    auto_map = {"AutoTokenizer": ["tokenization_mine.MineTokenizer", None]}
    (folder / "tokenizer_config.json").write_text(json.dumps({"auto_map": auto_map}))
    with pytest.raises(ModelError, match="trust_remote_code"):
        load_model(str(folder))


@pytest.mark.slow
@pytest.mark.parametrize("change", [{"hidden_size": 512}, {"model_type": "no-such-architecture"}],
                         ids=["wrong-dimension", "unknown-architecture"])
def test_a_config_that_does_not_fit_the_weights_is_a_model_error(tmp_path, change):
    folder = builtin_copy(tmp_path / "wrong-config", **change)
    with pytest.raises(ModelError, match="Could not load the model") as err:
        load_model(str(folder), device="cpu", precision="float32")
    assert str(folder) in str(err.value)
