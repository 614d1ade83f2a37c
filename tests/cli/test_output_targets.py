"""#29: an output that can only fail once written is refused before any model is loaded.

A folder where --out (or its table side-car, a figure, the report's anchor ladder) goes, or an
output "folder" that is a file, used to fail only at write time, after the whole encoding; an
output naming an input the command did not list (--band-pairs, a file of the --model folder) was
replaced. Each is now one message naming the path and the fix, exit 2, and nothing is written.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from calibsim_gui import cli

REPO = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("loads")        # the fake model, in every test


def contents(folder):
    return sorted((str(p.relative_to(folder)), p.read_bytes() if p.is_file() else None)
                  for p in folder.rglob("*") if "cache" not in p.parts)


COMMANDS = {          # command line (after the command's output: '{out}'), file made a folder
    "score table": (["score", "{pairs}", "--out", "{d}/s.csv"], "s.csv"),
    "score side-car": (["score", "{pairs}", "--out", "{d}/s.csv"], "s.csv.provenance.json"),
    "score report": (["score", "{pairs}", "--out", "{d}/r.html"], "r.html"),
    "score figure": (["score", "{pairs}", "--out", "{d}/r.json", "--figures"], "r-distribution.svg"),
    "score anchor ladder": (["score", "{pairs}", "--anchors", "{anchors}", "--out", "{d}/r.json"],
                            "r-anchors.json"),
    "matrix": (["matrix", "{background}", "--out", "{d}/m.xlsx"], "m.xlsx"),
    "search": (["search", "{pairs}", "--corpus", "{background}", "--out", "{d}/h.tsv"], "h.tsv"),
    "profile build": (["profile", "build", "--background", "{background}", "--pairs", "100",
                       "--out", "{d}/ref"], "ref.calibsim-profile"),
    "human fit": (["human", "fit", "{pairs}", "--out", "{d}/h.calibsim-human"], "h.calibsim-human"),
    "compare": (["compare", "{pairs}", "--model", "builtin", "--model", "builtin", "--out", "{d}/c.csv"],
                "c.csv"),
    "evaluate": (["evaluate", "{pairs}", "--out", "{d}/e.json"], "e.json"),
    "threshold": (["threshold", "{pairs}", "--out", "{d}/t.json"], "t.json"),
    "diagnose": (["diagnose", "{background}", "--out", "{d}/g.json"], "g.json"),
    "reference-texts": (["reference-texts", "--pairs", "{pairs}", "--out", "{d}/t.txt"], "t.txt"),
}


@pytest.mark.parametrize("case", COMMANDS)
def test_a_folder_where_an_output_file_goes_is_refused_before_the_model_loads(case, files, tmp_path,
                                                                             capsys, loads):
    pairs, background = files
    argv, folder_name = COMMANDS[case]
    out = tmp_path / "out"
    out.mkdir()
    (out / folder_name).mkdir()
    anchors = tmp_path / "anchors.csv"
    anchors.write_text("level,text_a,text_b\nsame,a,a\n")
    before = contents(tmp_path)
    argv = [a.format(pairs=pairs, background=background, anchors=anchors, d=out) for a in argv]
    assert cli.main([*argv, "--force", "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{out / folder_name}: a folder has that name" in err and "Fix: choose another output name" in err
    assert "Traceback" not in err and loads == []          # no model loaded, nothing encoded
    assert contents(tmp_path) == before                      # nothing written


def test_an_output_whose_folder_is_a_file_is_refused_as_such(files, capsys, loads):
    pairs, _ = files
    assert cli.main(["score", str(pairs), "--out", str(pairs / "scores.csv")]) == 2
    err = capsys.readouterr().err
    assert f"{pairs} is a file, not a folder" in err and "Fix: choose an output name in a folder" in err
    assert loads == []


def test_the_band_pairs_of_a_profile_build_are_an_input_it_never_replaces(files, capsys):
    pairs, background = files
    before = pairs.read_bytes()
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "100",
                     "--band-pairs", str(pairs), "--out", str(pairs), "--force", "-q"]) == 2
    assert f"would overwrite the input {pairs}, even with --force" in capsys.readouterr().err
    assert pairs.read_bytes() == before


def test_a_file_of_the_model_folder_is_an_input_no_command_replaces(files, tmp_path, capsys, loads):
    pairs, _ = files
    model = tmp_path / "my-model"
    model.mkdir()
    readme = model / "README.json"
    readme.write_text('{"the model card": 1}')
    for argv in (["score", str(pairs), "--model", str(model), "--out", str(readme)],
                 ["evaluate", str(pairs), "--model", str(model), "--out", str(readme)]):
        assert cli.main([*argv, "--force", "-q"]) == 2
        assert f"would overwrite the input {model}, even with --force" in capsys.readouterr().err
    assert readme.read_text() == '{"the model card": 1}' and loads == []


@pytest.mark.parametrize("out", [[], ["--out", "-"]])
def test_figures_without_an_output_file_are_refused_before_the_model_loads(files, out, capsys, loads):
    pairs, background = files
    for argv in (["score", str(pairs)], ["search", str(pairs), "--corpus", str(background)]):
        if argv[0] == "search" and out:
            continue                                 # search prints no table: `-` is not an output there
        assert cli.main([*argv, *out, "--figures"]) == 2
        err = capsys.readouterr().err
        assert "--figures saves PNG and SVG files beside the --out file, and this run writes no file" in err
        assert "Fix: add --out FILE" in err and loads == []


def test_search_refuses_out_dash_before_the_model_loads(files, capsys, loads):
    pairs, background = files
    assert cli.main(["search", str(pairs), "--corpus", str(background), "--out", "-"]) == 2
    assert "-: unsupported output format" in capsys.readouterr().err and loads == []


def test_a_screenshot_folder_that_is_a_file_is_refused_before_the_app_opens(tmp_path):
    """`calibsim --screenshot results.png` used to open the window, then end in a traceback."""
    taken = tmp_path / "results.png"
    taken.write_bytes(b"a picture of the user's")
    run = subprocess.run([sys.executable, "-m", "calibsim_gui.cli", "--screenshot", str(taken)],
                         check=False, capture_output=True, text=True, timeout=300, cwd=REPO,
                         env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)})
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert f"argument --screenshot: {taken} is a file, not a folder" in run.stderr
    assert taken.read_bytes() == b"a picture of the user's"


@pytest.mark.parametrize("command", ["score", "matrix", "search"])
def test_a_report_names_the_model_folder_it_was_made_with(command, files, tmp_path):
    """Its Reproduce command runs the same folder from the report's folder, as the app's reports do;
    it used to name the model by its name alone, which finds no folder there."""
    pairs, background = files
    model = tmp_path / "my-model"
    model.mkdir()
    out = tmp_path / "reports" / "r.json"
    out.parent.mkdir()
    inputs = {"score": [str(pairs)], "matrix": [str(background)],
              "search": [str(background), "--corpus", str(background)]}[command]
    assert cli.main([command, *inputs, "--model", str(model), "--out", str(out), "-q"]) == 0
    again = json.loads(out.read_text())["reproduce"][-1]
    assert again.startswith(f"calibsim {command} ../") and " --model ../my-model " in again
