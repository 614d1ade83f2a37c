import pytest


@pytest.fixture(autouse=True)
def _private_settings(isolated_settings):
    """Every test here keeps its QSettings in a temporary folder."""
