"""Fixtures shared by the core tests."""

import pytest


@pytest.fixture(scope="module")
def ray_instance():
    """A local 2-CPU Ray instance for one test module (Ray's start dominates such a module's time)."""
    ray = pytest.importorskip("ray", reason="the ray engine needs `pip install 'calibsim[cluster]'`")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
