"""No network: the real scoring path (built-in model, reference, scores, HTML report) run in a
fresh interpreter whose every socket connection and name lookup is recorded and refused.

The recorder is a Python audit hook installed before calibsim is imported, so it sees every
socket opened through Python by any library. The environment holds none of the "offline"
variables the test suite sets, so what keeps calibsim off the network is calibsim itself. A
control run proves the recorder sees a real attempt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
DRIVER = textwrap.dedent("""
    import json, os, socket, sys

    attempts = []
    LOOKUPS = {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
               "socket.gethostbyaddr", "socket.getnameinfo"}
    SENDS = {"socket.connect", "socket.sendto", "socket.sendmsg"}

    def refuse(event, args):
        if event in SENDS and args[0].family != socket.AF_UNIX:
            attempts.append([event, repr(args[1])])
            raise OSError(101, "network is unreachable (recorded by the test)")
        if event in LOOKUPS:
            attempts.append([event, repr(args[0])])
            raise OSError(101, "network is unreachable (recorded by the test)")

    sys.addaudithook(refuse)
    try:
        if sys.argv[1] == "fetch":          # the control: a plain download attempt
            import urllib.request
            try:
                urllib.request.urlopen("http://example.com/", timeout=2)
            except OSError:
                pass
            code = 0
        else:
            from calibsim_gui import cli
            code = cli.main(sys.argv[1:])
    finally:
        with open(os.environ["ATTEMPTS_FILE"], "w") as f:
            json.dump(attempts, f)
    sys.exit(code)
""")


def run_recorded(tmp_path, *argv) -> list:
    """Run the driver with `argv`; return the recorded network attempts."""
    driver, record = tmp_path / "driver.py", tmp_path / "attempts.json"
    driver.write_text(DRIVER)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(PYTHONPATH=str(REPO), ATTEMPTS_FILE=str(record), HF_HOME=str(tmp_path / "hf-home"),
               CALIBSIM_CACHE_DIR=str(tmp_path / "cache"))
    result = subprocess.run([sys.executable, str(driver), *argv], env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(record.read_text())


@pytest.mark.slow
def test_scoring_with_the_built_in_model_and_writing_a_report_never_touches_the_network(tmp_path):
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": ["A man is playing a guitar.", "The cat sleeps.", "Stocks fell."],
                  "sentence2": ["A person plays the guitar.", "A dog barks.", "Markets dropped."],
                  "score": [4.8, 0.4, 4.0]}).to_csv(pairs, index=False)
    report = tmp_path / "report.html"
    attempts = run_recorded(tmp_path, "score", str(pairs), "--out", str(report), "--device", "cpu",
                            "--figures", "-q")
    assert attempts == []
    html = report.read_text(encoding="utf-8")
    assert "all-MiniLM-L6-v2" in html and "A person plays the guitar." in html
    assert (tmp_path / "report-distribution.png").stat().st_size > 0


def test_the_recorder_sees_an_attempt_to_download(tmp_path):
    attempts = run_recorded(tmp_path, "fetch")
    assert attempts and attempts[0][0] == "socket.getaddrinfo" and "example.com" in attempts[0][1]
