from calibsim_gui.core.io.inputs import load_documents
from calibsim_gui.core.io.text_cleaning import clean_documents, clean_html, find_html_leftovers


def test_finds_each_kind_of_html_leftover_with_counts_and_examples():
    found = find_html_leftovers(["a &lt;b&gt;bold&lt;/b&gt; move", "it #39;s fine", "x <br/> y",
                                 "Tom &amp; Jerry", "He said quot;hi quot;", "no markup here"])
    assert found.n_texts == 5
    assert found.counts == {"tags": 1, "escaped tags": 1, "entities": 2, "bare entities": 2}
    assert "&lt;b&gt;" in found.examples
    assert "5 texts hold HTML leftovers" in found.describe()
    assert not find_html_leftovers(["plain", "R&D costs; Q&A"])       # not entities


def test_clean_html_decodes_entities_strips_tags_and_spaces():
    assert clean_html("Stocks &lt;b&gt;fell&lt;/b&gt;  today") == "Stocks fell today"
    assert clean_html("It#39;s quot;fine quot;") == "It#39;s \"fine \""    # glued to a word: kept
    assert clean_html("It #39;s") == "It 's"
    assert clean_html("&amp;lt;i&amp;gt;x&amp;lt;/i&amp;gt;") == "x"
    assert clean_html("a<br/>b &nbsp; c") == "a b c"
    assert clean_html("R&D costs; Q&A") == "R&D costs; Q&A"


def test_clean_documents_drops_what_became_empty_or_duplicate(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("a &lt;b&gt;cat&lt;/b&gt;\na cat\n<p></p>\nfish\n", encoding="utf-8")
    docs = load_documents(corpus)
    cleaned = clean_documents(docs)
    assert cleaned.texts == ["a cat", "fish"]
    assert cleaned.n_empty == docs.n_empty + 1 and cleaned.n_duplicates == docs.n_duplicates + 1
    assert cleaned.notes[-1] == "cleaned HTML leftovers from 2 texts, dropping 1 left empty and 1 now duplicates"


def test_load_documents_records_the_text_column_read(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("title,description,n\nA,first text,1\nB,second text,2\n", encoding="utf-8")
    docs = load_documents(table)
    assert docs.text_columns == (("t.csv", "description", ("title", "description")),)
    assert "read the text column 'description' of t.csv (other text columns: 'title')" in docs.notes
