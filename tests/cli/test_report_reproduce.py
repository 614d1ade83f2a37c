"""A report made after editing the anchors reproduces its calibrated numbers with its own
Reproduce commands, run as a user would type them: the same argv, from the report's folder,
through `cli.main` in this process (the real built-in model, tiny inputs)."""

import html
import json
import re
import shlex

import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.core.references.anchors import AnchorLevel, AnchorSet, builtin_anchors
from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.calibration.profile_builder import default_profile, with_anchors
from calibsim_gui.core.reports import build_report, write_report

pytestmark = pytest.mark.slow


def edited_ladder() -> AnchorSet:
    """The built-in ladder as a user edits it in the app: a level's target moved, pairs dropped."""
    ladder = builtin_anchors()
    levels = tuple(AnchorLevel(lv.name, lv.label, 0.55) if 0.3 < lv.target < 0.7 else lv
                   for lv in ladder.levels)
    keep, seen = [], {}
    for pair in ladder.pairs:                   # at most 6 pairs per level
        seen[pair.level] = seen.get(pair.level, 0) + 1
        if seen[pair.level] <= 6:
            keep.append(pair)
    return AnchorSet(ladder.name, levels, tuple(keep))


def _run(argv, cwd, monkeypatch):
    """`argv` (a Reproduce command) run from `cwd` as `calibsim` would run it."""
    assert argv[0] == "calibsim"
    monkeypatch.chdir(cwd)
    assert cli.main([*argv[1:], "--quiet"]) == 0


def test_an_edited_anchor_report_reproduces_its_calibrated_numbers(tmp_path, monkeypatch, real_embedder):
    monkeypatch.setenv("CALIBSIM_CACHE_DIR", str(tmp_path / "cache"))
    pairs = tmp_path / "test.csv"
    pd.DataFrame({"sentence1": ["A cat sleeps on the sofa.", "Stocks fell sharply today.",
                                "The train was late.", "He plays the guitar."],
                  "sentence2": ["A cat is sleeping on a couch.", "I like tomato soup.",
                                "The train arrived late.", "She is reading a book."]}
                 ).to_csv(pairs, index=False)
    builtin = default_profile(real_embedder)           # as the app: the built-in model and reference
    edited = with_anchors(builtin, real_embedder, edited_ladder())
    result = score_pairs(load_pairs(pairs), real_embedder, edited, metrics=["cosine"])
    before = score_pairs(load_pairs(pairs), real_embedder, builtin, metrics=["cosine"])
    assert not result.frame["cosine_anchor_minmax"].equals(before.frame["cosine_anchor_minmax"])

    report = build_report(result, edited)
    written = write_report(report, tmp_path / "report.json")
    page = write_report(report, tmp_path / "report.html").read_text()
    data = json.loads(written.read_text())
    ladder = tmp_path / "report-anchors.json"
    assert ladder.is_file() and (tmp_path / "report-anchors.json").read_text()
    summary = dict(report.summary())
    assert "edited" in summary["Anchors"] and "built in" not in summary["Anchors"]
    assert summary["Reference profile"].endswith("+ edited anchors")
    assert "test.csv" in summary["Input (the pairs scored)"]

    (command,) = data["reproduce"]              # the built-in background, the edited ladder
    html_commands = html.unescape(re.search(r"<pre>(.*?)</pre>", page, re.S).group(1)).split("\n")
    head = command.rsplit(" --out ", 1)[0]          # each format writes its own again: report-again.json / .html
    assert head in [c.rsplit(" --out ", 1)[0] for c in html_commands]
    argv = shlex.split(command)
    assert argv[:3] == ["calibsim", "score", "test.csv"]
    assert argv[argv.index("--anchors") + 1] == "report-anchors.json"
    again = tmp_path / "again.json"
    argv[argv.index("--out") + 1] = str(again)
    _run(argv, tmp_path, monkeypatch)
    first = pd.DataFrame(data["rows"])
    second = pd.DataFrame(json.loads(again.read_text())["rows"])
    for column in ("cosine_raw", "cosine_calibrated", "cosine_anchor_minmax", "cosine_bg_percentile"):
        pd.testing.assert_series_equal(first[column], second[column], rtol=1e-6)
