"""#29: a mistyped metric or geometry fix is refused when the command line is parsed.

It used to be refused only once the model was loaded and its references prepared.
"""

import pandas as pd
import pytest

from calibsim_gui import cli

LINES = [
    ["score", "{pairs}", "--metrics", "cosine,{metric}"],
    ["score", "{pairs}", "--geometry", "{fix}"],
    ["evaluate", "{pairs}", "--metrics", "{metric}"],
    ["evaluate", "{pairs}", "--geometry", "{fix}"],
    ["profile", "build", "--background", "{docs}", "--metrics", "{metric}", "--out", "{d}/ref"],
    ["compare", "{pairs}", "--model", "builtin", "--model", "builtin", "--metric", "{metric}"],
    ["human", "fit", "{pairs}", "--metric", "{metric}", "--out", "{d}/h"],
    ["human", "fit", "{pairs}", "--geometry", "{fix}", "--out", "{d}/h"],
    ["matrix", "{docs}", "--metric", "{metric}", "--out", "{d}/m.csv"],
    ["matrix", "{docs}", "--geometry", "{fix}", "--out", "{d}/m.csv"],
    ["search", "{docs}", "--corpus", "{docs}", "--metric", "{metric}"],
    ["search", "{docs}", "--corpus", "{docs}", "--geometry", "{fix}"],
    ["threshold", "{pairs}", "--metric", "{metric}"],
    ["threshold", "{pairs}", "--geometry", "{fix}"],
]


@pytest.mark.parametrize("line", LINES, ids=[" ".join(w for w in line if "{" not in w) for line in LINES])
def test_a_mistyped_metric_or_geometry_fix_is_refused_before_any_work(line, files, tmp_path, capsys, loads):
    pairs, docs = files
    argv = [a.format(pairs=pairs, docs=docs, d=tmp_path, metric="cosin", fix="whitn") for a in line]
    with pytest.raises(SystemExit) as stopped:            # argparse's own refusal: usage and the reason
        cli.main([*argv, "-q"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and loads == []
    assert ("unknown metric(s) ['cosin']. Fix: choose from cosine, dot" in err
            or "unknown geometry fix(es) ['whitn']. Fix: choose from none, center, whiten, abtt, soft" in err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["news.txt", "pairs.csv"]


def test_known_names_still_run(files, tmp_path, loads):
    pairs, _ = files
    out = tmp_path / "s.csv"
    assert cli.main(["score", str(pairs), "--metrics", "cosine,dot", "--geometry", "none", "--out", str(out),
                     "-q"]) == 0
    assert {"cosine_calibrated", "dot_calibrated"} <= set(pd.read_csv(out).columns)
