"""The Ray engine builds the same profile as the local one, on a local 2-CPU Ray instance.

One Ray instance, one distributed build (through the CLI), one loaded float32 model and one
embedding cache (the anchors, encoded once) serve the whole module: Ray's start and the encoder
actors' model loading dominate the time. Real AG News sentences from ../shared/data. Neighbours
on Ray are tested here too, on the same Ray instance.
"""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.core.calibration import cluster
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.embedding.cache import EmbeddingCache
from calibsim_gui.core.embedding.models import load_model, load_prepared_graph, prepared_graph
from calibsim_gui.core.errors import InputError, ModelError
from calibsim_gui.core.geometry.knn import top_hits
from calibsim_gui.core.io.inputs import load_documents
from tests.conftest import DATA
from tests.fakes import FakeEmbedder
from tests.tiny_models import write_tiny_model

PAIRS, SEED = 2500, 4          # 2,500 pairs of 700 texts: several rounds, sketches past their exact size


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """500 AG News descriptions in a .txt (with blank lines and repeats) and 200 titles in a CSV:
    more distinct sentences than the model has dimensions, so whitening spans them all."""
    frame = pd.read_csv(DATA / "agnews" / "test.csv", dtype=str, keep_default_na=False)
    lines = [" ".join(t.replace("\\", " ").split()) for t in frame["description"][:500]]
    folder = tmp_path_factory.mktemp("corpus")
    text = folder / "news.txt"
    text.write_text("\n".join(lines[:250] + ["", "   "] + lines[250:] + lines[:40]) + "\n")
    table = folder / "titles.csv"
    pd.DataFrame({"label": frame["label"][:200], "title": frame["title"][:200]}).to_csv(table, index=False)
    return [text, table]


@pytest.fixture(scope="module")
def embedder():
    """The built-in model in float32, the precision the Ray build is given too."""
    return load_model(None, device="cpu", precision="float32")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One embedding cache for both builds: the anchors are encoded once, by the first."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def local_profile(embedder, corpus, cache_dir):
    texts = load_documents(corpus, column="title").texts
    return build_profile(embedder, texts, ProfileSettings(n_pairs=PAIRS, seed=SEED),
                         cache=EmbeddingCache(cache_dir / "embeddings.sqlite"))


@pytest.fixture(scope="module")
def ray_build(ray_instance, corpus, cache_dir, tmp_path_factory):
    """`calibsim profile build --engine ray` on the corpus; its output, stderr and the blocks'
    statistics as the driver received them."""
    out = tmp_path_factory.mktemp("ray") / "ray.calibsim-profile"
    blocks = []
    add = cluster.BlockTotals.add
    with pytest.MonkeyPatch.context() as patch, io.StringIO() as err:
        patch.setattr(cluster.BlockTotals, "add", lambda self, table, digest: (
            blocks.append(table), add(self, table, digest))[1])
        patch.setattr(sys, "stderr", err)
        patch.setenv("CALIBSIM_CACHE_DIR", str(cache_dir))
        patch.setattr(cluster, "CHUNK_PAIRS", 700)         # the pairs are scored in 4 merged chunks
        code = cli.main(["profile", "build", "--engine", "ray", "--workers", "2", "--precision", "float32",
                         "--background", *map(str, corpus), "--column", "title",
                         "--pairs", str(PAIRS), "--seed", str(SEED), "--out", str(out)])
        messages = err.getvalue()
    assert code == 0, messages
    return out, messages, blocks


def _assert_same_background(a: ReferenceProfile, b: ReferenceProfile):
    assert a.provenance["background"]["sentences"] == b.provenance["background"]["sentences"]
    assert a.background_pairs == b.background_pairs == PAIRS
    for geometry in a.geometry_names():
        for name, ref in a.references(geometry).items():
            x, y = ref.background, b.references(geometry)[name].background
            assert x.n == y.n
            np.testing.assert_allclose([x.mean, x.std, x.min, x.max], [y.mean, y.std, y.min, y.max],
                                       rtol=1e-5, atol=1e-6)
            # quantiles: each sketch's estimate ranks where the other says, within both errors
            tolerance = x.rank_error() + y.rank_error() + 1e-9
            assert tolerance > 0                  # the sketches are past their exact size
            for q in (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99):
                assert abs(x.kll.rank(y.quantile(q)) - q) <= tolerance
            np.testing.assert_allclose(x.top, y.top, rtol=1e-5, atol=1e-6)
    for fix, ref in a.geometries.items():
        probe = a.query_reference[:200]
        u, v = ref.transform.transform(probe), b.geometries[fix].transform.transform(probe)
        np.testing.assert_allclose(u @ u.T, v @ v.T, atol=1e-5)     # eigenvectors: up to sign
    np.testing.assert_allclose(a.query_reference, b.query_reference, atol=1e-5)


@pytest.mark.slow
def test_ray_build_equals_the_local_build_on_the_same_sentences(ray_build, local_profile):
    out, messages, blocks = ray_build
    profile = ReferenceProfile.load(out)            # opens like any other profile
    _assert_same_background(local_profile, profile)
    ray_info = profile.provenance["ray"]
    assert profile.provenance["engine"] == "ray" and ray_info["workers"] == 2
    assert ray_info["blocks"] == len(blocks) >= 4
    assert ray_info["sentences_read"] == 500 + 40 + 200         # blank lines dropped, repeats kept
    assert profile.provenance["background"]["sentences"] < ray_info["sentences_read"]
    assert [f["name"] for f in profile.provenance["background"]["files"]] == ["news.txt", "titles.csv"]
    assert "blocks on 2 cpu workers (onnx engine)" in messages
    assert ray_info["worker_engine"] == "onnx"
    assert np.abs(local_profile.query_reference - profile.query_reference).max() <= 1e-5
    calibrated = profile.calibrate("cosine", np.array([0.1, 0.9]))
    assert calibrated["bg_percentile"][0] < calibrated["bg_percentile"][1]


@pytest.mark.slow
def test_block_statistics_add_up_the_same_in_any_order(ray_build, embedder):
    _, _, blocks = ray_build
    digest = embedder.fingerprint.digest
    totals = []
    for seed in range(3):
        folded = cluster.BlockTotals(embedder.dimension)
        for i in np.random.default_rng(seed).permutation(len(blocks)):
            folded.add(blocks[i], digest)
        folded.add_repeated()
        totals.append(folded)
    for other in totals[1:]:
        assert other.n == totals[0].n and other.truncated == totals[0].truncated
        assert sorted(other.rows_by_key) == sorted(totals[0].rows_by_key)
        np.testing.assert_allclose(other.total, totals[0].total, rtol=1e-12)
        np.testing.assert_allclose(other.cross, totals[0].cross, rtol=1e-12, atol=1e-12)


def test_without_ray_the_engine_says_how_to_install_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)          # import ray -> ImportError
    with pytest.raises(InputError, match=r"calibsim\[cluster\]"):
        cluster.import_ray()
    background = tmp_path / "bg.txt"
    background.write_text("one sentence\nanother one\na third\n")
    out = tmp_path / "p.calibsim-profile"
    assert cli.main(["profile", "build", "--engine", "ray", "--background", str(background),
                     "--out", str(out), "-q"]) == 2
    assert "pip install 'calibsim[cluster]'" in capsys.readouterr().err and not out.exists()


def test_a_ray_build_refuses_settings_that_say_the_texts_were_cleaned_here(tmp_path):
    """The workers read the files as they are: a profile built there cannot claim cleaned texts."""
    with pytest.raises(InputError, match="not on Ray"):
        cluster.build_profile_on_ray(FakeEmbedder(), [tmp_path / "bg.txt"], ProfileSettings(clean_html=True))


def test_sources_expand_globs_and_folders_and_keep_uris(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ("a.txt", "b.md", "sub/c.txt", "skip.csv"):
        (tmp_path / name).write_text("x\n")
    assert [p.rsplit("/", 1)[-1] for p in cluster.expand_sources([tmp_path / "sub", f"{tmp_path}/*.txt"])] \
        == ["c.txt", "a.txt"]
    assert cluster.expand_sources(["s3://bucket/corpus/"]) == ["s3://bucket/corpus/"]
    with pytest.raises(InputError, match="matches no file"):
        cluster.expand_sources([f"{tmp_path}/*.jsonl"])


# --------------------------------------------------------------------------- ONNX workers (tiny model)


@pytest.fixture(scope="module")
def tiny_embedder(tmp_path_factory):
    """The tiny model on the ONNX engine, as a local CPU run loads it (its graph exported once)."""
    folder = write_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
    embedder = load_model(str(folder), device="cpu", precision="float32")
    assert embedder.engine == "onnx"
    return embedder


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory):
    """600 distinct AG News descriptions, more than a block per worker at a 128-row block."""
    frame = pd.read_csv(DATA / "agnews" / "test.csv", dtype=str, keep_default_na=False)
    texts = list(dict.fromkeys(" ".join(t.replace("\\", " ").split()) for t in frame["description"][:600]))
    path = tmp_path_factory.mktemp("tiny-corpus") / "news.txt"
    path.write_text("\n".join(texts) + "\n")
    return path, texts


TINY_SETTINGS = ProfileSettings(n_pairs=400, seed=SEED, geometries=("center", "whiten", "abtt"),
                                geometry_settings={"abtt": {"n_directions": 2}})
"""One settings object for the Ray and the local build, geometry settings included."""


def _tiny_background(embedder, path, **kwargs):
    return cluster.build_background_on_ray([path], TINY_SETTINGS, embedder=embedder,
                                           model=str(embedder.info.path), **kwargs)


def test_cpu_workers_run_the_prepared_onnx_graph_and_equal_the_local_build(ray_instance, tiny_embedder,
                                                                           tiny_corpus, monkeypatch):
    path, texts = tiny_corpus
    monkeypatch.setattr(cluster, "BLOCK_ROWS", 128)
    background, _ = _tiny_background(tiny_embedder, path, workers=2)
    local = build_profile(tiny_embedder, texts, TINY_SETTINGS)
    ray_info = background.provenance["ray"]
    assert (ray_info["worker_engine"], ray_info["worker_device"], ray_info["workers"]) == ("onnx", "cpu", 2)
    assert ray_info["blocks"] >= 4
    assert background.sentences == local.provenance["background"]["sentences"] == len(texts)
    assert np.abs(background.query_reference - local.query_reference).max() <= 1e-5
    mine, theirs = background.sketches["none"]["cosine"], local.references("none")["cosine"].background
    assert mine.n == theirs.n == 400
    np.testing.assert_allclose([mine.mean, mine.min, mine.max], [theirs.mean, theirs.min, theirs.max], atol=1e-5)
    fixes = {fix: local.geometries[fix].transform.get_params() for fix in local.geometries}
    assert {fix: t.get_params() for fix, t in background.transforms.items()} == fixes
    assert fixes["abtt"]["n_directions"] == 2


def test_a_worker_whose_graph_differs_stops_the_build_with_a_message(ray_instance, tiny_embedder,
                                                                     tiny_corpus, monkeypatch):
    wrong = {**prepared_graph(tiny_embedder), "graph_sha256": "0" * 64}
    monkeypatch.setattr(cluster, "prepared_graph", lambda embedder: wrong)
    with pytest.raises(ModelError, match=r"a Ray worker stopped the build: The ONNX graph .*model\.onnx on this "
                                         r"machine differs .*CALIBSIM_ONNX_DIR"):
        _tiny_background(tiny_embedder, tiny_corpus[0], workers=1)


def test_the_workers_engine_is_the_one_a_local_run_chooses_on_their_device(tiny_embedder):
    def choice(device, precision="float32"):
        engine, graph = cluster.worker_engine(tiny_embedder, model=str(tiny_embedder.info.path), device=device,
                                              precision=precision, allow_pickle=False)
        return engine, graph and Path(graph["graph"])

    assert choice("cpu") == ("onnx", tiny_embedder.graph)
    assert choice("cuda") == ("torch", None)
    assert choice("cpu", "bfloat16") == ("torch", None)
    with pytest.raises(ModelError, match="int8 runs on the ONNX engine only"):
        choice("cuda", "int8")


def test_a_prepared_graph_runs_elsewhere_only_on_the_same_files(tiny_embedder, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_embedder.info.path, folder)
    graph = tmp_path / "model.onnx"
    shutil.copyfile(tiny_embedder.graph, graph)
    prepared = {**prepared_graph(tiny_embedder), "graph": str(graph)}
    worker = load_prepared_graph(str(folder), prepared, threads=1)
    texts = ["A cat sits on the mat.", "Stocks fell sharply on Monday."]
    np.testing.assert_array_equal(worker.encode_batch(texts), tiny_embedder.encode_batch(texts))
    assert worker.fingerprint == tiny_embedder.fingerprint
    graph.write_bytes(graph.read_bytes()[:-1] + b"\0")
    with pytest.raises(ModelError, match=rf"{graph} on this machine differs from the one prepared"):
        load_prepared_graph(str(folder), prepared)
    graph.unlink()
    with pytest.raises(ModelError, match=rf"prepared ONNX graph {graph} is missing on this machine"):
        load_prepared_graph(str(folder), prepared)
    shutil.copyfile(tiny_embedder.graph, graph)
    (folder / "config.json").write_text((folder / "config.json").read_text() + " ")
    with pytest.raises(ModelError, match=r"model folder .* on this machine differs"):
        load_prepared_graph(str(folder), prepared)


# --------------------------------------------------------------------------- neighbours on Ray


@pytest.mark.parametrize(("metric", "stripes"), [("cosine", 2), ("euclidean", 1)])
def test_neighbours_on_ray_equal_the_local_neighbours(ray_instance, metric, stripes):
    """Neighbours on Ray, block against block, equal the neighbours on one machine."""
    from calibsim_gui.core.analysis.neighbours_ray import ray_neighbours

    vectors = np.random.default_rng(2).standard_normal((700, 12)).astype(np.float32)
    vectors[5] = vectors[4]                            # a tie: the lower row comes first, on Ray too
    seen = []
    hits, raw = ray_neighbours(vectors, metric, 6, block_rows=256, stripes=stripes,
                               progress=lambda done, total, message: seen.append((done, total)))
    local, local_raw, _, _ = top_hits(vectors, vectors, metric, 6, exclude=np.arange(700))
    np.testing.assert_array_equal(hits, local)
    np.testing.assert_array_equal(raw, local_raw)
    assert seen[-1] == (3, 3) and hits[4, 0] == 5 and hits[5, 0] == 4
