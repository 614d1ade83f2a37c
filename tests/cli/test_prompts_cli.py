"""`--prompt-name`, `--no-prompt`, `--query-prompt`, `--doc-prompt` on the command line (issue 17)."""

import json

import pandas as pd
import pytest

from calibsim_gui import cli
from tests.core.test_prompts import write_prompted_model
from tests.fakes import random_sentences


def test_prompt_name_and_no_prompt_exclude_each_other(capsys):
    with pytest.raises(SystemExit):
        cli.main(["score", "pairs.csv", "--prompt-name", "query", "--no-prompt"])
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_builds_scores_and_refuses_with_prompts(tmp_path, capsys):
    model = write_prompted_model(tmp_path / "e5-like")
    background = tmp_path / "bg.txt"
    background.write_text("\n".join(random_sentences(300, seed=5)) + "\n")
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": ["A cat sleeps.", "Markets fell."],
                  "sentence2": ["A cat is sleeping.", "I like soup."]}).to_csv(pairs, index=False)
    profile = tmp_path / "e5.calibsim-profile"
    common = ["--model", str(model), "--device", "cpu", "--no-cache", "-q"]
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "500",
                     "--out", str(profile), *common]) == 0
    capsys.readouterr()
    assert cli.main(["profile", "show", str(profile)]) == 0
    assert "prompt: 'query: '" in capsys.readouterr().out

    out = tmp_path / "scored.csv"
    assert cli.main(["score", str(pairs), "--profile", str(profile), "--out", str(out), *common]) == 0
    model_prov = json.loads((tmp_path / "scored.csv.provenance.json").read_text())["model"]
    assert model_prov["prompt"] == "query: " and model_prov["prompt_name"] == "query"
    assert model_prov["document_prompt"] == "passage: "

    capsys.readouterr()
    assert cli.main(["score", str(pairs), "--profile", str(profile), "--out", str(tmp_path / "x.csv"),
                     "--no-prompt", *common]) == 2
    err = capsys.readouterr().err
    assert "built with the prompt 'query: '" in err and "--prompt-name" in err and "rebuild" in err

    assert cli.main(["score", str(pairs), "--out", str(tmp_path / "y.csv"), "--prompt-name", "nope",
                     *common]) == 2
    assert "no prompt named 'nope'" in capsys.readouterr().err
