"""Writing outputs: a full disk, inputs given as --out, side-cars, a cache that fills up.

A full disk is simulated without tmpfs: a subprocess lowers RLIMIT_FSIZE (SIGXFSZ ignored), so
every write past the limit fails with EFBIG, as it would with ENOSPC.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.cli import common
from tests.fakes import FakeEmbedder, random_sentences

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fake_model(monkeypatch):
    monkeypatch.setattr(common, "load_model", lambda args: FakeEmbedder())


def write_pairs(path, n):
    texts = random_sentences(2 * n, seed=5)
    pd.DataFrame({"sentence1": texts[:n], "sentence2": texts[n:]}).to_csv(path, index=False)
    return path


@pytest.fixture
def pairs(tmp_path):
    return write_pairs(tmp_path / "pairs.csv", 3)


@pytest.fixture
def background(tmp_path):
    path = tmp_path / "news.txt"
    path.write_text("\n".join(random_sentences(600, seed=2)) + "\n")
    return path


@pytest.fixture
def profile(background, tmp_path):
    out = tmp_path / "ref.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "500",
                     "--out", str(out), "-q"]) == 0
    return out


FULL_DISK = textwrap.dedent("""
    import json, resource, signal, sys
    from calibsim_gui import cli
    from calibsim_gui.cli import common
    from tests.fakes import FakeEmbedder
    import matplotlib.pyplot, reportlab.platypus, openpyxl     # loaded before the limit

    common.load_model = lambda args: FakeEmbedder()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
    sys.exit(cli.main(sys.argv[2:]))
""")


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".json", ".html", ".pdf", ".xlsx"])
def test_a_full_disk_is_a_clear_error_and_the_previous_output_stays_as_it_was(tmp_path, suffix):
    out = tmp_path / f"scored{suffix}"
    assert cli.main(["score", str(write_pairs(tmp_path / "small.csv", 3)), "--out", str(out), "-q"]) == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("scored")}
    big = write_pairs(tmp_path / "big.csv", 400)
    driver = tmp_path / "driver.py"
    driver.write_text(FULL_DISK)
    run = subprocess.run([sys.executable, str(driver), "20000", "score", str(big), "--out", str(out),
                          "--force", "--no-cache", "-q"], cwd=REPO, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert f"{out}: could not write the file (File too large)" in run.stderr
    assert "Nothing was written" in run.stderr and "Fix: the file is too large" in run.stderr
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith(("scored", ".scored"))}
    assert after == before                    # same files, same bytes; no temporary left


def test_a_profile_that_cannot_be_saved_is_a_clear_error(background, tmp_path, monkeypatch, capsys):
    import errno

    out = tmp_path / "ref.calibsim-profile"
    out.write_text("previous")

    def disk_full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", disk_full)
    code = cli.main(["profile", "build", "--background", str(background), "--pairs", "500",
                     "--out", str(out), "--force", "-q"])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device" in err and "free some disk space" in err
    assert out.read_text() == "previous" and [p.name for p in tmp_path.glob(".*")] == []


def refused(argv, capsys, *protected):
    before = [p.read_bytes() for p in protected]
    assert cli.main(argv + ["--force"]) == 2
    err = capsys.readouterr().err
    assert "would overwrite the input" in err, err
    assert [p.read_bytes() for p in protected] == before


def test_no_command_overwrites_its_inputs_even_with_force(pairs, background, profile, tmp_path, capsys):
    anchors = tmp_path / "anchors.csv"
    anchors.write_text("level,text_a,text_b\nsame,a,a\n")
    human = tmp_path / "h.calibsim-human"
    human.write_text("{}")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("one\ntwo\n")
    (docs / "m.csv").write_text("left from before\n")
    build = ["profile", "build", "--background", str(background), "--anchors", str(anchors)]
    refused(build + ["--out", str(background)], capsys, background)
    refused(build + ["--out", str(anchors)], capsys, anchors)
    refused(["profile", "merge", str(profile), str(profile), "--out", str(profile)], capsys, profile)
    refused(["profile", "upgrade", str(profile), "--out", str(profile)], capsys, profile)
    refused(["human", "fit", str(pairs), "--out", str(pairs)], capsys, pairs)
    refused(["human", "fit", str(pairs), "--profile", str(profile), "--out", str(profile)], capsys, profile)
    refused(["score", str(pairs), "--out", str(pairs)], capsys, pairs)
    refused(["score", str(pairs), "--profile", str(profile), "--out", str(profile)], capsys, profile)
    refused(["score", str(pairs), "--human", str(human), "--out", str(human)], capsys, human)
    refused(["matrix", str(docs), "--out", str(docs / "m.csv")], capsys, docs / "m.csv")
    refused(["matrix", str(docs / "a.txt"), "--profile", str(profile), "--out", str(profile)],
            capsys, profile)
    refused(["compare", str(pairs), "--model", "builtin", "--model", "builtin", "--out", str(pairs)],
            capsys, pairs)
    refused(["evaluate", str(pairs), "--out", str(pairs)], capsys, pairs)
    refused(["diagnose", str(pairs), "--column", "sentence1", "--out", str(pairs)], capsys, pairs)


def test_a_table_whose_side_car_is_an_input_is_refused(pairs, profile, tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("x\n")
    sidecar = tmp_path / "t.csv.provenance.json"
    sidecar.write_text("{}")
    refused(["score", str(pairs), "--profile", str(sidecar), "--out", str(table)], capsys, table, sidecar)


def test_a_side_car_follows_the_force_rule_of_its_table(pairs, tmp_path, capsys):
    out, sidecar = tmp_path / "s.csv", tmp_path / "s.csv.provenance.json"
    sidecar.write_text("an older run's provenance")
    assert cli.main(["score", str(pairs), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{sidecar}: the output file exists already" in err and "--force" in err
    assert sidecar.read_text() == "an older run's provenance" and not out.exists()
    assert cli.main(["score", str(pairs), "--out", str(out), "--force", "-q"]) == 0
    assert json.loads(sidecar.read_text())["formula_protection"]["applied"] is True


def test_formula_protection_is_on_by_default_and_keep_formulas_turns_it_off(tmp_path, capsys):
    pairs = tmp_path / "p.csv"
    pd.DataFrame({"sentence1": ["=HYPERLINK(\"http://x\")", "fine"],
                  "sentence2": ["@SUM(A1)", "-minus"]}).to_csv(pairs, index=False)
    out = tmp_path / "s.csv"
    assert cli.main(["score", str(pairs), "--out", str(out), "-q"]) == 0
    frame = pd.read_csv(out)
    assert frame["sentence1"].tolist() == ["'=HYPERLINK(\"http://x\")", "fine"]
    assert frame["sentence2"].tolist() == ["'@SUM(A1)", "'-minus"]
    assert cli.main(["score", str(pairs), "--out", str(out), "--force", "--keep-formulas", "-q"]) == 0
    assert pd.read_csv(out)["sentence1"].tolist()[0] == "=HYPERLINK(\"http://x\")"
    protection = json.loads((tmp_path / "s.csv.provenance.json").read_text())["formula_protection"]
    assert protection["applied"] is False
    capsys.readouterr()
    assert cli.main(["score", str(pairs), "--out", "-", "-q"]) == 0
    assert "'=HYPERLINK" in capsys.readouterr().out


def test_a_cache_that_fills_up_is_a_warning_and_the_scores_are_right(pairs, tmp_path, monkeypatch, capsys):
    from calibsim_gui.core.embedding.cache import EmbeddingCache

    assert cli.main(["score", str(pairs), "--out", str(tmp_path / "clean.csv"), "--no-cache", "-q"]) == 0
    connect = EmbeddingCache._connect

    def tiny(self):
        conn = connect(self)
        conn.execute("PRAGMA max_page_count = 3")       # SQLite then answers "database or disk is full"
        return conn

    monkeypatch.setattr(EmbeddingCache, "_connect", tiny)
    capsys.readouterr()
    assert cli.main(["score", str(pairs), "--out", str(tmp_path / "full.csv"), "-q"]) == 0
    err = capsys.readouterr().err
    assert "calibsim: warning: The embedding cache" in err and "database or disk is full" in err
    assert "Traceback" not in err
    assert (tmp_path / "full.csv").read_bytes() == (tmp_path / "clean.csv").read_bytes()



@pytest.mark.parametrize("folder_problem", ["missing", "read-only"])
def test_an_output_folder_that_cannot_take_the_file_is_refused_before_any_work(
        pairs, tmp_path, capsys, monkeypatch, folder_problem):
    out = tmp_path / "nowhere" / "scores.csv"
    if folder_problem == "read-only":
        out.parent.mkdir()
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **k: False if Path(p) == out.parent
                            else real_access(p, mode, **k))        # as for a non-root user after chmod 555
    monkeypatch.setattr(common, "load_model", lambda args: pytest.fail("the model was loaded"))
    assert cli.main(["score", str(pairs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(out.parent) in err and ("does not exist" if folder_problem == "missing" else "cannot be written") in err
