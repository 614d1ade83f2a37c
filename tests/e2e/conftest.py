import pytest


@pytest.fixture(autouse=True)
def _private_settings(isolated_settings):
    """Every test here keeps its QSettings in a temporary folder."""


@pytest.fixture(scope="session")
def stsb_cache_dir(tmp_path_factory):
    """One embedding cache shared by the tests that score STS-B test with the real model
    (as a user's cache would be); tests of cold-cache behaviour use their own."""
    return tmp_path_factory.mktemp("stsb-shared-cache")


@pytest.fixture
def shared_stsb_cache(stsb_cache_dir, monkeypatch):
    monkeypatch.setenv("CALIBSIM_CACHE_DIR", str(stsb_cache_dir))
    return stsb_cache_dir
