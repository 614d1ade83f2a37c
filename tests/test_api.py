"""The Python API: docs/api.md's examples run, the API and the CLI give the same tables, and a
model is loaded once for many calls. All with the fake model."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import calibsim
from calibsim_gui import api, cli
from calibsim_gui.cli import common
from calibsim_gui.core.embedding import models
from tests.fakes import FakeEmbedder, random_sentences

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "api.md"


@pytest.fixture
def loads(monkeypatch):
    """Every model load (API and CLI) gives the fake model, and is counted."""
    loaded = []

    def load_model(info, **options):
        loaded.append(info)
        return FakeEmbedder()

    monkeypatch.setattr(models, "load_model", load_model)
    monkeypatch.setattr(common, "load_model", lambda args: load_model(args))
    api._kept_session.cache_clear()
    yield loaded
    api._kept_session.cache_clear()


def labelled_pairs(n: int = 240, seed: int = 0) -> pd.DataFrame:
    """Pairs of made-up sentences, the second sharing a random share of the first's words; the
    human score is that share on 0-5."""
    rng = np.random.default_rng(seed)
    firsts, seconds = random_sentences(n, seed=seed), random_sentences(n, seed=seed + 1)
    rows = []
    for a, b in zip(firsts, seconds):
        words, others = a.split(), b.split()
        keep = rng.integers(0, len(words) + 1)
        rows.append({"score": round(5 * keep / len(words), 2), "sentence1": a,
                     "sentence2": " ".join(words[:keep] + others[keep:len(words)])})
    return pd.DataFrame(rows)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A working folder with docs/api.md's corpus.txt and labelled.csv."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.txt").write_text("\n".join(random_sentences(300, seed=9)) + "\n", encoding="utf-8")
    labelled_pairs().to_csv(tmp_path / "labelled.csv", index=False)
    return tmp_path


def test_the_examples_of_docs_api_md_run(folder, loads, capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 6
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), namespace)
    assert len(loads) == 3                         # the session, the later one and the functions' kept one
    assert (folder / "corpus.calibsim-profile").is_file() and (folder / "my-model.calibsim-profile").is_file()
    assert namespace["mine"].embedder.fingerprint.id.startswith("vectors@")
    assert "cosine_human" in namespace["with_human"].columns
    assert "cosine_calibrated" in capsys.readouterr().out


def test_the_readmes_notebook_example_runs(folder, loads):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Python API"):readme.index("\n## ", readme.index("## Python API") + 1)]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert list(namespace["hits"]["rank"]) == [1, 2, 3, 4, 5]
    assert (folder / "corpus.calibsim-profile").is_file()


def test_the_api_and_the_cli_give_the_same_score_table(folder, loads):
    labelled_pairs(30).to_csv("pairs.csv", index=False)
    assert cli.main(["profile", "build", "--background", "corpus.txt", "--pairs", "2000", "--metrics", "cosine,dot",
                     "--out", "p.calibsim-profile", "-q"]) == 0
    assert cli.main(["score", "pairs.csv", "--profile", "p.calibsim-profile", "--geometry", "center", "--interval",
                     "--out", "cli.csv", "-q"]) == 0
    from_cli = pd.read_csv("cli.csv")
    session = calibsim.Session(profile="p.calibsim-profile", progress=False)
    for given in (pd.read_csv("pairs.csv"), "pairs.csv"):
        frame = session.score(given, geometry="center", interval=True)
        if isinstance(given, str):              # read from the file: strings, as the CLI reads them
            frame = pd.read_csv(pd.io.common.StringIO(frame.to_csv(index=False)))
        pd.testing.assert_frame_equal(frame, from_cli, check_exact=False, rtol=1e-9)
    assert len(loads) == 3                          # the CLI's two runs, and the session's


def test_the_api_and_the_cli_give_the_same_search_threshold_and_neighbours(folder, loads):
    queries = random_sentences(300, seed=9)[:3]
    Path("queries.txt").write_text("\n".join(queries) + "\n", encoding="utf-8")
    assert cli.main(["search", "queries.txt", "--corpus", "corpus.txt", "--top-k", "4", "--out", "hits.csv",
                     "-q"]) == 0
    hits = calibsim.search(Path("queries.txt"), Path("corpus.txt"), top_k=4)
    pd.testing.assert_frame_equal(hits, pd.read_csv("hits.csv"), check_exact=False, rtol=1e-9)
    assert cli.main(["threshold", "labelled.csv", "--target-precision", "0.8", "--out", "t.json", "-q"]) == 0
    found = json.loads(Path("t.json").read_text())["thresholds"]
    table = calibsim.threshold(pd.read_csv("labelled.csv"), target=0.8)
    for form in ("raw", "calibrated"):
        assert table.loc[form, "threshold"] == pytest.approx(found[form]["threshold"], rel=1e-12)
        assert table.loc[form, "column"] == found[form]["column"]
    assert cli.main(["neighbours", "corpus.txt", "--k", "3", "--out", "n.csv", "--pairs-out", "p.csv", "-q"]) == 0
    found = calibsim.neighbours(Path("corpus.txt"), k=3)
    for name, path in (("neighbours", "n.csv"), ("pairs", "p.csv")):
        pd.testing.assert_frame_equal(found[name], pd.read_csv(path), check_exact=False, rtol=1e-9)
    assert len(loads) == 4                          # three CLI runs, one kept session for the API calls


def test_a_dataframe_with_unnamed_columns_is_refused_with_the_fix(loads):
    with pytest.raises(calibsim.InputError, match="<DataFrame>.*Fix: "):
        calibsim.Session(progress=False).score(pd.DataFrame({"x": [1.0], "y": [2.0]}))


@pytest.mark.parametrize("variable", ["CALIBSIM_CACHE_DIR", "CALIBSIM_ONNX_DIR"])
def test_a_cache_folder_that_cannot_be_used_is_refused_before_the_model_loads(tmp_path, monkeypatch, variable):
    """As the command line refuses it (#43): a session would otherwise fail only after its
    model's graph was exported."""
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
    (tmp_path / "a file").write_text("not a folder")
    monkeypatch.setenv(variable, str(tmp_path / "a file"))
    with pytest.raises(calibsim.InputError, match=f"is a file, not a folder.*set {variable} to one"):
        calibsim.Session(engine="onnx", progress=False)


@pytest.mark.slow
def test_the_built_in_model_gives_the_same_table_through_the_api_and_the_cli(tmp_path):
    demo = ROOT / "resources" / "demo" / "pairs.csv"
    assert cli.main(["score", str(demo), "--metrics", "cosine", "--out", str(tmp_path / "cli.csv"), "-q"]) == 0
    frame = calibsim.Session(progress=False).score(pd.read_csv(demo), metrics=["cosine"])
    pd.testing.assert_frame_equal(frame, pd.read_csv(tmp_path / "cli.csv"), check_exact=False, rtol=1e-9)
    assert frame.attrs["provenance"]["model"]["name"] == "all-MiniLM-L6-v2"
