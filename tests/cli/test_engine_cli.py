"""--engine on the command line: passed to the model loader (ray: the local choice on the driver),
int8 only with ONNX, and (slow) a
real score run on the ONNX engine."""

import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.core.embedding import models
from tests.fakes import FakeEmbedder


@pytest.fixture
def pairs(tmp_path):
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": ["A cat sleeps.", "Markets fell."],
                  "sentence2": ["A cat is sleeping.", "I like soup."]}).to_csv(path, index=False)
    return path


@pytest.fixture
def loads(monkeypatch):
    """The keyword arguments of every `load_model` call; the fake embedder is returned."""
    calls = []

    def load_model(info, **options):
        calls.append(options)
        embedder = FakeEmbedder()
        embedder.precision_note = embedder.precision = "float32"
        return embedder

    monkeypatch.setattr(models, "load_model", load_model)
    return calls


@pytest.mark.parametrize("flags, engine", [([], "auto"), (["--engine", "onnx"], "onnx"),
                                           (["--engine", "torch"], "torch")])
def test_score_passes_the_engine_to_the_loader(pairs, tmp_path, loads, flags, engine):
    assert cli.main(["score", str(pairs), "--out", str(tmp_path / "out.csv"), "-q", *flags]) == 0
    assert loads[0]["engine"] == engine


@pytest.mark.parametrize("flag, engine", [("auto", "auto"), ("local", "auto"), ("onnx", "onnx"),
                                          ("torch", "torch")])
def test_profile_build_engine_takes_the_local_engines(tmp_path, loads, flag, engine):
    assert cli.main(["profile", "build", "--engine", flag, "--out", str(tmp_path / "p.calibsim-profile"),
                     "-q"]) == 0
    assert loads[0]["engine"] == engine


def test_int8_is_refused_off_the_onnx_engine_with_the_fix(tmp_path, loads, capsys):
    code = cli.main(["profile", "build", "--precision", "int8", "--engine", "torch",
                     "--out", str(tmp_path / "p.calibsim-profile")])
    assert code == 2 and not loads
    err = capsys.readouterr().err
    assert "--precision int8 runs on the ONNX engine only" in err and "Fix: use --engine onnx" in err


def test_the_ray_engine_loads_the_drivers_model_as_a_local_run_would(tmp_path, loads, capsys):
    """The driver's model takes the local choice (int8 included: CPU workers run ONNX); a
    background of one sentence then stops the build with a message. (A missing background is
    refused before any model loads: tests/cli/test_ray_front_door.py.)"""
    pytest.importorskip("ray", reason="the ray engine needs `pip install 'calibsim[cluster]'`")
    background = tmp_path / "x.txt"
    background.write_text("The only sentence of this corpus.\n", encoding="utf-8")
    code = cli.main(["profile", "build", "--precision", "int8", "--engine", "ray", "--background",
                     str(background), "--out", str(tmp_path / "p.calibsim-profile")])
    err = capsys.readouterr().err
    assert code == 2 and (loads[0]["engine"], loads[0]["precision"]) == ("auto", "int8"), err
    assert "the background corpus needs at least three distinct sentences" in err


@pytest.mark.slow
def test_score_on_the_onnx_engine_in_int8(pairs, tmp_path, capsys):
    out = tmp_path / "out.csv"
    assert cli.main(["score", str(pairs), "--out", str(out), "--engine", "onnx", "--precision", "int8"]) == 0
    err = capsys.readouterr().err
    assert "with the onnx engine in int8" in err
    frame = pd.read_csv(out)
    assert frame.loc[0, "cosine_raw"] > frame.loc[1, "cosine_raw"]
