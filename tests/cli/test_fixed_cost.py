"""#29: a repeated 10-pair `calibsim score` (warm cache) gives the same table without opening
ONNX Runtime, hashing the model's weights again, or importing psutil or ssl; #44: nor, for a
small CSV, pandas or pyarrow (first run included)."""

import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import DATA

RUN = """
import sys
from calibsim_gui.cli import main
from calibsim_gui.core.embedding import file_digests
hashed = []
real_hash = file_digests.hash_file
file_digests.hash_file = lambda path: hashed.append(path) or real_hash(path)
status = main(["score", sys.argv[1], "--out", sys.argv[2], "--force", "--quiet"])
loaded = sorted(m for m in ("onnxruntime", "pandas", "psutil", "pyarrow", "ssl", "torch") if m in sys.modules)
weights = sorted(str(p) for p in hashed if str(p).endswith(".safetensors"))
print("status", status, "loaded", loaded, "weights hashed", weights)
"""


@pytest.mark.slow
def test_a_repeated_score_opens_no_session_and_hashes_no_weights(tmp_path):
    pairs = tmp_path / "pairs.csv"
    pd.read_csv(DATA / "stsb" / "test.csv")[["sentence1", "sentence2"]].head(10).to_csv(pairs, index=False)
    env = {**os.environ, "CALIBSIM_CACHE_DIR": str(tmp_path / "cache")}
    lines = []
    for run in ("first", "second"):
        result = subprocess.run([sys.executable, "-c", RUN, str(pairs), str(tmp_path / f"{run}.csv")],
                                capture_output=True, text=True, env=env, check=True)
        lines.append(result.stdout.strip().splitlines()[-1])
    assert lines[0].startswith("status 0 loaded ['onnxruntime'] ") and "model.safetensors" in lines[0]
    assert lines[1] == "status 0 loaded [] weights hashed []"
    assert (tmp_path / "first.csv").read_bytes() == (tmp_path / "second.csv").read_bytes()
