"""Vectors from any model: a fake model's vectors saved to files calibrate as the model itself."""

import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.embedding.vectors_file import load_vectors, read_texts, write_texts
from calibsim_gui.core.errors import InputError, ProfileError
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.references.texts import reference_texts
from tests.fakes import FakeEmbedder, random_sentences


def save_vectors(folder, texts, model=None, name="texts"):
    """`texts` embedded with `model` (default: the fake) as name.npy beside name.txt."""
    model = model or FakeEmbedder()
    write_texts(folder / f"{name}.txt", texts)
    np.save(folder / f"{name}.npy", encode_texts(model, texts).embeddings)
    return folder / f"{name}.npy"


@pytest.fixture(scope="module")
def corpus():
    texts = random_sentences(260, seed=3)
    return texts[:200], pd.DataFrame({"sentence1": texts[200:230], "sentence2": texts[230:260]})


@pytest.fixture
def pairs(tmp_path, corpus):
    path = tmp_path / "pairs.csv"
    corpus[1].to_csv(path, index=False)
    return load_pairs(path)


def needed(corpus):
    background, frame = corpus
    return reference_texts() + background + list(frame["sentence1"]) + list(frame["sentence2"])


def test_vectors_give_the_scores_of_the_model_itself(tmp_path, corpus, pairs):
    fake, vectors = FakeEmbedder(), load_vectors(save_vectors(tmp_path, needed(corpus)))
    scores = []
    for model in (fake, vectors):
        profile = build_profile(model, corpus[0], ProfileSettings(n_pairs=2000))
        scores.append(score_pairs(pairs, model, profile, geometry=["none", "whiten"]).frame)
    columns = [c for c in scores[0].columns if c.startswith("cosine_")]
    assert "cosine_calibrated@whiten" in columns
    pd.testing.assert_frame_equal(scores[0][columns], scores[1][columns])


def test_a_profile_built_from_vectors_round_trips(tmp_path, corpus, pairs):
    vectors = load_vectors(save_vectors(tmp_path, needed(corpus)))
    profile = build_profile(vectors, corpus[0], ProfileSettings(n_pairs=2000))
    assert profile.provenance["model"]["engine"] == "vectors"
    loaded = ReferenceProfile.load(profile.save(tmp_path / "v.calibsim-profile"))
    assert loaded.fingerprint == vectors.fingerprint
    again = load_vectors(tmp_path / "texts.npy")                    # a new session: the same identity
    pd.testing.assert_frame_equal(score_pairs(pairs, vectors, profile).frame,
                                  score_pairs(pairs, again, loaded).frame)


def test_another_models_vectors_never_share_a_profile(tmp_path, corpus):
    ours = load_vectors(save_vectors(tmp_path, needed(corpus)))
    theirs = load_vectors(save_vectors(tmp_path, needed(corpus), FakeEmbedder(max_seq_length=6), "other"))
    assert ours.fingerprint.digest != theirs.fingerprint.digest
    with pytest.raises(ProfileError, match="built with model vectors@"):
        build_profile(ours, None).check_model(theirs.fingerprint)


def test_a_text_without_a_vector_is_refused_with_the_fix(tmp_path, corpus, pairs):
    vectors = load_vectors(save_vectors(tmp_path, reference_texts()))
    with pytest.raises(InputError) as error:
        score_pairs(pairs, vectors, build_profile(vectors, None))
    message = str(error.value)
    assert str(tmp_path / "texts.npy") in message and "60 texts the run needs have no vector" in message
    assert "calibsim reference-texts" in message and "--pairs" in message


def test_the_reference_sentences_are_required(tmp_path):
    with pytest.raises(InputError, match="English reference sentences"):
        load_vectors(save_vectors(tmp_path, ["only", "my", "texts"]))


def test_an_npz_holds_texts_and_vectors_and_several_files_add_up(tmp_path, corpus, pairs):
    texts = reference_texts()
    np.savez(tmp_path / "refs.npz", texts=np.array(texts), vectors=encode_texts(FakeEmbedder(), texts).embeddings)
    mine = list(corpus[1]["sentence1"]) + list(corpus[1]["sentence2"])
    vectors = load_vectors([tmp_path / "refs.npz", save_vectors(tmp_path, mine, name="mine")])
    assert len(vectors.texts) == len(texts) + len(mine)
    direct = score_pairs(pairs, FakeEmbedder(), build_profile(FakeEmbedder(), None)).frame
    pd.testing.assert_frame_equal(score_pairs(pairs, vectors, build_profile(vectors, None)).frame, direct)


@pytest.mark.parametrize("damage, message", [
    (lambda v, t: (v[:-1], t), "vectors for"),
    (lambda v, t: (np.where(np.arange(len(v))[:, None] == 5, np.nan, v), t), "NaN or infinity"),
    (lambda v, t: (v[:, :, None], t), "not vectors"),
    (lambda v, t: (v.astype(np.int32), t), "not vectors"),
    (lambda v, t: (v, np.array(t, dtype=object)), "not a 1-D array of strings|allow_pickle"),
])
def test_damaged_vectors_files_are_refused_before_use(tmp_path, damage, message):
    texts = reference_texts()
    vectors, names = damage(encode_texts(FakeEmbedder(), texts).embeddings, texts)
    np.savez(tmp_path / "v.npz", texts=names, vectors=vectors)
    with pytest.raises(InputError, match=message):
        load_vectors(tmp_path / "v.npz")


def test_a_text_with_two_vectors_is_refused(tmp_path):
    texts = reference_texts()
    vectors = encode_texts(FakeEmbedder(), texts).embeddings
    np.savez(tmp_path / "v.npz", texts=np.array(texts + texts[:1]), vectors=np.vstack([vectors, vectors[1:2]]))
    with pytest.raises(InputError, match="two different vectors"):
        load_vectors(tmp_path / "v.npz")


def test_texts_files_keep_texts_exactly(tmp_path):
    texts = ["a line", "  spaced  ", "", "ünïcode"]
    assert read_texts(write_texts(tmp_path / "t.txt", texts)) == texts
    assert read_texts(write_texts(tmp_path / "t.jsonl", texts + ["two\nlines"])) == texts + ["two\nlines"]
    with pytest.raises(InputError, match="line break"):
        write_texts(tmp_path / "u.txt", ["two\nlines"])


def test_files_over_the_memory_budget_or_cut_off_are_refused_from_their_headers(tmp_path):
    vectors = save_vectors(tmp_path, reference_texts())
    with pytest.raises(InputError, match="vectors of 48 dimensions needs about"):
        load_vectors(vectors, memory_budget=100_000)
    data = vectors.read_bytes()
    vectors.write_bytes(data[:len(data) // 2])
    with pytest.raises(InputError, match="shorter than its header says"):
        load_vectors(vectors)
