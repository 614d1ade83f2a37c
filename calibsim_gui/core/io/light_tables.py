"""Small CSV/TSV pair files read and scored tables written without pandas (issue 44: importing
pandas and pyarrow is half of a 10-pair run's time).

A file is read here only when the result is provably what `inputs.load_pairs` gives: a plain
CSV/TSV of at most `LIGHT_MAX_BYTES`, written in the csv module's canonical quoting (writing
its rows back gives its text exactly), every row as long as the header, the two text columns
found without doubt, and a human-score column (named, or found by name) only when each of its
cells is empty or a plain decimal of at most 15 digits (which `float` and pandas read as the same
number). Anything else (and every error, which pandas' reading words) goes to the pandas path:
`light_pair_table` then returns None.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.csv_writer import ColumnTable
from calibsim_gui.core.io.inputs import (
    LABEL_NAMES,
    PairTable,
    check_read_budget,
    choose_pair,
    columns_by_key,
    find_column,
    finish_pair_table,
)
from calibsim_gui.core.io.tables import (
    MAX_TABLE_COLUMNS,
    TABLE_SEPARATORS,
    read_text_file,
    table_separator,
    text_file_size,
)

LIGHT_MAX_BYTES = 256 * 1024
"""Largest pairs file read without pandas (bytes): the files of a quick run."""
_NUMBER = re.compile(r"[+-]?(\d{1,15}\.?\d{0,15}|\.\d{1,15})([eE][+-]?\d{1,3})?")     # read alike by all
_ASCII_SPACE = " \t\n\r\x0b\x0c"
_SCORE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")     # with <= 15 digits: N / 10**k, N and 10**k exact


def light_pair_table(path, *, text_a=None, text_b=None, label=None, encoding=None,
                     memory_budget: int | None = None) -> PairTable | None:
    """`inputs.load_pairs`'s table of a small plain CSV/TSV `path`, read without pandas, or None
    when the file is not one whose reading is provably the same (see the module)."""
    path = Path(path)
    check_read_budget([path], memory_budget)        # load_pairs' first check, its error
    try:
        if (TABLE_SEPARATORS.get(path.suffix.lower()) is None
                or text_file_size(path) > LIGHT_MAX_BYTES):
            return None
        table = _read(path, read_text_file(path, encoding))
        if table is None:
            return None
        if text_a is not None and text_b is not None:
            a, b = find_column(table, text_a, path, "--text-a"), find_column(table, text_b, path, "--text-b")
        elif text_a is None and text_b is None:
            texts = _text_columns(table)
            found = choose_pair(columns_by_key(table), texts) if texts is not None else None
            if found is None:
                return None
            a, b = found
        else:
            return None
        if a == b:
            return None
        score = _score_column(table, label, (a, b), path)
    except (InputError, csv.Error):
        return None
    if score is False:
        return None
    first, second = table[a], table[b]
    empty = [not x.strip() or not y.strip() for x, y in zip(first, second)]
    if all(empty):
        return None
    seen: set = set()
    duplicates = 0
    for x, y, blank in zip(first, second, empty):
        if not blank:
            duplicates += (x, y) in seen
            seen.add((x, y))
    unscored = table[score].count("") if score else 0
    return finish_pair_table(table, path, [], (a, b, score), tuple(i for i, e in enumerate(empty) if e),
                             duplicates=duplicates, unscored=unscored, guessed=text_a is None)


def _score_column(table: ColumnTable, label, texts, path: Path) -> str | None | bool:
    """`inputs._label_column`'s human-score column of `table` (None: none), or False when its
    reading is not sure: a column named by --label or the first one named as human scores must
    hold plain decimals (`_SCORE`) or empty cells, at least one decimal, and no notes arise."""
    if label is not None:
        column = find_column(table, label, path, "--label")
    else:
        column = next((c for c in table.columns if c not in texts and str(c).strip().lower() in LABEL_NAMES), None)
        if column is None:
            return None
    values = table[column]
    if column in texts or not all(v == "" or _plain_score(v) for v in values) or values.count("") == len(values):
        return False
    return column


def _plain_score(cell: str) -> bool:
    return _SCORE.fullmatch(cell) is not None and sum(map(str.isdigit, cell)) <= 15


def _read(path: Path, text: str) -> ColumnTable | None:
    """The table of `text` as `tables.read_table` reads it, or None unless its reading is sure."""
    end = text.find("\n")
    sep = table_separator(path.suffix.lower(), text if end < 0 else text[:end])
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=True))
    out = io.StringIO()
    csv.writer(out, delimiter=sep, lineterminator="\n").writerows(rows)
    if out.getvalue() != text.removesuffix("\n") + "\n" or len(rows) < 2 or len(rows[0]) > MAX_TABLE_COLUMNS:
        return None             # not canonical CSV (or no data rows): pandas reads it
    width = len(rows[0])
    names = [name if name.strip() else f"column {i + 1}" for i, name in enumerate(rows[0])]
    if any(len(row) != width for row in rows) or len(set(names)) < width:
        return None
    if any(("\n" in cell and "\t" in cell) or cell.strip() != cell.strip(_ASCII_SPACE)
           for row in rows for cell in row):
        return None             # a TSV's stray quote may have swallowed lines; other spaces: pandas decides
    table = ColumnTable([(name, [row[i] for row in rows[1:]]) for i, name in enumerate(names)])
    if not any(cell.strip() for _, values in table.items for cell in values):
        return None
    return table


def _text_columns(table: ColumnTable) -> list[str] | None:
    """`inputs._text_columns` of `table`: columns with a non-empty cell that are not all numbers;
    None when a column's cells might be numbers to pandas but are not plain decimals."""
    texts = []
    for name, values in table.items:
        cells = [v.strip() for v in values if v.strip()]
        if not cells or all(_NUMBER.fullmatch(c) for c in cells):
            continue
        if not any(_not_a_number(c) for c in cells):
            return None
        texts.append(name)
    return texts


def _not_a_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return True
    return False
