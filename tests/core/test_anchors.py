"""Anchor ladders read from JSON or CSV files: hand-edited or broken files name the problem."""

import pytest

from calibsim_gui.core.references.anchors import builtin_anchors, load_anchors
from calibsim_gui.core.errors import InputError

GOOD_CSV = ("level,text_a,text_b,target\n"
            "low,The cat sleeps.,Stocks fell.,0.1\n"
            "high,\"A man, smiling.\",\"A man, smiling.\",1\n")


def test_a_csv_ladder_reads_quoted_texts_and_targets(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(GOOD_CSV)
    ladder = load_anchors(path)
    assert ladder.name == "mine" and ladder.targets == {"low": 0.1, "high": 1.0}
    assert ladder.pairs[1].text_a == "A man, smiling."


def test_the_built_in_ladder_round_trips_through_json(tmp_path):
    import json

    path = tmp_path / "ladder.json"
    path.write_text(json.dumps(builtin_anchors().to_dict()))
    assert load_anchors(path) == builtin_anchors()


@pytest.mark.parametrize("name, content, message", [
    ("list.json", "[1, 2]", "must be a JSON object, not a list"),
    ("broken.json", '{"levels": [', r"line 1: not valid JSON"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "not usable JSON"),
    ("nan.json", '{"levels": [{"name": "a", "target": NaN}, {"name": "b", "target": 1}], "pairs": []}',
     "NaN is not allowed"),
    ("keys.json", '{"levels": [{"target": 0.5}], "pairs": []}',
     "anchors are malformed \\(a level or pair has no “name” field\\)"),
    ("one-level.json", '{"levels": [{"name": "a", "target": 0.2}], '
                       '"pairs": [{"level": "a", "text_a": "x", "text_b": "y"}]}', "at least two levels"),
    ("empty.csv", "", "missing the columns level, text_a, text_b"),
    ("ragged.csv", "level,text_a,text_b,target\nlow,a,b,0.1\nhigh,a,b,1,extra\n", "line 3: has 5 fields"),
    ("quote.csv", 'level,text_a,text_b,target\nlow,"a,b,0.1\n', "line 2: has a quoted field that is never"),
    ("target.csv", "level,text_a,text_b,target\nlow,a,b,high\nhigh,c,d,1\n",
     "anchors are malformed \\(a level's target is not a number\\)"),
    ("latin.csv", "level,text_a,text_b,target\nlow,caf\xe9,b,0\n", "line 2: is not valid UTF-8"),
    ("ladder.txt", "low,a,b", "must be a .json or .csv file"),
])
def test_broken_anchor_files_are_refused_naming_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1" if name == "latin.csv" else "utf-8"))
    with pytest.raises(InputError, match=message) as caught:
        load_anchors(path)
    assert str(path) in str(caught.value)


def test_an_18_mb_ladder_is_refused_from_its_size_at_once(tmp_path):
    """Issue 30: an 18 MB ladder ran past 600 s (every pair is encoded by every run)."""
    path = tmp_path / "huge.csv"
    rows = "".join(f"l{i % 2},first text number {i},second text number {i},{i % 2}\n" for i in range(340_000))
    path.write_text("level,text_a,text_b,target\n" + rows)
    assert path.stat().st_size > 18e6
    with pytest.raises(InputError, match=r"huge\.csv: is 18 MiB; anchor ladders up to 2 MiB are accepted"
                                         r".*Fix: an anchor ladder needs a few pairs per level"):
        load_anchors(path)


def test_a_ladder_of_too_many_short_pairs_is_refused_naming_the_limit(tmp_path):
    path = tmp_path / "many.csv"
    path.write_text("level,text_a,text_b,target\n" + "".join(f"l{i % 2},a{i},b{i},{i % 2}\n" for i in range(6000)))
    with pytest.raises(InputError, match=r"many\.csv: has 6,000 anchor pairs; ladders of up to 5,000 are accepted"):
        load_anchors(path)
