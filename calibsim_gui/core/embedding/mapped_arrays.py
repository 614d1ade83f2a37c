"""Named arrays in one cache file that is read by mapping it into memory, each with a CRC-32.

`np.load` of an ``.npz`` reads every array whole (and checks the zip's CRC); a large model of
which a run touches a few rows is read faster by mapping the file and checking CRCs, which
reads each page once without copying it. The file is a sequence of ``.npy`` records: first a
JSON manifest (names, CRC-32 of each array's bytes, a tag naming what wrote it), then the arrays
in the manifest's order.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from calibsim_gui.core.io.atomic import atomic_path

_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _crc(array: np.ndarray) -> int:
    return zlib.crc32(memoryview(np.ascontiguousarray(array)).cast("B"))


def write_arrays(path: Path, arrays: dict[str, np.ndarray], *, tag: str) -> None:
    """Write `arrays` to `path` atomically (an OSError or WriteError passes to the caller)."""
    arrays = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
    manifest = {"tag": tag, "names": list(arrays), "crc32": [_crc(a) for a in arrays.values()]}
    with atomic_path(path) as tmp, open(tmp, "wb") as out:
        np.lib.format.write_array(out, np.frombuffer(json.dumps(manifest).encode("utf-8"), dtype=np.uint8),
                                  allow_pickle=False)
        for array in arrays.values():
            np.lib.format.write_array(out, array, allow_pickle=False)


def read_arrays(path: Path, *, tag: str) -> dict[str, np.ndarray] | None:
    """The arrays of `path`, read-only and mapped from the file; None when there is no file, it
    was written with another `tag`, or any array fails its CRC (a damaged copy)."""
    arrays = {}
    try:
        with open(path, "rb") as source:
            manifest = json.loads(np.lib.format.read_array(source, allow_pickle=False).tobytes())
            if manifest.get("tag") != tag:
                return None
            for name, crc in zip(manifest["names"], manifest["crc32"], strict=True):
                header = _HEADERS[np.lib.format.read_magic(source)]
                shape, fortran, dtype = header(source)
                if dtype.hasobject:
                    return None
                offset = source.tell()
                array = (np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape,
                                   order="F" if fortran else "C").view(np.ndarray)
                         if dtype.itemsize and np.prod(shape) else np.empty(shape, dtype=dtype))
                if _crc(array) != crc:
                    return None
                arrays[name] = array
                source.seek(offset + array.nbytes)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, EOFError):
        return None
    return arrays
