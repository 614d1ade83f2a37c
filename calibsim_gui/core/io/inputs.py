"""Read the files users hand us as inputs: text pairs (CSV, TSV, JSON Lines) and document corpora.

Everything is parsed once, here, into frozen dataclasses; every problem becomes an
`InputError` that names the file, the line when known, and the fix. Reading the bytes of text
files and tables is `calibsim_gui.core.io.tables`.
"""

from __future__ import annotations

import os
import stat
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.files import check_regular_file
from calibsim_gui.core.io.memory import (
    background_pairs_bytes,
    check_budget,
    file_read_bytes,
    format_size,
    release_unused_arrow_memory,
)
from calibsim_gui.core.io.tables import (
    TABLE_SEPARATORS,
    TEXT_SUFFIXES,
    read_table,
    read_text_file,
    text_file_size,
)

if TYPE_CHECKING:
    import pandas as pd

_PAIR_NAMES = (
    ("sentence1", "sentence2"), ("text1", "text2"), ("text_a", "text_b"), ("texta", "textb"),
    ("a", "b"), ("s1", "s2"), ("sent1", "sent2"), ("sentence_a", "sentence_b"),
    ("left", "right"), ("query", "document"), ("query", "passage"), ("premise", "hypothesis"),
    ("source", "target"), ("anchor", "positive"), ("question1", "question2"),
)
LABEL_NAMES = (
    "score", "label", "similarity", "similarity_score", "gold", "gold_score", "human_score",
    "relatedness_score",
)
_DOCUMENT_NAMES = ("text", "sentence", "document", "content", "body", "description")



def _non_empty(column: pd.Series) -> pd.Series:
    values = column.str.strip()
    return values[values != ""]


def _is_numeric(column: pd.Series) -> bool:
    import pandas as pd  # heavy: imported once a table is read, not with the window

    values = _non_empty(column)
    return len(values) > 0 and bool(pd.to_numeric(values, errors="coerce").notna().all())


def _text_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if len(_non_empty(frame[c])) and not _is_numeric(frame[c])]


def columns_by_key(frame: pd.DataFrame) -> dict[str, str]:
    """Column names keyed case- and space-insensitively (first occurrence wins)."""
    return {str(c).strip().lower(): c for c in reversed(frame.columns)}


def find_column(frame: pd.DataFrame, name: str, path: Path, option: str) -> str:
    if name in frame.columns:
        return name
    found = columns_by_key(frame).get(name.strip().lower())
    if found is None:
        raise InputError(
            f"has no column {name!r}; its columns are {_names(frame.columns)}.",
            path=path, fix=f"pass one of these names to {option}.",
        )
    return found


def _names(columns) -> str:
    return ", ".join(repr(str(c)) for c in columns) or "(none)"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _pair_numbers(rows) -> str:
    """1-based pair numbers for people to read, at most ten."""
    shown = ", ".join(str(r + 1) for r in rows[:10])
    return f"{'pair' if len(rows) == 1 else 'pairs'} {shown}{', ...' if len(rows) > 10 else ''}"


# --------------------------------------------------------------------------- pairs


class ColumnsNotFound(InputError):
    """The two text columns of a pairs file could not be recognised.

    ``columns`` lists the file's columns and ``preview`` holds its first rows, so an interface
    can ask the user which columns to use.
    """

    def __init__(self, message, *, columns, preview, **where):
        super().__init__(message, **where)
        self.columns, self.preview = columns, preview


@dataclass(frozen=True)
class PairTable:
    """Text pairs read from one file; `frame` keeps every input column as strings."""

    path: Path
    frame: pd.DataFrame
    text_a: str
    text_b: str
    label: str | None
    empty_rows: tuple[int, ...]
    notes: tuple[str, ...]
    document_column: str | None = None   # the text columns were guessed, and the file reads as well
    #                                      as a document set from this column: ask which it is


def load_pairs(
    path,
    *,
    text_a: str | None = None,
    text_b: str | None = None,
    label: str | None = None,
    encoding: str | None = None,
    memory_budget: int | None = None,
) -> PairTable:
    """Read text pairs from a .csv, .tsv/.tab or .jsonl/.ndjson file.

    The two text columns and a numeric human-score column are found by common names
    unless given; columns of numbers only are not taken for texts unless named. Rows with an
    empty text are kept and listed in `empty_rows` (0-based); notes count pairs 1-based, in
    file order. A file whose reading would exceed `memory_budget` (bytes; None: the default
    budget) is refused from its size, before it is read.
    """
    path = Path(path)
    check_read_budget([path], memory_budget)
    frame, notes = read_table(path, encoding)
    table = pair_table(frame, path, notes, text_a=text_a, text_b=text_b, label=label)
    release_unused_arrow_memory()       # the reading's temporaries
    return table


def pair_table(frame: pd.DataFrame, path, notes=(), *, text_a: str | None = None, text_b: str | None = None,
               label: str | None = None) -> PairTable:
    """The pairs of an all-string `frame` read from `path` (a file, or a name such as ``<DataFrame>``
    for errors and provenance), its columns found as `load_pairs` finds them; `notes` come first."""
    path, notes = Path(path), list(notes)
    if frame.empty:
        raise InputError(
            "holds no pairs (no data rows).", path=path,
            fix="add one pair per row under a header line such as sentence1,sentence2.",
        )
    if not frame.apply(lambda c: c.str.strip().ne("").any()).any():     # before columns are guessed (#43)
        raise InputError(
            f"holds no text: every cell of its {_plural(len(frame), 'row')} is empty.", path=path,
            fix="check that the file was saved with its texts (one pair per row under a header line such as "
                "sentence1,sentence2).",
        )
    a, b = _pair_columns(frame, path, text_a, text_b)
    texts = frame[[a, b]].apply(lambda c: c.str.strip())
    empty = (texts == "").any(axis=1).to_numpy()
    if empty.all():
        raise InputError(
            f"has no pair with two non-empty texts in columns {a!r} and {b!r}.", path=path,
            fix="pick the text columns with --text-a COL --text-b COL.",
        )
    label, label_notes = _label_column(frame, path, label, exclude=(a, b))
    duplicates = int(frame[[a, b]][~empty].duplicated().sum())
    unscored = int((frame[label].str.strip() == "").sum()) if label else 0
    return finish_pair_table(frame, path, notes, (a, b, label), tuple(int(i) for i in empty.nonzero()[0]),
                             label_notes=label_notes, duplicates=duplicates, unscored=unscored,
                             guessed=text_a is None and text_b is None)


def finish_pair_table(frame, path, notes: list, columns: tuple, empty_rows: tuple[int, ...], *,
                      label_notes=(), duplicates: int = 0, unscored: int = 0, guessed: bool = False) -> PairTable:
    """The `PairTable` of `frame` (a DataFrame or a `ColumnTable`) with text columns and label
    `columns` found, its empty rows, duplicate pairs and unscored labels counted: the notes."""
    a, b, label = columns
    documents = (next((c for c in (a, b) if str(c).strip().lower() in _DOCUMENT_NAMES), None)
                 if guessed and not any(columns_by_key(frame).get(x) == a and columns_by_key(frame).get(y) == b
                                        for x, y in _PAIR_NAMES) else None)
    notes.append(
        f"{_plural(len(frame), 'pair')} from columns {a!r} and {b!r}; "
        + (f"human scores from {label!r}" if label else "no human scores column")
    )
    notes += label_notes
    if empty_rows:
        notes.append(
            f"{_plural(len(empty_rows), 'pair')} {'has' if len(empty_rows) == 1 else 'have'} "
            f"an empty text ({_pair_numbers(empty_rows)}) and "
            f"{'is' if len(empty_rows) == 1 else 'are'} left unscored"
        )
    if duplicates:
        notes.append(f"{_plural(duplicates, 'duplicate pair')} (same texts as an earlier pair)")
    if unscored:
        notes.append(f"{_plural(unscored, 'pair')} without a human score")
    return PairTable(path, frame, a, b, label, empty_rows, tuple(notes), documents)


def _pair_columns(frame, path, text_a, text_b) -> tuple[str, str]:
    """The two text columns: as given, else by name, else the only two text columns.

    Columns holding only numbers are never taken as texts unless named explicitly.
    """
    a = find_column(frame, text_a, path, "--text-a") if text_a is not None else None
    b = find_column(frame, text_b, path, "--text-b") if text_b is not None else None
    if a is None or b is None:
        found = choose_pair(columns_by_key(frame), _text_columns(frame))
        if found is None:
            numeric = [c for c in frame.columns if _is_numeric(frame[c])]
            what = ("has no two text columns to compare: "
                    + (f"column {_names(numeric)} holds" if len(numeric) == 1 else
                       f"columns {_names(numeric)} hold") + " only numbers"
                    if numeric else "has no recognised pair of text columns")
            raise ColumnsNotFound(
                f"{what}; its columns are {_names(frame.columns)}.", path=path,
                fix="name the two text columns with --text-a COL --text-b COL (also when texts "
                "really are numbers).",
                columns=[str(c) for c in frame.columns], preview=frame.head(5),
            )
        a, b = a or found[0], b or found[1]
    if a == b:
        raise InputError(
            f"would compare column {a!r} with itself.", path=path,
            fix="name two different columns with --text-a COL --text-b COL.",
        )
    return a, b


def choose_pair(keys: dict[str, str], texts: list[str]) -> tuple[str, str] | None:
    """The text columns by name (`keys`: `columns_by_key`) among the columns holding `texts`, else the
    only two such columns; None when neither."""
    found = next(((keys[x], keys[y]) for x, y in _PAIR_NAMES
                  if x in keys and y in keys and {keys[x], keys[y]} <= set(texts)), None)
    return found if found is not None or len(texts) != 2 else tuple(texts)


def _label_column(frame, path, label, exclude) -> tuple[str | None, list[str]]:
    """The human-score column (explicit or by name) and notes about columns passed over."""
    import pandas as pd

    if label is not None:
        label = find_column(frame, label, path, "--label")
        values = _non_empty(frame[label])
        bad = values[pd.to_numeric(values, errors="coerce").isna()]
        if label in exclude or values.empty or len(bad):
            where = f" ({bad.iloc[0]!r} in pair {bad.index[0] + 1})" if len(bad) else ""
            raise InputError(
                f"column {label!r} does not hold numeric human scores{where}.", path=path,
                fix="pass a column of numbers to --label, or leave --label out.",
            )
        return label, []
    notes = []
    for column in frame.columns:
        if column in exclude or str(column).strip().lower() not in LABEL_NAMES:
            continue
        if _is_numeric(frame[column]):
            return column, notes
        notes.append(f"column {column!r} is not numeric, so it is not used as human scores")
    return None, notes


# --------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Document:
    """One text of a corpus; `id` says where it came from ("notes.txt:12")."""

    id: str
    text: str
    source: Path


@dataclass(frozen=True)
class DocumentSet:
    """Non-empty, de-duplicated texts read from files and folders."""

    documents: tuple[Document, ...]
    files: tuple[Path, ...]
    n_empty: int
    n_duplicates: int
    notes: tuple[str, ...]
    # (file name, column read, every text column) of each table file: the column is visible
    text_columns: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    @property
    def texts(self) -> list[str]:
        return [d.text for d in self.documents]

    @property
    def ids(self) -> list[str]:
        return [d.id for d in self.documents]


def load_documents(
    paths, *, per_file: bool = False, column: str | None = None, encoding: str | None = None,
    memory_budget: int | None = None,
) -> DocumentSet:
    """Read a corpus from files and folders.

    .txt/.md give one document per non-empty line (or one per file with `per_file`);
    folders are searched recursively for .txt/.md (see `folder_files`);
    .csv/.tsv/.jsonl give one document per row of `column` (found by name if not given).
    Empty texts and exact duplicates (first kept) are dropped and counted. Files whose reading
    would exceed `memory_budget` (bytes; None: the default budget) are refused from their
    sizes, before any is read.
    """
    inputs = _as_paths(paths)
    files = input_files(inputs)
    check_read_budget(files, memory_budget)
    notes = [f"{given} holds no .txt or .md files" for given in inputs
             if given.is_dir() and not any(given in f.parents for f in files)]

    columns: list = []
    entries = ((file, doc_id, text, unit) for file, name in files.items()
               for doc_id, text, unit in _file_texts(file, name, per_file, column, encoding, columns))
    return _document_set(entries, tuple(files), notes, columns, where=", ".join(str(p) for p in inputs),
                         holds="holds" if len(inputs) == 1 else "hold", read_from=_plural(len(files), "file"),
                         fix="point at .txt/.md files with one text per line, a folder of them, "
                             "or a .csv/.jsonl file with a text column.")


def document_set(texts, ids=None, *, name: str = "<texts>") -> DocumentSet:
    """The documents of `texts` held in memory (a list, a pandas Series), as `load_documents` makes
    them from files: stripped, empty ones and exact duplicates dropped and counted; `ids` default
    to ``<name>:<position from 1>``."""
    ids = [f"{name}:{n}" for n in range(1, len(texts) + 1)] if ids is None else [str(i) for i in ids]
    entries = ((Path(name), doc_id, str(text).strip(), "text") for doc_id, text in zip(ids, texts))
    return _document_set(entries, (), [], [], where=name, holds="holds", read_from=name,
                         fix="give at least one non-empty text.")


def _document_set(entries, files: tuple, notes: list, columns: list, *, where: str, holds: str,
                  read_from: str, fix: str) -> DocumentSet:
    """A `DocumentSet` of (source, id, stripped text, unit) `entries`: empty texts and exact
    duplicates (first kept) dropped and counted in the notes."""
    documents, seen, empty, n_duplicates = [], set(), Counter(), 0
    for source, doc_id, text, unit in entries:
        if not text:
            empty[unit] += 1
        elif text in seen:
            n_duplicates += 1
        else:
            seen.add(text)
            documents.append(Document(doc_id, text, source))
    if not documents:
        raise InputError(
            f"{holds} no non-empty text"
            + (f" ({'; '.join(notes)})." if notes else "."), path=where, fix=fix)
    notes.insert(0, f"read {_plural(len(documents), 'text')} from {read_from}")
    notes += [f"dropped {_plural(n, f'empty {unit}')}" for unit, n in empty.items()]
    if n_duplicates:
        notes.append(f"dropped {_plural(n_duplicates, 'exact duplicate')}")
    notes += [f"read the text column {used!r} of {name}"
              + (f" (other text columns: {', '.join(map(repr, others))})" if others else "")
              for name, used, candidates in columns
              for others in [[c for c in candidates if c != used]]]
    return DocumentSet(tuple(documents), files, sum(empty.values()), n_duplicates, tuple(notes), tuple(columns))


MANY_LINES = 3          # text files "hold many lines" when their median non-blank line count is above this
COUNTED_FILES = 300     # text files read to count lines (evenly spread over a larger folder)


@dataclass(frozen=True)
class TextLayout:
    """How dropped plain-text files are laid out: `files` .txt/.md files holding about `lines`
    non-blank lines in all, `median_lines` per file (estimated from `counted` of them)."""

    files: int
    lines: int
    median_lines: float
    counted: int

    @property
    def per_file(self) -> bool:
        """The default reading: one document per file unless there is one file, or the files
        hold many lines (median above `MANY_LINES`), which reads as one document per line."""
        return self.files > 1 and self.median_lines <= MANY_LINES


def non_blank_lines(text: str, piece: int = 1 << 20) -> int:
    """The non-blank lines of `text`, split a piece (~1 MB) at a time: one split of a 66 MB text
    holds the GIL for ~0.4 s, which a reading worker would take from the GUI thread."""
    count, start = 0, 0
    while start < len(text):
        end = text.find("\n", start + piece)
        end = len(text) if end < 0 else end + 1
        count += sum(1 for line in text[start:end].split("\n") if line.strip())
        start = end
    return count


def text_layout(paths) -> TextLayout:
    """Count the non-blank lines of the .txt/.md files under `paths` (tables are left out), reading
    at most `COUNTED_FILES` of them; unreadable files are skipped (reading them reports why).

    Raises
    ------
    InputError
        When a path does not exist or is not a regular file or folder.
    """
    texts = [f for f in input_files(paths) if f.suffix.lower() in TEXT_SUFFIXES]
    step = max(1, -(-len(texts) // COUNTED_FILES))
    counts = []
    for file in texts[::step]:
        try:
            counts.append(non_blank_lines(read_text_file(file, None)))
        except (InputError, OSError):
            continue
    median = float(statistics.median(counts)) if counts else 0.0
    total = round(sum(counts) * len(texts) / len(counts)) if counts else 0
    return TextLayout(len(texts), total, median, len(counts))


def _as_paths(paths) -> list[Path]:
    return [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]


def input_files(paths) -> dict[Path, str]:
    """The files `paths` (files and folders) name, each with the id prefix of its documents.

    Nothing is opened: given files must be regular files (a FIFO or device is refused), and
    folders are listed by `folder_files`.
    """
    files: dict[Path, str] = {}
    for given in _as_paths(paths):
        if given.is_dir():
            for file in folder_files(given):
                files.setdefault(file, file.relative_to(given).as_posix())
        elif given.exists() or given.is_symlink():
            check_regular_file(given)
            files.setdefault(given, given.name)
        else:
            raise InputError("no such file or folder.", path=given, fix="check the path.")
    return files


def check_read_budget(files, memory_budget: int | None, *, pairs: int = 0, dim: int = 0) -> None:
    """Refuse `files` whose reading (and then drawing `pairs` background pairs of `dim`-long
    embeddings) would exceed `memory_budget` (None: the default budget), from the files' sizes
    (`calibsim_gui.core.io.memory.file_read_bytes`), before any is read."""
    files = list(files)
    size = sum(map(text_file_size, files))
    what = f"reading {_plural(len(files), 'file')} of {format_size(size)}"
    check_budget(file_read_bytes(size) + background_pairs_bytes(pairs, dim), memory_budget,
                 path=_first(files, ", ") or None,
                 what=what + (f" and drawing {pairs:,} background pairs" if pairs else ""),
                 fix="split the input into smaller files or use a sample of it"
                     + (", ask for fewer --pairs" if pairs else ""))


def folder_files(folder: Path) -> list[Path]:
    """Regular .txt/.md files under `folder` in sorted order; hidden files and folders are
    skipped, links to folders followed (each folder listed once).

    Raises
    ------
    InputError
        Naming every subfolder that cannot be listed and every .txt/.md entry that is not a
        readable regular file (a FIFO or device is never opened). An error, not a note: a
        corpus silently missing part of a folder gives numbers that look complete, and a note
        is easily missed (``--quiet`` hides it).
    """
    found, problems, listed = [], [], set()

    def unlisted(error: OSError) -> None:
        problems.append(f"{_inside(folder, error.filename)}/ ({error.strerror or error})")

    for root, dirs, names in os.walk(folder, onerror=unlisted, followlinks=True):
        real = os.path.realpath(root)
        if real in listed:                              # reached again through a link
            dirs[:] = []
            continue
        listed.add(real)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if name.startswith(".") or Path(name).suffix.lower() not in TEXT_SUFFIXES:
                continue
            problem = _unreadable(Path(root, name))
            if problem:
                problems.append(f"{_inside(folder, Path(root, name))} ({problem})")
            else:
                found.append(Path(root, name))
    if problems:
        raise InputError(
            f"holds {len(problems):,} {'entry' if len(problems) == 1 else 'entries'} that cannot "
            f"be read: {_first(problems, '; ')}.", path=folder,
            fix="make them readable (regular files and folders you may open), move them out of "
            "the folder, or name the files to read one by one.",
        )
    return sorted(found)  # paths sort part by part: "a/z.md" before "a.txt"


def _first(items, separator: str, shown: int = 10) -> str:
    """The first `shown` of `items` joined, then how many more there are."""
    more = f"{separator}and {len(items) - shown:,} more" if len(items) > shown else ""
    return separator.join(map(str, items[:shown])) + more


def _inside(folder: Path, path) -> str:
    return Path(path).relative_to(folder).as_posix()


def _unreadable(path: Path) -> str | None:
    """Why `path` cannot be read as a text file, or None when it is a readable regular file."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "a link to something missing"
    except OSError as error:
        return error.strerror or str(error)
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file but a pipe, socket or device"
    return None if os.access(path, os.R_OK) else "permission denied"


def _file_texts(file: Path, name: str, per_file: bool, column: str | None, encoding,
                columns: list | None = None):
    """Yield (id, stripped text, unit) for every candidate document of one file; a table's
    (name, column read, text columns) is appended to `columns`."""
    suffix = file.suffix.lower()
    if suffix in TABLE_SEPARATORS:
        frame, _ = read_table(file, encoding)
        if frame.empty:
            return
        column = document_column(frame, file, column)
        if columns is not None:
            columns.append((name, str(column), tuple(map(str, _text_columns(frame)))))
        for row, text in enumerate(frame[column]):
            yield f"{name}:row {row + 1}", text.strip(), "row"
    elif suffix in TEXT_SUFFIXES:
        text = read_text_file(file, encoding)
        if per_file:
            yield name, text.strip(), "file"
        else:
            lines = text.split("\n")
            if lines[-1] == "":  # the newline that ends the last line starts no new one
                lines.pop()
            for number, line in enumerate(lines, start=1):
                yield f"{name}:{number}", line.strip(), "line"
    else:
        raise InputError(
            f"has an unsupported extension {suffix or '(none)'!r}; corpora are read from "
            f"{', '.join(TEXT_SUFFIXES + tuple(TABLE_SEPARATORS))} files or folders.",
            path=file, fix="save the texts as .txt with one text per line.",
        )


def document_column(frame: pd.DataFrame, path: Path, column: str | None) -> str:
    """The text column of a document table: `column`, else a known name, else the only text column."""
    if column is not None:
        return find_column(frame, column, path, "--column")
    keys = columns_by_key(frame)
    found = next((keys[n] for n in _DOCUMENT_NAMES if n in keys), None)
    candidates = _text_columns(frame)
    if found is None and len(candidates) == 1:
        found = candidates[0]
    if found is None:
        raise InputError(
            f"has no obvious text column; its columns are {_names(frame.columns)}.",
            path=path, fix="name the column that holds the texts with --column COL.",
        )
    return found
