"""#44: `calibsim score` of a small CSV, read and written without pandas, prints and writes the
bytes the pandas path gives (real model: slow)."""

import csv

import pytest

from calibsim_gui import cli
from calibsim_gui.core.io import light_tables
from tests.conftest import DATA


@pytest.mark.slow
@pytest.mark.parametrize("out, flags", [("-", ["--interval", "--norms"]), ("s.tsv", []),
                                        ("s.csv", ["--interval", "--metrics", "cosine,dot"])])
def test_a_small_csv_scores_to_the_same_bytes_with_and_without_pandas(tmp_path, monkeypatch, capsys, out, flags):
    pairs = tmp_path / "pairs.csv"
    with open(DATA / "stsb" / "test.csv", newline="", encoding="utf-8") as f:
        rows = [row[1:] for row in csv.reader(f)][:11]
    with open(pairs, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows + [["a \"quoted\", text", "=1+1"]])
    results = []
    for path in ("light", "pandas"):
        if path == "pandas":
            monkeypatch.setattr(light_tables, "light_pair_table", lambda *a, **k: None)
        target = out if out == "-" else str(tmp_path / f"{path}-{out}")
        assert cli.main(["score", str(pairs), "--out", target, "--force", "--quiet", *flags]) == 0
        printed = capsys.readouterr().out
        results.append(printed if out == "-" else (tmp_path / f"{path}-{out}").read_bytes())
    assert results[0] == results[1] and len(results[0]) > 500
