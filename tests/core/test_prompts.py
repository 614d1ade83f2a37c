"""Prompts (issue 17): read from the model folder, applied explicitly everywhere, recorded and checked."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.embedding.cache import EmbeddingCache, cache_key
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.errors import ModelError, ProfileError
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.embedding.model_folders import builtin_model_path, inspect_model_folder
from calibsim_gui.core.embedding.prompts import PromptSettings, choose_prompts
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import build_profile, default_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from tests.fakes import FakeEmbedder, random_sentences

E5_PROMPTS = {"query": "query: ", "document": "passage: "}
TEXTS = ["A cat sits on the mat.", "Stock markets fell sharply today.", "The weather is nice."]


def write_prompted_model(folder, prompts=E5_PROMPTS, default="query"):
    """A copy of the built-in model whose config declares `prompts` and `default_prompt_name`."""
    shutil.copytree(builtin_model_path(), folder)
    path = folder / "config_sentence_transformers.json"
    config = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps({**config, "prompts": prompts, "default_prompt_name": default}))
    return folder


@pytest.fixture(scope="module")
def prompted_folder(tmp_path_factory):
    return write_prompted_model(tmp_path_factory.mktemp("prompted") / "e5-like")


@pytest.fixture(scope="module")
def prompted_embedder(prompted_folder):
    from calibsim_gui.core.embedding.models import load_model

    return load_model(str(prompted_folder), device="cpu")


def _pairs_file(tmp_path):
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": ["A cat sleeps.", "Markets fell.", "Same text."],
                  "sentence2": ["A cat is sleeping.", "I like soup.", "Same text."]}).to_csv(path, index=False)
    return path


# ------------------------------------------------------------------ folder and choice (no torch)


def test_folder_prompts_are_read_into_model_info(prompted_folder):
    info = inspect_model_folder(prompted_folder)
    assert info.prompts == E5_PROMPTS and info.default_prompt_name == "query"
    builtin = inspect_model_folder(builtin_model_path())
    assert builtin.default_prompt_name is None and not builtin.prompts


def test_hostile_prompt_entries_are_ignored(tmp_path):
    folder = write_prompted_model(tmp_path / "odd", prompts={"query": 3, "ok": "x: ", "long": "y" * 5000},
                                  default="missing")
    info = inspect_model_folder(folder)
    assert info.prompts == {"ok": "x: "} and info.default_prompt_name is None


def test_choose_prompts_defaults_and_overrides(prompted_folder):
    info = inspect_model_folder(prompted_folder)
    assert choose_prompts(info) == PromptSettings("query: ", "query: ", "passage: ", "query")
    # no default name: the "query" prompt is still the symmetric one (e5's advice)
    from dataclasses import replace

    assert choose_prompts(replace(info, default_prompt_name=None)).symmetric == "query: "
    assert choose_prompts(replace(info, prompts={"passage": "p: "}, default_prompt_name=None)) == \
        PromptSettings("", "", "p: ", None)
    assert choose_prompts(info, prompt_name="document").symmetric == "passage: "
    assert choose_prompts(info, no_prompt=True) == PromptSettings()
    assert choose_prompts(info, query_prompt="Represent this: ", doc_prompt="").query == "Represent this: "
    with pytest.raises(ModelError, match="no prompt named 'nope'.*'query', 'document'.*Fix"):
        choose_prompts(info, prompt_name="nope")
    with pytest.raises(ModelError, match="not both"):
        choose_prompts(info, prompt_name="query", no_prompt=True)
    assert PromptSettings.from_dict(choose_prompts(info).to_dict()) == choose_prompts(info)


# ------------------------------------------------------------------ fake embedder: cache, profile check


def test_cache_never_mixes_prompted_and_unprompted_vectors(tmp_path):
    plain = FakeEmbedder()
    prompted = FakeEmbedder(prompts=PromptSettings(symmetric="query: "))
    assert cache_key(plain) == plain.fingerprint.id                   # older caches stay valid
    assert cache_key(prompted) != cache_key(plain)
    assert cache_key(plain, "query: ") == cache_key(prompted)
    texts = ["passage one", "another text"]
    with EmbeddingCache(tmp_path / "c.sqlite") as cache:
        first = encode_texts(plain, texts, cache=cache).embeddings
        again = encode_texts(prompted, texts, cache=cache)
        assert again.n_cached == 0                                    # not served the plain vectors
        np.testing.assert_allclose(again.embeddings, plain.encode_batch(["query: " + t for t in texts]))
        assert not np.allclose(again.embeddings, first)
        assert encode_texts(prompted, texts, cache=cache).n_cached == 2
        explicit = encode_texts(plain, texts, cache=cache, prompt="query: ")
        assert explicit.n_cached == 2
        np.testing.assert_allclose(explicit.embeddings, again.embeddings)


def test_profile_records_prompt_and_refuses_another(tmp_path):
    prompted = FakeEmbedder(prompts=PromptSettings(symmetric="query: ", name="query"))
    profile = build_profile(prompted, random_sentences(400, seed=3), ProfileSettings(n_pairs=500))
    assert profile.prompt == "query: "
    assert profile.provenance["model"]["prompt_name"] == "query"
    profile = ReferenceProfile.load(profile.save(tmp_path / "p.calibsim-profile"))
    assert profile.prompt == "query: "
    table = load_pairs(_pairs_file(tmp_path))
    scored = score_pairs(table, prompted, profile)
    assert scored.provenance["model"]["prompt"] == "query: "
    with pytest.raises(ProfileError, match="built with the prompt 'query: '.*no prompt.*Fix: .*rebuild"):
        score_pairs(table, FakeEmbedder(), profile)
    plain_profile = build_profile(FakeEmbedder(), None)
    assert plain_profile.prompt == ""
    with pytest.raises(ProfileError, match="--no-prompt"):
        plain_profile.check_model(prompted.fingerprint, prompt="query: ")
    # the default reference follows the prompt: never a profile built with another one
    assert default_profile(prompted).prompt == "query: "


# ------------------------------------------------------------------ the real model


@pytest.mark.slow
def test_prompted_folder_is_scored_with_its_prompt(prompted_embedder):
    from sentence_transformers import SentenceTransformer

    assert prompted_embedder.prompt == "query: " and prompted_embedder.document_prompt == "passage: "
    reference = SentenceTransformer(str(prompted_embedder.info.path), device="cpu")
    ours = encode_texts(prompted_embedder, TEXTS).embeddings
    expected = reference.encode(TEXTS, prompt="query: ")
    np.testing.assert_allclose(ours, expected, atol=1e-5)
    unprompted = reference.encode(TEXTS, prompt="")
    assert np.abs(ours - unprompted).max() > 1e-2
    # an explicit "" is honoured: the folder's default prompt is never added behind our back
    np.testing.assert_allclose(prompted_embedder.encode_batch(TEXTS), unprompted, atol=1e-5)


@pytest.mark.slow
def test_builtin_model_and_profile_are_unchanged(real_embedder):
    assert real_embedder.prompt == "" and real_embedder.prompts == PromptSettings()
    profile = default_profile(real_embedder)
    assert profile.prompt == "" and profile.has_background       # the shipped profile still applies


@pytest.mark.slow
def test_prompted_profile_is_refused_without_the_prompt(prompted_embedder, tmp_path):
    from calibsim_gui.core.embedding.models import load_model

    profile = build_profile(prompted_embedder, random_sentences(300, seed=4), ProfileSettings(n_pairs=500))
    assert profile.prompt == "query: " and profile.provenance["model"]["prompt_name"] == "query"
    bare = load_model(str(prompted_embedder.info.path), device="cpu",
                      prompts=choose_prompts(prompted_embedder.info, no_prompt=True))
    with pytest.raises(ProfileError, match="Fix: pass --prompt-name"):
        score_pairs(load_pairs(_pairs_file(tmp_path)), bare, profile)
