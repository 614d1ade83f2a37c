"""Reports of STS-B test from the command line with the real model, and their reproduce recipe."""

import json
import shlex

import pandas as pd
import pytest

from calibsim_gui import cli

pytestmark = pytest.mark.slow


def test_every_format_from_the_command_line_and_the_recipe_reproduces_the_numbers(
        stsb_test_path, tmp_path, monkeypatch, shared_stsb_cache):
    for suffix in (".html", ".pdf", ".xlsx", ".json", ".csv"):
        out = tmp_path / f"stsb{suffix}"
        assert cli.main(["score", str(stsb_test_path), "--out", str(out), "--quiet"]) == 0
        assert out.stat().st_size > 100_000, suffix
    report = json.loads((tmp_path / "stsb.json").read_text())
    assert report["provenance"]["input_sha256"]
    (command,) = report["reproduce"]            # built-in reference: one command
    argv = shlex.split(command)
    assert argv[:2] == ["calibsim", "score"]          # the input, as named from the report's folder
    assert (tmp_path / argv[2]).resolve() == stsb_test_path.resolve()
    again = tmp_path / "again.json"
    argv[argv.index("--out") + 1] = str(again)
    monkeypatch.chdir(stsb_test_path.parent)
    assert cli.main(argv[1:] + ["--quiet"]) == 0
    first = pd.DataFrame(report["rows"])
    second = pd.DataFrame(json.loads(again.read_text())["rows"])
    pd.testing.assert_frame_equal(first, second, rtol=1e-6)
