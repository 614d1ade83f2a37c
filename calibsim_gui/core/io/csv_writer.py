"""CSV/TSV tables written byte for byte as pandas writes them, texts of millions of characters
streamed in pieces.

pandas' writer turns each text into a Python string and the csv module builds each row in a
buffer of 4 bytes per character, so one 45 MB text held about 400 MB while it was written. Here
a text longer than `LONG_TEXT` characters is left out of the rows pandas writes (a marker stands
in for it) and written after them in pieces of `PIECE` characters, quoted as the csv module
quotes it; the rest of the table goes through pandas as before. A `ColumnTable` (a small file
read without pandas, `light_tables`) is written by the csv module alone.
"""

from __future__ import annotations

import codecs
import csv
import io
import math
import secrets

LONG_TEXT = 1 << 20
"""Characters: a text cell longer than this is written in pieces."""
PIECE = 1 << 20
"""Characters (bytes, for text pandas holds in Arrow) of a long text held at once."""


def write_csv(frame, handle, *, sep: str, lineterminator: str, index: bool, float_format: str) -> None:
    """``frame.to_csv(handle, ...)`` with these options, holding at most `PIECE` characters of
    any long text as a Python string; `handle` is a text file opened with ``newline=""``.
    A `ColumnTable` (index False) is written by the csv module alone, in the same bytes."""
    if isinstance(frame, ColumnTable):
        writer = csv.writer(handle, delimiter=sep, lineterminator=lineterminator)
        writer.writerow(frame.columns)
        writer.writerows(zip(*(_cells(values, float_format) for _, values in frame.items)))
        return
    options = {"sep": sep, "lineterminator": lineterminator, "index": index, "float_format": float_format}
    long = _long_cells(frame)
    if not long:
        frame.to_csv(handle, **options)
        return
    start = 0
    for row in sorted(long):
        if row > start:
            frame.iloc[start:row].to_csv(handle, header=start == 0, **options)
        marker = f"calibsim{secrets.token_hex(12)}"     # letters and digits: never quoted
        line = frame.iloc[row:row + 1].copy()
        for column in long[row]:
            line.isetitem(column, [marker])
        parts = line.to_csv(None, header=row == 0, **options).split(marker)
        for part, column in zip(parts, long[row]):
            handle.write(part)
            _write_text(handle, frame.iloc[:, column], row, sep=sep, lineterminator=lineterminator)
        handle.write(parts[-1])
        start = row + 1
    if start < len(frame):
        frame.iloc[start:].to_csv(handle, header=False, **options)


class ColumnTable:
    """An all-string table, then score columns, without pandas: (name, values) in column order;
    `ScoredPairs.frame` of a file read by `light_pair_table`."""

    def __init__(self, items: list[tuple[str, object]]):
        self.items = items

    @property
    def columns(self) -> list[str]:
        return [name for name, _ in self.items]

    def __len__(self) -> int:
        return len(self.items[0][1]) if self.items else 0

    def __getitem__(self, name: str):
        return next(values for column, values in self.items if column == name)


def number_column(values) -> bool:
    """Whether a `ColumnTable` column holds numbers (a float array), not texts."""
    return getattr(values, "dtype", None) is not None and values.dtype.kind == "f"


def _cells(values, float_format: str) -> list:
    """A `ColumnTable` column's cells as pandas writes them: floats in `float_format`, NaN empty."""
    if number_column(values):
        return ["" if math.isnan(v) else float_format % v for v in values.tolist()]
    return list(values)


def _long_cells(frame) -> dict[int, list[int]]:
    """{row position: positions of its columns holding a text longer than `LONG_TEXT`}."""
    import numpy as np
    import pandas as pd

    cells: dict[int, list[int]] = {}
    for column in range(frame.shape[1]):
        values = frame.iloc[:, column]
        if isinstance(values.dtype, pd.StringDtype):      # counted without making Python strings
            rows = np.flatnonzero((values.str.len() > LONG_TEXT).fillna(False).to_numpy(dtype=bool))
        elif values.dtype == object:
            rows = [i for i, v in enumerate(values) if isinstance(v, str) and len(v) > LONG_TEXT]
        else:
            continue
        for row in rows:
            cells.setdefault(int(row), []).append(column)
    return cells


def _write_text(handle, values, row: int, *, sep: str, lineterminator: str) -> None:
    """Cell `row` of `values` as the csv module writes it: quoted when any of its characters
    needs it, its quotes doubled."""
    def line(piece: str, quoting: int) -> str:
        out = io.StringIO()
        csv.writer(out, delimiter=sep, lineterminator=lineterminator, quoting=quoting).writerow([piece])
        return out.getvalue()

    quoted = any(line(p, csv.QUOTE_MINIMAL) != p + lineterminator for p in _pieces(values, row))
    if quoted:
        handle.write('"')
    for piece in _pieces(values, row):
        handle.write(line(piece, csv.QUOTE_ALL)[1:-1 - len(lineterminator)] if quoted else piece)
    if quoted:
        handle.write('"')


def _pieces(values, row: int):
    """Cell `row` of `values` in non-empty pieces of about `PIECE` characters; a text pandas holds
    in Arrow is decoded piece by piece from its UTF-8 bytes, never whole."""
    import pandas as pd

    if isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        cell = pa.array(values.array).slice(row, 1).cast(pa.large_binary())    # no copy of the text
        size = pc.binary_length(cell)[0].as_py()
        decoder = codecs.getincrementaldecoder("utf-8")()
        pieces = (decoder.decode(pc.binary_slice(cell, i, i + PIECE)[0].as_py(), final=i + PIECE >= size)
                  for i in range(0, size, PIECE))
    else:
        text = values.iloc[row]
        pieces = (text[i:i + PIECE] for i in range(0, len(text), PIECE))
    yield from filter(None, pieces)
