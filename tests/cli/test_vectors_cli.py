"""`calibsim reference-texts` and --vectors: a fake model's vectors, embedded from the texts file the
command writes, score as the fake model itself does on the command line."""

import json

import numpy as np
import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.core.embedding import models
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.embedding.vectors_file import read_texts
from tests.fakes import FakeEmbedder


@pytest.fixture
def loads(monkeypatch):
    """Models load as the fake one (counted); vectors files are read for real."""
    loaded = []

    def load_model(info, **options):
        loaded.append(info)
        embedder = FakeEmbedder()
        embedder.precision_note = "float32"
        return embedder

    monkeypatch.setattr(models, "load_model", load_model)
    return loaded


def embed(texts_file, model=None):
    """What a user does with any model: embed every line, save the vectors beside the texts."""
    texts = read_texts(texts_file)
    np.save(texts_file.with_suffix(".npy"), encode_texts(model or FakeEmbedder(), texts).embeddings)
    return texts_file.with_suffix(".npy")


def test_vectors_score_as_the_model_itself(tmp_path, files, loads, capsys):
    pairs, background = files
    texts = tmp_path / "texts.txt"
    assert cli.main(["reference-texts", "--out", str(texts), "--pairs", str(pairs),
                     "--documents", str(background), "-q"]) == 0
    assert "wrote" in capsys.readouterr().out
    vectors = embed(texts)
    profile = tmp_path / "v.calibsim-profile"
    assert cli.main(["profile", "build", "--vectors", str(vectors), "--background", str(background),
                     "--pairs", "2000", "--metrics", "cosine", "--out", str(profile), "-q"]) == 0
    assert cli.main(["score", str(pairs), "--vectors", str(vectors), "--profile", str(profile),
                     "--out", str(tmp_path / "v.csv"), "-q"]) == 0
    assert cli.main(["score", str(pairs), "--vectors", str(vectors), "--profile", str(profile),
                     "--out", str(tmp_path / "v.json"), "-q"]) == 0
    (command,) = json.loads((tmp_path / "v.json").read_text())["reproduce"]
    assert "--vectors texts.npy" in command and "--model" not in command
    assert not loads                                            # no model was loaded
    direct = tmp_path / "direct.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "2000", "--metrics", "cosine",
                     "--out", str(direct), "-q"]) == 0
    assert cli.main(["score", str(pairs), "--profile", str(direct), "--out", str(tmp_path / "m.csv"), "-q"]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "v.csv"), pd.read_csv(tmp_path / "m.csv"))
    code = cli.main(["score", str(pairs), "--profile", str(direct), "--vectors", str(vectors), "-q"])
    assert code == 2 and "built with model fake-bow" in capsys.readouterr().err


def test_a_missing_text_is_refused_with_the_fix(tmp_path, files, loads, capsys):
    pairs, _ = files
    texts = tmp_path / "texts.txt"
    assert cli.main(["reference-texts", "--out", str(texts), "-q"]) == 0
    vectors = embed(texts)
    assert cli.main(["score", str(pairs), "--vectors", str(vectors), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{vectors}: 40 texts the run needs have no vector" in err and "calibsim reference-texts" in err
    missing = tmp_path / "missing.jsonl"
    assert cli.main(["reference-texts", "--out", str(missing), "--pairs", str(pairs),
                     "--missing-from", str(vectors), "-q"]) == 0
    assert len(read_texts(missing)) == 40
    np.savez(tmp_path / "more.npz", texts=np.array(read_texts(missing)),
             vectors=encode_texts(FakeEmbedder(), read_texts(missing)).embeddings)
    assert cli.main(["score", str(pairs), "--vectors", str(vectors), "--vectors", str(tmp_path / "more.npz"),
                     "--out", "-", "-q"]) == 0
    assert "cosine_calibrated" in capsys.readouterr().out


def test_vectors_and_a_model_exclude_each_other(tmp_path, files, loads, capsys):
    pairs, _ = files
    texts = tmp_path / "texts.txt"
    assert cli.main(["reference-texts", "--out", str(texts), "-q"]) == 0
    vectors = embed(texts)
    assert cli.main(["score", str(pairs), "--vectors", str(vectors), "--model", "builtin", "-q"]) == 2
    assert "give either vectors (--vectors) or a model (--model)" in capsys.readouterr().err
