"""Shared test set-up: offscreen Qt, a private cache, no network, fake and real embedders."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

_connect = socket.socket.connect


def _local_only(sock, address):
    if sock.family == socket.AF_UNIX:
        return _connect(sock, address)
    raise RuntimeError(f"a test tried to open a network connection to {address!r}")


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Every test runs with outgoing network connections refused."""
    monkeypatch.setattr(socket.socket, "connect", _local_only)
    monkeypatch.setattr(socket.socket, "connect_ex", _local_only)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Each test gets an empty embedding cache directory."""
    monkeypatch.setenv("CALIBSIM_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="session", autouse=True)
def shared_onnx_graphs(tmp_path_factory):
    """ONNX graphs the ONNX engine exports (seconds each) are kept for the whole session, in a
    private folder: each test still gets an empty embedding cache."""
    os.environ["CALIBSIM_ONNX_DIR"] = str(tmp_path_factory.mktemp("onnx-graphs"))
    os.environ["CALIBSIM_TORCH_GRAPH_DIR"] = str(tmp_path_factory.mktemp("torch-graphs"))   # the same for
    yield                                                                                   # torch's traces
    os.environ.pop("CALIBSIM_ONNX_DIR", None)
    os.environ.pop("CALIBSIM_TORCH_GRAPH_DIR", None)


@pytest.fixture(autouse=True)
def private_state(tmp_path_factory, monkeypatch):
    """Each test keeps autosaved sessions and saved profiles in its own folders, never the user's."""
    monkeypatch.setenv("CALIBSIM_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("CALIBSIM_DATA_DIR", str(tmp_path_factory.mktemp("data")))


@pytest.fixture(autouse=True)
def no_unsaved_prompts(monkeypatch):
    """Closing a window in a test never waits on the modal Save / Discard / Cancel question
    (the tests of that question turn it back on). Qt-free: only if the window module is loaded."""
    module = sys.modules.get("calibsim_gui.qt.shell.main_window")
    if module is not None:
        monkeypatch.setattr(module.MainWindow, "ask_before_discarding", False)


@pytest.fixture
def isolated_settings(tmp_path):
    """QSettings of the test live in a temporary folder, never the user's."""
    from PySide6.QtCore import QSettings, QStandardPaths

    formats, user = (QSettings.Format.NativeFormat, QSettings.Format.IniFormat), QSettings.Scope.UserScope
    for fmt in formats:
        QSettings.setPath(fmt, user, str(tmp_path / "settings"))
    yield
    default = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.GenericConfigLocation)
    for fmt in formats:
        QSettings.setPath(fmt, user, default)


@pytest.fixture
def fake_embedder():
    from tests.fakes import FakeEmbedder

    return FakeEmbedder()


@pytest.fixture(scope="session")
def real_embedder():
    """The built-in all-MiniLM-L6-v2, loaded once per test session."""
    from calibsim_gui.core.embedding.models import load_model

    return load_model(None, device="cpu")


@pytest.fixture(scope="session")
def derived_model_dirs(tmp_path_factory):
    """Model folders derived from the built-in model (see tests/derived_models.py), built once:
    kind ("compressed", "shallow", "shifted") -> folder."""
    from tests.derived_models import write_derived_models

    return write_derived_models(tmp_path_factory.mktemp("derived-models"))


@pytest.fixture(scope="session")
def stsb_test_path():
    path = DATA / "stsb" / "test.csv"
    if not path.exists():
        pytest.fail(f"{path} is missing: the tests need ../shared/data beside the checkout")
    return path


@pytest.fixture
def labelled_pairs(tmp_path):
    """150 labelled pairs on a 0-5 scale: a text with itself scores 5, with another text 0."""
    import pandas as pd

    from tests.fakes import random_sentences

    texts = random_sentences(300, seed=21)
    rows = [(5.0 if i % 2 else 0.0, texts[i], texts[i] if i % 2 else texts[i + 150]) for i in range(150)]
    path = tmp_path / "labelled.csv"
    pd.DataFrame(rows, columns=["score", "sentence1", "sentence2"]).to_csv(path, index=False)
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under `make test` (pytest-xdist): a module's tests run in one process, so its module and
    session fixtures are built once; the benchmark quick runs, each in its own process already,
    are spread one by one over the test processes."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if module == "tests/test_benchmarks.py" else module

    return ModuleScheduling(config, log)
