"""Memory limits of the process itself (``ulimit -v``, a container's cgroup limit) are respected,
not hit: the budget check refuses up front what they cannot hold, and an allocation that fails
all the same ends in the out-of-memory message, never a pandas or numpy traceback.

Each run is a `calibsim score` process whose driver lowers RLIMIT_AS to what it already maps
plus 150 MB, once the libraries the run needs are loaded, and then reads a 16 MB pairs file
(reading and parsing it holds about 9 times that).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from calibsim_gui.core.io import memory
from tests.fakes import random_sentences

resource = pytest.importorskip("resource")

REPO = Path(__file__).resolve().parents[2]
DRIVER = textwrap.dedent("""
    import resource, sys
    import numpy, pandas, psutil
    from calibsim_gui import cli
    from calibsim_gui.cli import common
    from calibsim_gui.core.io import inputs, memory
    from tests.fakes import FakeEmbedder

    common.load_model = lambda args: FakeEmbedder()
    if sys.argv[1] == "--estimate-misses":       # as if the budget check could not see the limit
        memory.process_limit = lambda: None
    mapped = psutil.Process().memory_info().vms
    resource.setrlimit(resource.RLIMIT_AS, (mapped + 150_000_000, resource.getrlimit(resource.RLIMIT_AS)[1]))
    sys.exit(cli.main(sys.argv[2:]))
""")


@pytest.fixture
def run_limited(tmp_path):
    texts = random_sentences(2000, seed=12)
    pairs = tmp_path / "pairs.csv"
    rows = (len(texts) // 2) * 170                   # ~16 MB
    pd.DataFrame({"sentence1": (texts[:1000] * 170)[:rows],
                  "sentence2": (texts[1000:] * 170)[:rows]}).to_csv(pairs, index=False)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)

    def run(mode: str) -> tuple[int, str]:
        done = subprocess.run([sys.executable, str(driver), mode, "score", str(pairs), "--quiet",
                               "--memory-budget", "64G"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, check=False, env={**os.environ, "PYTHONPATH": str(REPO),
                                                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
        return done.returncode, done.stderr

    return pairs, run


def test_the_budget_check_refuses_what_the_address_space_limit_cannot_hold(run_limited):
    pairs, run = run_limited
    code, err = run("--as-is")
    assert code == 2 and "Traceback" not in err, err
    assert err.startswith(f"calibsim: error: {pairs}: reading 1 file of ") and err.count("\n") == 1, err
    assert "more than this process may still take" in err and "address-space limit (ulimit -v)" in err
    assert "raise that limit" in err


def test_an_allocation_that_fails_anyway_is_the_out_of_memory_message(run_limited):
    pairs, run = run_limited
    code, err = run("--estimate-misses")
    assert code == 2 and "Traceback" not in err, err
    assert err.startswith("calibsim: error: ran out of memory while working on ") and str(pairs) in err
    assert "Fix: " in err and err.count("\n") == 1, err


def test_a_containers_memory_limit_lowers_the_default_budget(tmp_path, monkeypatch):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("2000000000\n")
    (tmp_path / "memory" / "memory.usage_in_bytes").write_text("500000000\n")
    membership = tmp_path / "cgroup"
    membership.write_text("4:memory:/docker/abc\n0::/\n")       # v1, as a container sees itself
    assert memory.cgroup_memory(tmp_path, membership) == (2_000_000_000, 500_000_000)
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text(f"{2**63 - 4096}\n")     # no limit
    assert memory.cgroup_memory(tmp_path, membership) is None
    (tmp_path / "memory.max").write_text("1000000000\n")                                 # v2
    (tmp_path / "memory.current").write_text("100000000\n")
    assert memory.cgroup_memory(tmp_path, membership) == (1_000_000_000, 100_000_000)

    monkeypatch.delenv(memory.BUDGET_ENV, raising=False)
    monkeypatch.setattr(memory, "cgroup_memory", lambda: (1_000_000_000, 100_000_000))
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert memory.default_budget() == 450_000_000               # half of the 900 MB left
    with pytest.raises(memory.InputError, match=r"more than this process may still take \(900.0 MB\) "
                                                r"under the memory limit of this container"):
        memory.check_budget(2_000_000_000, 64_000_000_000, what="this run", fix="use less")
