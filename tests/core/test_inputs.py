"""Reading the files users hand us: text files, pair tables and corpora."""

from __future__ import annotations

import codecs
import json
import os
from pathlib import Path

import pytest

from calibsim_gui.core.io import inputs, tables
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.inputs import load_documents, load_pairs
from calibsim_gui.core.io.tables import read_text_file

STSB_TEST = Path("/work/shared/data/stsb/test.csv")


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    else:
        path.write_bytes(content)
    return path


# --------------------------------------------------------------------------- read_text_file

TEXT = "Café – naïve ☕\r\nsecond line\rthird\n"


@pytest.mark.parametrize(
    "raw",
    [
        TEXT.encode("utf-8"),
        codecs.BOM_UTF8 + TEXT.encode("utf-8"),
        codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"),
        codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"),
    ],
    ids=["utf-8", "utf-8-bom", "utf-16-le-bom", "utf-16-be-bom"],
)
def test_unicode_files_read_the_same_text_with_newlines_normalised(tmp_path, raw):
    path = write(tmp_path / "notes.txt", raw)
    assert read_text_file(path) == "Café – naïve ☕\nsecond line\nthird\n"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32", "cp1252"])
@pytest.mark.parametrize("piece", [1, 2, 3, 5, 7])
def test_a_file_read_a_few_bytes_at_a_time_reads_as_one_read_whole(tmp_path, monkeypatch, encoding, piece):
    """Large files are decoded a piece at a time (the window keeps answering meanwhile): a \\r\\n, a
    character or a BOM split across pieces still reads as the file does whole."""
    text = "Café\r\n\r\nnaïve\r\rend\r\n€ ☕\r" if encoding != "cp1252" else "Café\r\n\r\nnaïve\r\rend\r\n€\r"
    path = write(tmp_path / "notes.txt", text.encode(encoding))
    whole = read_text_file(path, encoding=encoding)
    monkeypatch.setattr(tables, "DECODE_PIECE", piece)
    assert read_text_file(path, encoding=encoding) == whole == "Café\n\nnaïve\n\nend\n€" + (" ☕" if encoding != "cp1252" else "") + "\n"


def test_bad_bytes_past_the_first_piece_are_named_by_their_line(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "DECODE_PIECE", 4)
    path = write(tmp_path / "long.txt", b"first line\nsecond line\nthird \xe9 line\n")
    with pytest.raises(InputError, match=r"long\.txt, line 3: is not valid UTF-8 \(byte 0xe9\)"):
        read_text_file(path)


def test_cp1252_file_is_refused_with_line_and_encoding_hint_then_reads_with_it(tmp_path):
    path = write(tmp_path / "excel export.csv", "a,b\nok,fine\nCaf\xe9,na\xefve\n".encode("cp1252"))
    with pytest.raises(InputError) as caught:
        read_text_file(path)
    message = str(caught.value)
    assert "excel export.csv" in message and "line 3" in message
    assert "--encoding cp1252" in message
    assert read_text_file(path, encoding="cp1252") == "a,b\nok,fine\nCafé,naïve\n"


def test_an_encoding_python_does_not_know_is_named_with_examples(tmp_path):
    path = write(tmp_path / "notes.txt", "plain\n")
    with pytest.raises(InputError, match=r"notes\.txt: 'klingon' is not an encoding .*Fix: use .*utf-8"):
        read_text_file(path, encoding="klingon")


def test_wrong_explicit_encoding_names_file_and_encoding(tmp_path):
    path = write(tmp_path / "bytes.txt", b"ok\n\x81\n")
    with pytest.raises(InputError, match=r"bytes\.txt, line 2: cannot be decoded as cp1252"):
        read_text_file(path, encoding="cp1252")


@pytest.mark.parametrize(
    "raw",
    [
        b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"rest",
        b"PK\x03\x04\x14\x00\x06\x00" + b"[Content_Types].xml",
        b"plain start\x00\x01\x02 then nul bytes",
    ],
    ids=["png", "zip", "nul"],
)
def test_binary_files_renamed_txt_are_refused(tmp_path, raw):
    path = write(tmp_path / "corpus.txt", raw)
    with pytest.raises(InputError, match="binary") as caught:
        read_text_file(path)
    assert "corpus.txt" in str(caught.value)


@pytest.mark.parametrize("encoding, raw", [
    (None, ("fine text\n" * 2000).encode() + b"then a NUL \x00 here\n"),         # past the first 8 KB
    ("utf-16-le", ("fine text\n" * 2000 + "then a NUL \x00 here\n").encode("utf-16-le")),
])
def test_a_nul_anywhere_in_a_text_file_is_refused_with_its_line(tmp_path, encoding, raw):
    path = write(tmp_path / "late.txt", raw)
    with pytest.raises(InputError, match=r"late.txt, line 2001: holds a NUL character"):
        read_text_file(path, encoding=encoding)


def test_oversized_file_is_refused_before_reading(tmp_path, monkeypatch):
    path = write(tmp_path / "huge.txt", "x" * 2048)
    monkeypatch.setattr(tables, "MAX_TEXT_BYTES", 1024)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("file was read"))
    with pytest.raises(InputError, match="huge.txt.*MiB"):
        read_text_file(path)


def test_a_2_gib_file_is_refused_with_its_size(tmp_path):
    path = tmp_path / "huge.txt"
    with open(path, "wb") as f:
        f.truncate(2 * 1024**3)                  # sparse: no disk used
    with pytest.raises(InputError, match=r"huge\.txt: is 2,048 MiB; text files up to 512 MiB .*Fix: split"):
        load_documents(path)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="nope.txt: no such file"):
        read_text_file(tmp_path / "nope.txt")


# --------------------------------------------------------------------------- pair tables


def test_quoted_csv_fields_with_newlines_and_doubled_quotes_round_trip(tmp_path):
    path = write(
        tmp_path / "pairs.csv",
        'sentence1,sentence2,score\r\n'
        '"He said ""hi"",\r\nthen left.","A, b",4.5\r\n'
        'plain,"x ""quoted""",1\r\n',
    )
    table = load_pairs(path)
    assert table.frame[table.text_a].tolist() == ['He said "hi",\nthen left.', "plain"]
    assert table.frame[table.text_b].tolist() == ["A, b", 'x "quoted"']
    assert table.frame["score"].tolist() == ["4.5", "1"]
    assert list(table.frame.index) == [0, 1]


def test_tsv_and_tab_separated_csv(tmp_path):
    content = "text1\ttext2\tlabel\nA cat, sat.\tA dog\t0.5\nx\ty\t1\n"
    for name in ("pairs.tsv", "pairs.tab", "mislabelled.csv"):
        table = load_pairs(write(tmp_path / name, content))
        assert (table.text_a, table.text_b, table.label) == ("text1", "text2", "label")
        assert table.frame["text1"].tolist() == ["A cat, sat.", "x"]


def test_tsv_with_stray_quotes_keeps_them_as_text(tmp_path):
    path = write(
        tmp_path / "sts.tsv",
        'sentence1\tsentence2\tscore\n"Stop it\tGo on\t1\nShe said "no" twice.\tNo.\t2\n',
    )
    table = load_pairs(path)
    assert table.frame["sentence1"].tolist() == ['"Stop it', 'She said "no" twice.']
    assert any("plain text" in note for note in table.notes)


def test_jsonl_reads_objects_and_skips_blank_lines(tmp_path):
    lines = [
        json.dumps({"query": "how tall", "document": "very tall", "score": 3}),
        "",
        json.dumps({"query": "ünï", "document": "code", "score": None, "extra": [1]}),
    ]
    table = load_pairs(write(tmp_path / "pairs.jsonl", "\n".join(lines) + "\n"))
    assert (table.text_a, table.text_b, table.label) == ("query", "document", "score")
    assert table.frame.to_dict("list") == {
        "query": ["how tall", "ünï"],
        "document": ["very tall", "code"],
        "score": ["3", ""],
        "extra": ["", "[1]"],
    }


@pytest.mark.parametrize("bad, message", [
    ('{"a": "x", "b": ' + "[" * 100_000 + "]" * 100_000 + "}", "maximum recursion depth"),
    ('{"a": "x", "b": ' + "9" * 5000 + "}", "4300 digits"),
    ('{"a": "x", "b": "cut emoji \\ud83d"}', "half of a character"),
    ('{"a": "x", "\\udc00b": "y"}', "half of a character"),
], ids=["deeply-nested", "huge-number", "lone-surrogate", "lone-surrogate-in-a-key"])
def test_jsonl_that_python_cannot_use_names_its_line(tmp_path, bad, message):
    path = write(tmp_path / "p.jsonl", '{"a": "ok", "b": "fine \\ud83d\\ude00"}\n' + bad + "\n")
    with pytest.raises(InputError, match=rf"p\.jsonl, line 2: .*{message}.*Fix: "):
        load_pairs(path)
    whole = load_pairs(write(tmp_path / "ok.jsonl", '{"a": "x", "b": "fine \\ud83d\\ude00"}\n'))
    assert whole.frame["b"][0] == "fine \N{GRINNING FACE}"          # both halves: one character


@pytest.mark.parametrize("bad", ['{"a": "x", "b": }', '["a", "b"]'])
def test_jsonl_bad_line_is_named(tmp_path, bad):
    content = '{"a": "x", "b": "y"}\n\n{"a": "p", "b": "q"}\n' + bad + "\n"
    with pytest.raises(InputError, match=r"pairs\.ndjson, line 4: .*JSON"):
        load_pairs(write(tmp_path / "pairs.ndjson", content))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Notes,Sentence1,SENTENCE2\nfine,a cat,a dog\n", ("Sentence1", "SENTENCE2")),
        ("id,question1,question2,is_duplicate\n7,How?,Why?,0\n", ("question1", "question2")),
        ("label,hypothesis,premise\nneutral,a,b\n", ("premise", "hypothesis")),
    ],
)
def test_text_columns_are_found_by_common_names(tmp_path, content, expected):
    table = load_pairs(write(tmp_path / "p.csv", content))
    assert (table.text_a, table.text_b) == expected


def test_two_text_columns_with_other_names_are_used(tmp_path):
    path = write(tmp_path / "p.csv", "pair_id,first,second,rating\n1,a cat,a dog,3\n2,x,y,4\n")
    table = load_pairs(path)
    assert (table.text_a, table.text_b) == ("first", "second")


def test_explicit_columns_override_detection(tmp_path):
    path = write(tmp_path / "p.csv", "sentence1,sentence2,alt\na,b,c\n")
    table = load_pairs(path, text_a="ALT", text_b="sentence1")
    assert (table.text_a, table.text_b) == ("alt", "sentence1")


def test_missing_explicit_column_lists_the_columns(tmp_path):
    path = write(tmp_path / "p.csv", "sentence1,sentence2,score\na,b,1\n")
    with pytest.raises(InputError) as caught:
        load_pairs(path, text_a="question", text_b="sentence2")
    message = str(caught.value)
    assert "'question'" in message and "'sentence1', 'sentence2', 'score'" in message
    assert "--text-a" in message


def test_undetectable_columns_ask_for_text_a_and_text_b(tmp_path):
    path = write(tmp_path / "p.csv", "x,y,z\na,b,c\n")
    with pytest.raises(InputError, match=r"'x', 'y', 'z'.*--text-a COL --text-b COL"):
        load_pairs(path)


def test_numeric_score_is_the_label_but_a_text_label_column_is_not(tmp_path):
    scored = load_pairs(write(tmp_path / "sts.csv", "sentence1,sentence2,score\na,b,4.2\nc,d,\n"))
    assert scored.label == "score"
    assert any("1 pair without a human score" in note for note in scored.notes)

    nli = load_pairs(write(tmp_path / "nli.csv", "premise,hypothesis,label\na,b,entailment\n"))
    assert nli.label is None
    assert any("'label' is not numeric" in note for note in nli.notes)


def test_a_chosen_text_column_is_never_the_label(tmp_path):
    path = write(tmp_path / "p.csv", "label,sentence,score\n1001,a cat,3\n1002,a dog,4\n")
    table = load_pairs(path, text_a="label", text_b="sentence")
    assert table.label == "score"


def test_explicit_label_must_be_numeric(tmp_path):
    path = write(tmp_path / "nli.csv", "premise,hypothesis,label\na,b,0\nc,d,neutral\n")
    with pytest.raises(InputError, match=r"'neutral' in pair 2.*--label"):
        load_pairs(path, label="label")


def test_rows_with_an_empty_text_are_kept_and_reported(tmp_path):
    path = write(
        tmp_path / "p.csv",
        "sentence1,sentence2\na,b\n,b\na,b\nc,   \nd,e\n",
    )
    table = load_pairs(path)
    assert len(table.frame) == 5
    assert table.empty_rows == (1, 3)
    assert "2 pairs have an empty text (pairs 2, 4) and are left unscored" in table.notes
    assert "1 duplicate pair (same texts as an earlier pair)" in table.notes


def test_ragged_row_names_its_physical_line(tmp_path):
    path = write(
        tmp_path / "p.csv",
        'sentence1,sentence2\n"two\nlines",b\n\nc,d,extra\n',
    )
    with pytest.raises(InputError, match=r"p\.csv, line 5: has 3 fields"):
        load_pairs(path)


def test_unclosed_quote_names_its_line(tmp_path):
    path = write(tmp_path / "p.csv", 'sentence1,sentence2\na,b\n"c,d\ne,f\n')
    with pytest.raises(InputError, match=r"p\.csv, line 3: .*never closed"):
        load_pairs(path)


@pytest.mark.parametrize("content, line", [('"sentence1,sentence2\na,b\n', 1), ('\r"a,b\n', None)],
                         ids=["in-the-header", "after-a-blank-line"])
def test_an_unclosed_quote_anywhere_is_an_input_error(tmp_path, content, line):
    path = write(tmp_path / "p.csv", content)
    with pytest.raises(InputError, match="never closed") as caught:
        load_pairs(path)
    assert caught.value.line == line


def test_duplicate_column_names_are_refused(tmp_path):
    path = write(tmp_path / "p.csv", "text,text,score\na,b,1\n")
    with pytest.raises(InputError, match=r"line 1: .*more than one column named 'text'"):
        load_pairs(path)


@pytest.mark.parametrize("content", ["", "sentence1,sentence2\n", "\n\n"])
def test_file_without_rows_has_no_pairs(tmp_path, content):
    with pytest.raises(InputError, match="no pairs"):
        load_pairs(write(tmp_path / "p.csv", content))


def test_unsupported_extension_lists_supported_ones(tmp_path):
    with pytest.raises(InputError, match=r"\.xlsx.*\.csv, \.tsv.*\.jsonl"):
        load_pairs(write(tmp_path / "p.xlsx", "sentence1,sentence2\na,b\n"))


def test_stsb_test_split():
    table = load_pairs(STSB_TEST)
    assert len(table.frame) == 1379
    assert (table.text_a, table.text_b, table.label) == ("sentence1", "sentence2", "score")
    assert table.empty_rows == ()


# --------------------------------------------------------------------------- documents


def test_documents_per_line_drop_empty_lines_and_duplicates(tmp_path):
    path = write(tmp_path / "corpus.txt", "  first  \n\nsecond\n   \nfirst\nthird\n")
    docs = load_documents(path)
    assert docs.texts == ["first", "second", "third"]
    assert docs.ids == ["corpus.txt:1", "corpus.txt:3", "corpus.txt:6"]
    assert (docs.n_empty, docs.n_duplicates) == (2, 1)
    assert "dropped 2 empty lines" in docs.notes and "dropped 1 exact duplicate" in docs.notes


def test_documents_per_file(tmp_path):
    a = write(tmp_path / "a.md", "# Title\n\nBody text.\n")
    b = write(tmp_path / "b.txt", " \n")
    docs = load_documents([a, str(b)], per_file=True)
    assert docs.texts == ["# Title\n\nBody text."]
    assert docs.ids == ["a.md"]
    assert docs.n_empty == 1 and docs.files == (a, b)


def test_folder_is_searched_recursively_in_sorted_order_skipping_hidden(tmp_path):
    root = tmp_path / "corpus"
    for name in ("c.txt", "b.txt", "a.txt", "a/z.md", "a/b/y.txt", "d/x.TXT"):
        write(root / name, f"from {name}\n")
    write(root / ".hidden.txt", "hidden\n")
    write(root / ".git" / "notes.txt", "hidden too\n")
    write(root / "data.csv", "text\nnot taken from folders\n")
    docs = load_documents(root)
    expected = ["a/b/y.txt", "a/z.md", "a.txt", "b.txt", "c.txt", "d/x.TXT"]
    assert docs.ids == [f"{name}:1" for name in expected]
    assert docs.texts == [f"from {name}" for name in expected]
    assert docs.files[0] == root / "a" / "b" / "y.txt"


def test_documents_from_table_columns(tmp_path):
    path = write(tmp_path / "reviews.csv", "id,Title,Text\n1,A,good\n2,B,\n3,C,bad\n")
    docs = load_documents(path)
    assert docs.texts == ["good", "bad"]
    assert docs.ids == ["reviews.csv:row 1", "reviews.csv:row 3"]
    assert docs.n_empty == 1

    jsonl = write(tmp_path / "items.jsonl", '{"title": "A", "summary": "a thing"}\n')
    assert load_documents(jsonl, column="summary").texts == ["a thing"]
    with pytest.raises(InputError, match=r"'title', 'summary'.*--column COL"):
        load_documents(jsonl)


def test_inputs_without_text_are_an_error(tmp_path):
    empty = write(tmp_path / "empty.txt", "\n  \n")
    with pytest.raises(InputError, match="empty.txt.*no non-empty text"):
        load_documents(empty)


def test_missing_document_path_is_an_error(tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        load_documents([tmp_path / "missing"])


# --------------------------------------------------------------------------- hostile inputs


def test_columns_of_numbers_only_are_not_texts(tmp_path):
    """`a,b,c / 1,2,3`: 'a' and 'b' are pair names, but numbers only are not texts to compare."""
    numbers = write(tmp_path / "numbers.csv", "a,b,c\n1,2,3\n4,5,6\n")
    with pytest.raises(inputs.ColumnsNotFound) as err:
        load_pairs(numbers)
    message = str(err.value)
    assert "numbers.csv: has no two text columns" in message
    assert "columns 'a', 'b', 'c' hold only numbers" in message and "--text-a COL --text-b COL" in message
    assert err.value.columns == ["a", "b", "c"] and len(err.value.preview) == 2   # the app can ask
    named = load_pairs(numbers, text_a="a", text_b="b")                           # named: texts
    assert (named.text_a, named.text_b) == ("a", "b")


def test_numeric_columns_with_pair_names_give_way_to_text_columns(tmp_path):
    table = write(tmp_path / "ids.csv", "a,b,question1,question2\n1,2,Is it?,Is it so?\n")
    found = load_pairs(table)
    assert (found.text_a, found.text_b) == ("question1", "question2")


def test_a_file_over_the_memory_budget_is_refused_from_its_size_before_reading(tmp_path):
    """The file is all NUL bytes: had it been read, it would be refused as binary instead."""
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:
        f.truncate(50_000_000)                          # sparse: no disk used
    with pytest.raises(InputError, match=r"big\.csv: reading 1 file of 50\.0 MB needs about 1\.0 GB"
                                         r".*budget of 500\.0 MB. Fix: split the input"):
        load_pairs(big, memory_budget=500_000_000)
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):            # each alone fits, together they do not
        with open(folder / name, "wb") as f:
            f.truncate(10_000_000)
    with pytest.raises(InputError, match=r"reading 3 files of 30\.0 MB needs about 680\.0 MB"):
        load_documents([folder], memory_budget=500_000_000)


def test_a_fifo_is_refused_unopened_as_a_pairs_file_or_a_corpus(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    for read in (load_pairs, load_documents):
        with pytest.raises(InputError, match=r"pipe\.csv: is a named pipe \(FIFO\).*Fix: save the data"):
            read(fifo)


def test_every_entry_of_a_folder_that_cannot_be_read_is_named_and_none_is_opened(tmp_path):
    folder = tmp_path / "corpus"
    write(folder / "good.txt", "a text\n")
    write(folder / "notes" / "more.md", "another text\n")
    os.mkfifo(folder / "pipe.txt")                                    # opening it would block
    (folder / "gone.txt").symlink_to(tmp_path / "deleted.txt")
    os.mkfifo(folder / "pipe.bin")                                    # not a text file: ignored
    with pytest.raises(InputError) as err:
        load_documents([folder])
    message = str(err.value)
    assert message.startswith(f"{folder}: holds 2 entries that cannot be read")
    assert "gone.txt (a link to something missing)" in message
    assert "pipe.txt (not a regular file but a pipe, socket or device)" in message
    assert "Fix: make them readable" in message


def test_a_subfolder_that_cannot_be_listed_is_named(tmp_path, monkeypatch):
    """chmod 000 does not stop root, so the listing itself is made to fail."""
    folder = tmp_path / "corpus"
    write(folder / "good.txt", "a text\n")
    write(folder / "locked" / "secret.txt", "a secret\n")
    scandir = os.scandir

    def refuse_locked(path):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refuse_locked)
    with pytest.raises(InputError, match=r"corpus: holds 1 entry that cannot be read: "
                                         r"locked/ \(Permission denied\)"):
        load_documents([folder])


def test_linked_subfolders_are_read_once_and_a_link_loop_ends(tmp_path):
    shared = write(tmp_path / "shared" / "s.txt", "shared text\n").parent
    folder = tmp_path / "corpus"
    write(folder / "own.txt", "own text\n")
    (folder / "linked").symlink_to(shared, target_is_directory=True)
    (folder / "loop").symlink_to(folder, target_is_directory=True)
    docs = load_documents([folder])
    assert sorted(docs.texts) == ["own text", "shared text"]
    assert [p.relative_to(folder).as_posix() for p in docs.files] == ["linked/s.txt", "own.txt"]


@pytest.mark.parametrize("suffix, content", [
    (".csv", ",".join(f"c{i}" for i in range(100_000)) + "\n" + "a," * 99_999 + "a\n"),
    (".jsonl", json.dumps({f"c{i}": "a" for i in range(100_000)}) + "\n"),
])
def test_a_table_of_100000_columns_is_refused_from_its_header_at_once(tmp_path, suffix, content):
    """Issue 30: a 0.9 MB CSV of 100,000 columns ran past 600 s in the parser."""
    path = tmp_path / f"wide{suffix}"
    path.write_text(content)
    with pytest.raises(InputError, match=rf"wide\{suffix}.*has 100,000 columns, more than the 1,000 calibsim "
                                         "reads from a table.*Fix: save only the text columns"):
        load_pairs(path)


def test_a_table_whose_text_columns_were_guessed_and_one_names_documents_says_so(tmp_path):
    path = tmp_path / "news.csv"
    path.write_text("label,title,description\n3,Wall St up,Stocks rose on Monday\n4,New phone,A phone was shown\n")
    assert load_pairs(path).document_column == "description"             # pairs, or a document set?
    assert load_pairs(path, text_a="title", text_b="description").document_column is None
    path.write_text("sentence1,sentence2\na cat,a dog\n")
    assert load_pairs(path).document_column is None                     # named as pairs


def test_non_blank_lines_are_counted_the_same_a_piece_at_a_time():
    from calibsim_gui.core.io.inputs import non_blank_lines

    text = "first line\n\n   \nsecond line\r\n\t\nthird\nlast without newline"
    whole = sum(1 for line in text.split("\n") if line.strip())
    assert whole == 4
    assert all(non_blank_lines(text, piece) == whole for piece in (1, 3, 7, 20, 1 << 20))
