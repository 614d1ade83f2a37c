"""#44: `calibsim score` of a small CSV, read and written without pandas, prints and writes the
bytes the pandas path gives (real model: slow)."""

import csv
import json

import pytest

from calibsim_gui import cli
from calibsim_gui.core.io import light_tables
from tests.conftest import DATA


@pytest.mark.slow
@pytest.mark.parametrize("out, flags, scores", [("-", ["--interval", "--norms"], False), ("s.tsv", [], False),
                                                ("s.csv", ["--interval", "--metrics", "cosine,dot"], False),
                                                ("s.csv", ["--metrics", "manhattan,cosine"], True),
                                                ("-", ["--label", "score"], True)])
def test_a_small_csv_scores_to_the_same_bytes_with_and_without_pandas(tmp_path, monkeypatch, capsys, out, flags,
                                                                       scores):
    pairs = tmp_path / "pairs.csv"
    with open(DATA / "stsb" / "test.csv", newline="", encoding="utf-8") as f:
        rows = [row[0 if scores else 1:] for row in csv.reader(f)][:11]     # with the human scores or not
    with open(pairs, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows + [[*["4.5"][:scores], "a \"quoted\", text", "=1+1"]])
    results = []
    for path in ("light", "pandas"):
        if path == "pandas":
            monkeypatch.setattr(light_tables, "light_pair_table", lambda *a, **k: None)
        target = out if out == "-" else str(tmp_path / f"{path}-{out}")
        quiet = [] if scores and out != "-" else ["--quiet"]        # the summary prints the agreement
        assert cli.main(["score", str(pairs), "--out", target, "--force", *quiet, *flags]) == 0
        printed = capsys.readouterr().out.replace(f"{path}-{out}", out)
        if out != "-":
            provenance = json.loads((tmp_path / f"{path}-{out}.provenance.json").read_text(encoding="utf-8"))
            provenance.pop("created"), provenance["encoding"].pop("from_cache")     # the second run: cached
        results.append(printed if out == "-" else (printed, (tmp_path / f"{path}-{out}").read_bytes(), provenance))
    assert results[0] == results[1] and len(str(results[0])) > 500
    if scores and out != "-":
        assert "agreement with human scores in 'score'" in results[0][0]
