"""Read text files and tables (CSV, TSV, JSON Lines) safely: encodings, binary files, sizes.

Every problem becomes an `InputError` that names the file, the line when known, and the fix.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.files import check_file_size, read_user_bytes

if TYPE_CHECKING:
    import pandas as pd

MAX_TEXT_BYTES = 512 * 1024**2
"""Largest text file we read (bytes); bigger files are refused before reading."""
_TEXT_FILE = "text file"
MAX_TABLE_COLUMNS = 1000
"""Most columns a table may have (a pairs file needs two or three); a wider one is refused from
its header line, before parsing: pandas took over 600 s on a 0.9 MB CSV of 100,000 columns."""

_BOMS = (  # UTF-32 first: its little-endian BOM starts with the UTF-16 one
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"%PDF-": "a PDF document",
    b"PK\x03\x04": "a ZIP archive (Excel .xlsx and Word .docx files are ZIP archives)",
    b"PK\x05\x06": "a ZIP archive",
    b"\x1f\x8b": "a gzip archive",
    b"SQLite format 3\x00": "an SQLite database",
}
_SNIFF_BYTES = 8192
DECODE_PIECE = 1 << 21            # bytes decoded per call (`_decode`)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

TABLE_SEPARATORS = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".jsonl": None, ".ndjson": None}
TEXT_SUFFIXES = (".txt", ".md")


def read_text_file(path, encoding: str | None = None) -> str:
    """Return the whole text of `path` with newlines normalised to ``\\n``.

    With ``encoding=None`` the file must be UTF-8 (with or without BOM) or UTF-16/32 with
    a BOM. Binary files and files over `MAX_TEXT_BYTES` are refused.
    """
    path = Path(path)
    data = _read_bytes(path)
    bom_encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), None)
    if bom_encoding is None and not _is_wide(encoding):
        _refuse_binary(path, data[:_SNIFF_BYTES])
        _refuse_nul(path, data.find(b"\x00"), data)        # anywhere in the file, not just its head
    try:
        text = _decode(data, encoding or bom_encoding or "utf-8")
    except LookupError:
        raise InputError(
            f"{encoding!r} is not an encoding Python knows.",
            path=path, fix="use a name such as utf-8, cp1252, latin-1 or utf-16.",
        ) from None
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        bad = data[error.start : error.start + 1].hex()
        if encoding:
            raise InputError(
                f"cannot be decoded as {encoding} (byte 0x{bad}).", path=path, line=line,
                fix="pass the encoding the file was saved with, or leave out --encoding "
                "to read it as UTF-8.",
            ) from None
        raise InputError(
            f"is not valid UTF-8 (byte 0x{bad}); it was probably saved in a legacy encoding.",
            path=path, line=line,
            fix="if it came from Excel or Windows, add --encoding cp1252 "
            "(or --encoding latin-1), or re-save it as UTF-8.",
        ) from None
    _refuse_nul(path, text.find("\x00"), text)               # a wide encoding's U+0000
    return text.removeprefix("\ufeff")


def _decode(data: bytes, encoding: str) -> str:
    """`data` decoded, newlines normalised to ``\\n``, `DECODE_PIECE` bytes at a time.

    Each piece is a short call under the interpreter lock: decoding and normalising a 64 MB file
    in whole-text calls held it up to 181 ms at once (37-41 ms now), and the window, which needs
    the lock for each of its ticks, waited as long (#44). A decoding error is raised as decoding
    the whole file raises it, its position counted from the file's start.
    """
    decoder = codecs.getincrementaldecoder(encoding)()
    view, pieces, carried = memoryview(data), [], ""
    try:
        for start in range(0, len(data) or 1, DECODE_PIECE):
            last = start + DECODE_PIECE >= len(data)
            piece = carried + decoder.decode(view[start:start + DECODE_PIECE], final=last)
            carried = "\r" if piece.endswith("\r") and not last else ""     # may be half of a \r\n
            pieces.append(piece[:len(piece) - len(carried)].replace("\r\n", "\n").replace("\r", "\n"))
    except UnicodeDecodeError:
        data.decode(encoding)
        raise
    return "".join(pieces)


def _refuse_nul(path: Path, at: int, content) -> None:
    """A NUL character (at index `at` of `content`, -1: none) is no text: refuse, naming its line."""
    if at >= 0:
        newline = b"\n" if isinstance(content, bytes) else "\n"
        raise InputError("holds a NUL character, so it is binary data, not text.", path=path,
                         line=content.count(newline, 0, at) + 1,
                         fix="export the texts again as UTF-8 .txt, .csv or .jsonl")


def _read_bytes(path: Path) -> bytes:
    return read_user_bytes(path, limit=MAX_TEXT_BYTES, what=_TEXT_FILE)


def text_file_size(path: Path) -> int:
    """Size of the text file `path`, refused (before reading) over `MAX_TEXT_BYTES`."""
    return check_file_size(path, limit=MAX_TEXT_BYTES, what=_TEXT_FILE)


def _is_wide(encoding: str | None) -> bool:
    """True for UTF-16/32 encodings, whose text legitimately contains NUL bytes."""
    if encoding is None:
        return False
    try:
        return codecs.lookup(encoding).name.startswith(("utf-16", "utf-32"))
    except LookupError:
        return False


def _refuse_binary(path: Path, head: bytes) -> None:
    kind = next((kind for magic, kind in _MAGIC.items() if head.startswith(magic)), None)
    if kind is None and b"\x00" in head:
        kind = "binary data (it contains NUL bytes)"
    if kind is not None:
        raise InputError(
            f"looks like a binary file, not text: {kind}.", path=path,
            fix="export the texts as UTF-8 .txt, .csv or .jsonl (for a spreadsheet: "
            "Save As > CSV UTF-8); UTF-16 text without a BOM needs --encoding utf-16-le.",
        )


def check_text_source(path, encoding: str | None = None, *, block: int = 1 << 20) -> None:
    """The checks `read_text_file` (and `read_table`'s header) make, streamed in `block`-byte
    blocks so that a corpus read elsewhere (on Ray) is never held here whole: a regular file
    within `MAX_TEXT_BYTES`, no binary signature or NUL byte (unless UTF-16/32), and for a CSV
    or TSV at most `MAX_TABLE_COLUMNS` columns in its header line. InputError as those give."""
    path = Path(path)
    text_file_size(path)                             # a FIFO or device is refused unopened
    line, header, wide = 1, b"", _is_wide(encoding)
    table = bool(TABLE_SEPARATORS.get(path.suffix.lower()))
    with open(path, "rb") as f:
        head = f.read(block)
        wide = wide or any(head.startswith(bom) for bom, _ in _BOMS if bom != b"\xef\xbb\xbf")
        if not wide:
            _refuse_binary(path, head[:_SNIFF_BYTES])
        data = head
        while data:
            if not wide and (at := data.find(b"\x00")) >= 0:
                before = b"\n" * (line - 1) + data[:at]          # for the line number only
                _refuse_nul(path, len(before), before)
            if table and not header.endswith(b"\n") and len(header) < 64 * block:
                header += data[:data.find(b"\n") + 1] if b"\n" in data else data
            line += data.count(b"\n")
            data = f.read(block)
    if table and not wide:
        first = header.decode(encoding or "utf-8", errors="replace").removeprefix("\ufeff").rstrip("\r\n")
        sep = table_separator(path.suffix.lower(), first)
        _check_columns(path, len(next(csv.reader([first], delimiter=sep), [])))


# --------------------------------------------------------------------------- tables


def read_table(path, encoding: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Read a CSV/TSV/JSONL file with a header into an all-string frame; return it and notes."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SEPARATORS:
        raise InputError(
            f"has an unsupported extension {suffix or '(none)'!r}; tables must be "
            f"{', '.join(TABLE_SEPARATORS)}.", path=path,
            fix="save the pairs as .csv (with a header line) or .jsonl.",
        )
    text = read_text_file(path, encoding)
    if TABLE_SEPARATORS[suffix] is None:
        return _parse_jsonl(path, text), []
    end = text.find("\n")
    header = text if end < 0 else text[:end]
    sep = table_separator(suffix, header)
    _check_columns(path, len(next(csv.reader([header], delimiter=sep), [])))
    try:
        frame = _parse_delimited(path, text, sep, csv.QUOTE_MINIMAL)
        if sep != "\t" or not _swallowed_lines(frame):
            return frame, []
    except InputError:
        if sep != "\t":
            raise
    # Tab-separated data sets (STS-B, GLUE) often hold stray quotes that are plain text.
    frame = _parse_delimited(path, text, sep, csv.QUOTE_NONE)
    return frame, ["quote characters are read as plain text (the file is not quoted CSV-style)"]


def table_separator(suffix: str, header: str) -> str:
    """The separator of a CSV/TSV table (`suffix`) with this header line: a .csv whose header has
    no comma is read by the tab or semicolon it has."""
    sep = TABLE_SEPARATORS[suffix]
    if sep == "," and "," not in header:
        sep = "\t" if "\t" in header else ";" if ";" in header else ","
    return sep


def _check_columns(path: Path, count: int) -> None:
    if count > MAX_TABLE_COLUMNS:
        raise InputError(f"has {count:,} columns, more than the {MAX_TABLE_COLUMNS:,} calibsim reads from "
                         "a table.", path=path, line=1,
                         fix="save only the text columns (and a score column) as a new file")


def _swallowed_lines(frame: pd.DataFrame) -> bool:
    """True if a field holds a tab and a newline: a stray quote ate whole lines of a TSV."""
    return any(
        (frame[c].str.contains("\t", regex=False) & frame[c].str.contains("\n", regex=False)).any()
        for c in frame.columns
    )


def _parse_delimited(path: Path, text: str, sep: str, quoting: int) -> pd.DataFrame:
    import pandas as pd  # ~0.6 s: imported when a table is first read, not at start-up

    options = dict(sep=sep, header=None, dtype=str, keep_default_na=False, quoting=quoting)
    try:
        raw = pd.read_csv(io.StringIO(text), **options).fillna("")  # short rows: empty
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    except pd.errors.ParserError as error:
        message = str(error)
        if "out of memory" in message:         # pandas' C parser could not allocate: not the file's fault
            raise MemoryError(message) from error
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", message)
        if found:
            expected, record, saw = map(int, found.groups())
            raise InputError(
                f"has {saw} fields where the header line has {expected}.",
                path=path, line=_line_of_record(text, record, options),
                fix="quote fields that contain the separator "
                f"{'a tab' if sep == chr(9) else repr(sep)}, or remove the extra one.",
            ) from None
        found = re.search(r"EOF inside string starting at row (\d+)", message)
        line = _line_of_record(text, int(found.group(1)) + 1, options) if found else None
        raise InputError(
            "has a quoted field that is never closed.", path=path, line=line,
            fix='close the quote, or double a quote that belongs to the text ("").',
        ) from None
    names = [name if name.strip() else f"column {i + 1}" for i, name in enumerate(raw.iloc[0])]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(
            f"has more than one column named {', '.join(map(repr, repeated))}.",
            path=path, line=1, fix="rename the columns in the header line so each name is unique.",
        )
    frame = raw.iloc[1:].reset_index(drop=True)
    frame.columns = names
    return frame


def _line_of_record(text: str, record: int, options: dict) -> int | None:
    """Physical line where pandas' 1-based `record` starts (quoted newlines move it down).

    None when the records before it cannot be re-read (the message then names no line).
    """
    import pandas as pd  # ~0.6 s: imported when a table is first read, not at start-up

    if record <= 1:
        return record
    try:
        before = pd.read_csv(io.StringIO(text), **options, nrows=record - 1, skip_blank_lines=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    return record + int(sum(before[c].fillna("").str.count("\n").sum() for c in before.columns))


def _parse_jsonl(path: Path, text: str) -> pd.DataFrame:
    import pandas as pd  # ~0.6 s: imported when a table is first read, not at start-up

    records = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(
                f"is not valid JSON ({error.msg} at column {error.colno}).", path=path,
                line=number, fix="each line must hold one JSON object, "
                'e.g. {"sentence1": "...", "sentence2": "...", "score": 4.2}.',
            ) from None
        except (ValueError, RecursionError) as error:  # a 5000-digit number, 10^5 nested arrays
            raise InputError(
                f"cannot be read as JSON ({error}).", path=path, line=number,
                fix='each line must hold one flat JSON object of texts and numbers, '
                'e.g. {"sentence1": "...", "sentence2": "...", "score": 4.2}.',
            ) from None
        if not isinstance(record, dict):
            raise InputError(
                f"holds a JSON {type(record).__name__}, not an object.", path=path, line=number,
                fix='each line must hold one JSON object, e.g. {"sentence1": "...", '
                '"sentence2": "..."}; a JSON array file must be converted to one object a line.',
            )
        if _SURROGATE_ESCAPE.search(line) and not _encodable(record):
            raise InputError(
                "holds a \\uD800-\\uDFFF escape that is half of a character (a text cut in the "
                "middle of an emoji?).", path=path, line=number,
                fix="repair or remove that escape; valid text never holds half a character.",
            )
        records.append(record)
    columns = list(dict.fromkeys(key for record in records for key in record))
    _check_columns(path, len(columns))
    rows = [[_json_cell(record.get(key)) for key in columns] for record in records]
    return pd.DataFrame(rows, columns=columns, dtype=str)


def _encodable(record: dict) -> bool:
    """False if a decoded JSON value holds a lone surrogate (no file or model can take it)."""
    try:
        json.dumps(record, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_cell(value) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
